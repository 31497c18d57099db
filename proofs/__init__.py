"""The checkers of the models in ``mcp_inflight.model``: explorers, provers, and the one result.

* The declared models (``model/declare.py``: lease, rounds, resume, tasks, subscriptions, and the
  session read as a declaration): ``declared.py`` is the front door; ``explorer.py`` the one
  explorer (breadth first, shortest traces, coverage, dead actions, liveness under declared
  fairness), on the rules generated as Python (``compiled_spec.py``) or read concretely
  (``stepping.py``); ``induction.py`` the one z3 prover (Houdini, typedness proved).
* The session model (``model/session.py``) keeps its own engines, compared with the one explorer
  (``tests/test_session_spec.py``): ``explore.py`` with ``compiled_model.py`` and ``native.py``
  (symmetry reduction over ``flat.py``'s keys, liveness on the graph in ``liveness.py``), and the
  prover for any number of ids and instances, ``prove.py`` with ``bmc.py`` and ``ranking.py``.
* Around both: ``outcome.py`` (every checker's records as cells with one verdict vocabulary),
  ``sensitivity.py``, ``discipline.py``, ``symmetry.py``, ``cache.py``, ``pool.py``,
  ``progress.py``.

They read the rules of ``model/`` and define none; they import nothing of the runtime.
"""
