"""The checkers of the models in ``mcp_inflight.model``: explorers, provers, and the one result.

* One entry point to explore every model, ``explorer.py:explore``, and one to prove it,
  ``prove.py:prove``; each takes a declared model's ``Spec`` or the session's ``Config``.
* The declared models (``model/declare.py``: lease, rounds, resume, tasks, subscriptions, and the
  session read as a declaration): ``declared.py`` is the front door; ``explorer.py`` the one
  explorer (breadth first, shortest traces, coverage, dead actions, liveness under declared
  fairness), on the rules generated as C (``native_spec.py``) or Python (``compiled_spec.py``)
  or read concretely (``stepping.py``); ``induction.py`` the one z3 induction prover (Houdini,
  typedness proved) on ``universe.py``'s readings, the session's induction included.
* The session model (``model/session.py``) is explored on its declaration
  (``model/session_spec.py``) and read back as its run record (``session_run.py``); around the
  one induction it keeps its bounded search for traces (``bmc.py``), vacuity checks
  (``prove.py``) and ranking argument (``ranking.py``).
* Around both: ``outcome.py`` (every checker's records as cells with one verdict vocabulary),
  ``sensitivity.py``, ``discipline.py``, ``declared_symmetry.py``, ``cache.py``, ``pool.py``,
  ``progress.py``, ``native_build.py``.

They read the rules of ``model/`` and define none; they import nothing of the runtime.
"""
