"""The one explorer's run of the session declaration, read as the session's run record.

``explore(spec(cfg))`` (``model/session_spec.py``, ``proofs/explorer.py``) finds the session's
states, transitions, coverage and verdicts in the one explorer's record (:class:`Explored`:
verdict words, traces as JSON steps, a lasso's loop apart).  :func:`run_result` reads it as the
session's :class:`~.records.RunResult`, the record the session's report, diagrams and page
read: every property of ``model/properties.py`` with whether it applies to the profile, each
trace rebuilt as a run of the session's own step (``model/step.py:run_of``, so a trace the
session's rules do not take stops here with ``ValueError``) and told by ``model/trace.py``, and
the three liveness properties with their fairness and the step where a lasso's loop starts.
"""

from __future__ import annotations

from typing import Any

from mcp_inflight.model.config import Config
from mcp_inflight.model.eventually import DOCS, NAMES, fair_actions
from mcp_inflight.model.properties import PROPERTIES
from mcp_inflight.model.step import run_of
from mcp_inflight.model.trace import Trace, build_trace

from .explored import Explored
from .records import RunResult, Verdict


def _trace(cfg: Config, steps: list[dict[str, Any]]) -> Trace:
    """JSON steps of the declaration (``{"action", "args": {"r", "i"}}``) as the session's
    trace: the same moves taken by the session's step from its initial state."""
    moves = [(st["action"], st["args"]["r"], st["args"].get("i")) for st in steps]
    return build_trace(cfg, [(t.action, t.args, t.pre, t.post) for t in run_of(cfg, moves)])


def run_result(cfg: Config, ex: Explored, symmetry: bool) -> RunResult:
    """``ex``, the one explorer's run of ``spec(cfg)``, as the session's run record."""
    res = RunResult(
        cfg,
        symmetry,
        states=ex.states,
        transitions=ex.transitions,
        depth=ex.depth,
        seconds=ex.seconds,
        complete=ex.complete,
        coverage=dict(ex.coverage),
        deadlocks=ex.deadlocks,
        engine=ex.engine,
    )
    if ex.deadlock_trace is not None:
        res.deadlock_trace = _trace(cfg, ex.deadlock_trace)
    for p in PROPERTIES:
        applies = p.applies(cfg)
        word = ex.verdicts.get(p.name) if applies else None
        ok = (word == "reached") if p.kind == "witness" else (word == "holds")
        steps = ex.traces.get(p.name) if applies else None
        res.verdicts.append(
            Verdict(
                p.name,
                p.kind,
                applies,
                ok if applies else True,
                None if steps is None else _trace(cfg, steps),
                p.doc,
                through=p.through,
            )
        )
    for name in NAMES:
        fair = fair_actions(name, cfg)
        if not ex.complete:
            doc = DOCS[name] + " (not judged: the search stopped at --max-states)"
            res.verdicts.append(Verdict(name, "liveness", False, True, None, doc, fair=fair))
            continue
        if ex.verdicts[name] == "holds":
            res.verdicts.append(Verdict(name, "liveness", True, True, None, DOCS[name], fair=fair))
            continue
        prefix, loop = ex.traces[name], ex.loops.get(name, [])
        res.verdicts.append(
            Verdict(
                name,
                "liveness",
                True,
                False,
                _trace(cfg, prefix + loop),
                DOCS[name],
                loop_start=len(prefix),
                fair=fair,
            )
        )
    return res
