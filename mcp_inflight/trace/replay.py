"""``mcp-inflight replay TRACE``: check a recorded wire trace against the model.

The trace (:mod:`mcp_inflight.trace.format`) is mapped onto the model's moves by
``model/observe.py`` (the abstraction is written there, once) and run on the ``atomic`` design
with the model's step function: each step enabled, each output as observed, every invariant
along the run.  Each session of the trace is checked on its own, in parts cut where it is at
rest on the wire (``observe_check.segments``).  On a violation the first
unexplained step (or the first broken invariant) is reported with the run up to it, as text,
JSON (``--json``) and a sequence diagram (``--diagram FILE``: Mermaid for ``.mmd``, Graphviz
DOT for ``.dot``, SVG for ``.svg``), and the designs that do explain the trace are named.
Exit 0 clean, 1 violation, 2 unreadable trace (with its line number).  Traces of stdio (``serve
--transport stdio --trace``) are checked on the model's 2025-11-25 stdio profile, and tool calls
of no session (2026-07-28 Streamable HTTP) POST by POST on its 2026-07-28 http profile.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

from ..model.observe import Abstraction, abstract, stateless
from ..model.observe_check import Verdict, check, check_stateless, check_trace, explains
from ..model.trace import build_trace
from .format import TraceError, read
from .scope import within


def sessions(events: list[dict[str, Any]]) -> dict[str | None, list[int]]:
    """The indices of each session's events, in trace order.  The events of a POST sent before
    its session existed (``initialize``) belong to the session its answer names; events of no
    session at all (2026-07-28 traffic) are grouped under None."""
    named: dict[Any, str] = {}
    for ev in events:
        if ev.get("session") is not None:
            named.setdefault(ev["exchange"], ev["session"])
    out: dict[str | None, list[int]] = {}
    for n, ev in enumerate(events):
        sid = ev.get("session")
        if sid is None and ev["exchange"] not in ("GET", "DELETE"):
            sid = named.get(ev["exchange"])
        out.setdefault(sid, []).append(n)
    return out


def _steps(v: Verdict) -> list[dict[str, Any]]:
    tr = build_trace(v.cfg, [(t.action, t.args, t.pre, t.post) for t in v.run])
    return [dict(st.to_json(), inferred=inf) for st, inf in zip(tr, v.inferred, strict=True)]


def behaves_like(v: Verdict, others: list[Verdict]) -> str | None:
    """The design the observed server behaves like: ``atomic`` when the trace is clean, else
    the first other design that explains it and keeps every invariant, else the first that
    explains it (breaking an invariant), else None."""
    if v.clean:
        return v.cfg.design.name
    for o in others:
        if o.clean:
            return o.cfg.design.name
    return others[0].cfg.design.name if others else None


def report(
    ab: Abstraction, v: Verdict, others: list[Verdict], session: str | None = None
) -> dict[str, Any]:
    """The JSON shape of a replay's outcome (of one session)."""
    out: dict[str, Any] = {
        "clean": v.clean,
        "session": session,
        "design": v.cfg.design.name,
        "profile": f"{v.cfg.revision} {v.cfg.transport}",
        "ids": v.cfg.ids,
        "requests": v.cfg.requests,
        "observed": len(ab.steps),
        "explained": v.explained,
        "unexplained": None
        if v.failed is None
        else {"event": v.failed.at, "kind": v.failed.kind, "what": v.failed.describe()},
        "broken": None if v.broken is None else {"invariant": v.broken, "step": v.broken_at},
        "trace": _steps(v),
        "explained_by": [
            {"design": o.cfg.design.name, "broken": o.broken, "step": o.broken_at} for o in others
        ],
        "behaves_like": behaves_like(v, others),
    }
    return out


def text(rep: dict[str, Any], v: Verdict) -> str:
    where = "" if rep.get("session") is None else f" session {rep['session']}:"
    lines = [
        f"replay on {rep['design']} ({rep['profile']}, {rep['ids']} ids, "
        f"{rep['requests']} instances):{where} {rep['observed']} observed steps"
    ]
    if rep["clean"]:
        lines.append("clean: every step is a move of the design and every invariant holds")
        return "\n".join(lines)
    if rep["unexplained"]:
        lines.append(
            f"VIOLATION: no move of {rep['design']} explains "
            f"{rep['unexplained']['what']} (0-based event index)"
        )
    else:
        b = rep["broken"]
        lines.append(f"VIOLATION: invariant {b['invariant']} breaks at step {b['step']}")
    lines.append("the run up to it (* = inferred server-internal step):")
    tr = build_trace(v.cfg, [(t.action, t.args, t.pre, t.post) for t in v.run])
    for n, (st, inf) in enumerate(zip(tr, v.inferred, strict=True), 1):
        step = st.lines(n)
        lines.append(("*" if inf else " ") + step[0][1:])
        lines.extend(step[1:])
    for o in rep["explained_by"]:
        extra = f", and breaks {o['broken']} at step {o['step']}" if o["broken"] else ""
        lines.append(f"the trace is a run of the {o['design']} design{extra}")
    if rep["behaves_like"]:
        lines.append(f"the observed server behaves like the {rep['behaves_like']} design")
    elif rep["unexplained"]:
        lines.append("no design of the model explains it")
    return "\n".join(lines)


def diagram(rep: dict[str, Any], v: Verdict, fmt: str) -> str:
    """The run up to the violation as a sequence diagram (``mermaid`` or ``dot``), drawn by
    the counterexamples' renderer (:mod:`mcp_inflight.draw.sequence`)."""
    from ..draw import sequence as seq

    trace = rep["trace"]
    lanes, arrows = seq.arrows(v.cfg, trace) if trace else ([("C", "client"), ("S", "server")], [])
    if rep["unexplained"]:
        name, scope = "replay", "step"
        note = f"next: {rep['unexplained']['what']}; no move of {rep['design']} explains it"
    else:
        name, scope = rep["broken"]["invariant"], "state"
        note = ""
    s = seq.Sequence(v.cfg, name, scope, "invariant", lanes, arrows, trace)
    out = seq.mermaid(s) if fmt == "mermaid" else seq.dot(s)
    if rep["unexplained"]:
        title = f"replayed trace: {rep['unexplained']['what']} is no move of {rep['design']}"
        out = out.replace(s.title, title).replace(seq._breaks_note(s), note)
    return out


DIAGRAM_HELP = (
    "on a violation, write the run up to it as a sequence diagram (.mmd Mermaid, .dot "
    "Graphviz, .svg)"
)


def run(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="mcp-inflight replay", description=__doc__.split("\n\n")[1].replace("\n", " ")
    )
    p.add_argument("trace", help="a JSON Lines trace (mcp-inflight record --out, serve --trace)")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.add_argument("--diagram", metavar="FILE", help=DIAGRAM_HELP)
    p.add_argument(
        "--budget",
        type=float,
        default=BUDGET,
        metavar="SECONDS",
        help=f"give up (exit 2) when the check takes longer (default {BUDGET:g}; 0: no limit)",
    )
    args = p.parse_args(argv)
    if args.budget > 0 and hasattr(signal, "setitimer"):
        signal.signal(signal.SIGALRM, _over_budget)
        signal.setitimer(signal.ITIMER_REAL, args.budget)
    try:
        return _run(args)
    except OverBudget:
        sys.stderr.write(
            f"mcp-inflight replay: {args.trace}: the check took more than its budget of "
            f"{args.budget:g} s (--budget)\n"
        )
        return 2
    except RecursionError:
        sys.stderr.write(f"mcp-inflight replay: {args.trace}: the trace nests too deep\n")
        return 2
    finally:
        if args.budget > 0 and hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)


#: seconds ``replay`` may spend on one trace by default (as the explore page's trace check)
BUDGET = 60.0


class OverBudget(Exception):
    """The check went over ``--budget``."""


def _over_budget(signum: int, frame: object) -> None:
    raise OverBudget()


def _run(args: argparse.Namespace) -> int:
    try:
        events = read(args.trace)
    except TraceError as e:
        sys.stderr.write(f"mcp-inflight replay: {args.trace}: unreadable trace at {e}\n")
        return 2
    except OSError as e:
        sys.stderr.write(f"mcp-inflight replay: {e}\n")
        return 2
    keep = within(events)  # the exchanges the model speaks of (trace/scope.py)
    groups = {
        sid: [keep[n] for n in idx] for sid, idx in sessions([events[n] for n in keep]).items()
    }
    several = len([k for k in groups if k is not None]) > 1
    reps: list[tuple[dict[str, Any], Verdict]] = []
    for sid, idx in groups.items():
        part = [events[n] for n in idx]
        ab, v = (
            check_stateless(part, idx)
            if sid is None and stateless(part)
            else check_trace(part, idx)
        )
        if not ab.steps and several:
            continue
        others = [] if v.clean else explains(ab)
        reps.append((report(ab, v, others, sid if several else None), v))
    if not reps:
        ab = abstract([events[n] for n in keep])
        v = check(ab)
        reps.append((report(ab, v, []), v))
    bad = [(r, v) for r, v in reps if not r["clean"]]
    if args.json:
        body: Any = reps[0][0] if len(reps) == 1 else {"sessions": [r for r, _ in reps]}
        print(json.dumps(body, indent=2))
    else:
        print("\n\n".join(text(r, v) for r, v in (bad or reps)))
    if bad and args.diagram:
        rep, v = bad[0]
        path = Path(args.diagram)
        if path.suffix == ".mmd":
            path.write_text(diagram(rep, v, "mermaid"))
        else:
            dot = diagram(rep, v, "dot")
            if path.suffix == ".svg":
                from ..draw.render import render_svg

                path.write_bytes(render_svg(dot))
            else:
                path.write_text(dot)
    return 1 if bad else 0
