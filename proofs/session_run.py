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

from .explored import NOTHING, TOO_MANY, Explored
from .records import RunResult, Verdict

#: the session's engine names (``check --engine``) as the one explorer's
ENGINES = {"auto": "fastest", "native": "native", "compiled": "compiled", "interpreted": "concrete"}


def _trace(cfg: Config, steps: list[dict[str, Any]]) -> Trace:
    """JSON steps of the declaration (``{"action", "args": {"r", "i"}}``) as the session's
    trace: the same moves taken by the session's step from its initial state."""
    moves = [(st["action"], st["args"]["r"], st["args"].get("i")) for st in steps]
    return build_trace(cfg, [(t.action, t.args, t.pre, t.post) for t in run_of(cfg, moves)])


#: the run-level property a symmetry cell of ``check`` reports on
SYMMETRY = "symmetric_in_ids_and_instances"


def reducible(told: str) -> bool:
    """Whether a run may keep one state per orbit after the check that said ``told``: it
    passed, or there is nothing to rename."""
    return told.startswith("reduced: ") or told.endswith(NOTHING)


def symmetry_cell(cfg: Config, told: str) -> Any:
    """The run-level cell of ``check`` for one configuration's symmetry check."""
    from .outcome import Cell, Word

    why = told.partition(": ")[2]
    if reducible(told):
        msg = f"the rules and properties commute with renaming: {why}"
        return Cell("session", cfg.design.name, cfg.label, SYMMETRY, None, Word.HOLDS, True, msg)
    msg = f"{why}; explored and searched without the reduction"
    return Cell(
        "session", cfg.design.name, cfg.label, SYMMETRY, None, Word.FAILS, False, msg, [f"  {msg}"]
    )


def run_result(cfg: Config, ex: Explored, symmetry: bool, liveness: bool = True) -> RunResult:
    """``ex``, the one explorer's run of ``spec(cfg)`` (``spec(cfg, liveness)``), as the
    session's run record.  The explorer's errors (a value out of its declared range, a reduced
    trace that does not replay) are the record's; the one that says the search stopped at
    ``max_states`` is its ``complete``."""
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
        errors=[e for e in ex.errors if not e.endswith(TOO_MANY)],
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
    for name in NAMES if liveness else ():
        fair = fair_actions(name, cfg)
        if not ex.complete:
            doc = DOCS[name] + " (not judged: the search stopped at --max-states)"
            res.verdicts.append(Verdict(name, "liveness", False, True, None, doc, fair=fair))
            continue
        if ex.verdicts[name] == "holds":
            res.verdicts.append(Verdict(name, "liveness", True, True, None, DOCS[name], fair=fair))
            continue
        prefix, loop = ex.traces[name], ex.loops.get(name, [])
        doc = DOCS[name]
        if name in ex.away:  # settles, no_deadlock: how many states fail them
            doc += f" ({ex.away[name]:,} of {ex.states:,} states)"
        res.verdicts.append(
            Verdict(
                name,
                "liveness",
                True,
                False,
                _trace(cfg, prefix + loop),
                doc,
                loop_start=len(prefix),
                fair=fair,
            )
        )
    return res
