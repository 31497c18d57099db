"""The checkers of the models in ``mcp_inflight.model``: explorers, provers, and the one result.

* One entry point to explore every model, ``explorer.py:explore``, and one to prove it,
  ``prove.py:prove``; each takes a declared model's ``Spec`` or the session's ``Config``.
* The declared models (``model/declare.py``: lease, rounds, resume, tasks, subscriptions, and the
  session read as a declaration): ``declared.py`` is the front door; ``explorer.py`` the one
  explorer (breadth first, shortest traces, coverage, dead actions, liveness under declared
  fairness), on the rules generated as C (``native_spec.py``) or Python (``compiled_spec.py``)
  or read concretely (``stepping.py``); ``induction.py`` the one z3 induction prover (Houdini,
  typedness proved) on ``universe.py``'s readings, the session's induction included.
* The session model (``model/session.py``) keeps its own search engines, compared with the one
  explorer (``tests/test_session_spec.py``): ``session_search.py`` with ``compiled_model.py``
  and ``native.py`` (symmetry reduction over every instance by ``flat.py``'s keys, liveness on
  the graph in ``liveness.py``), and around the one induction its bounded search for traces
  (``bmc.py``), vacuity checks (``prove.py``) and ranking argument (``ranking.py``).
* Around both: ``outcome.py`` (every checker's records as cells with one verdict vocabulary),
  ``sensitivity.py``, ``discipline.py``, ``symmetry.py``, ``cache.py``, ``pool.py``,
  ``progress.py``.

They read the rules of ``model/`` and define none; they import nothing of the runtime.
"""
