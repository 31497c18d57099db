"""The two checkers of the model in ``mcp_inflight.model``: the exhaustive explorer and the z3 prover.

* ``explore.py``: explicit-state, breadth-first search of every reachable state at a bound
  (shortest counterexamples, symmetry reduction, coverage, deadlocks); its compiled engine is
  ``compiled_model.py`` over the flat states and symmetry keys of ``flat.py``.
* ``prove.py``: inductive proofs for any number of ids and instances, counterexamples to
  induction, bounded model checking; its z3 reading of the model is ``symbolic.py``.
* ``pool.py``: the worker processes both use for many runs.

Both read the rules of ``model/`` and define none; they import nothing of the runtime.
"""
