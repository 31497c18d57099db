"""``mcp-inflight replay TRACE``: check a recorded wire trace against the model.

The trace (:mod:`mcp_inflight.trace.format`) is mapped onto the model's moves by
``model/observe.py`` (the abstraction is written there, once) and run on the ``atomic`` design
with the model's step function: each step enabled, each output as observed, every invariant
along the run.  On a violation the first unexplained step (or the first broken invariant) is
reported with the run up to it, and the designs that do explain the trace are named.
Exit 0 clean, 1 violation, 2 unreadable trace (with its line number).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..model.observe import Abstraction, Verdict, abstract, check, explains
from ..model.trace import build_trace
from .format import TraceError, read


def _steps(v: Verdict) -> list[dict[str, Any]]:
    tr = build_trace(v.cfg, [(t.action, t.args, t.pre, t.post) for t in v.run])
    return [dict(st.to_json(), inferred=inf) for st, inf in zip(tr, v.inferred, strict=True)]


def report(ab: Abstraction, v: Verdict, others: list[Verdict]) -> dict[str, Any]:
    """The JSON shape of a replay's outcome."""
    out: dict[str, Any] = {
        "clean": v.clean,
        "design": v.cfg.design.name,
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
    }
    return out


def text(rep: dict[str, Any], v: Verdict) -> str:
    lines = [
        f"replay on {rep['design']} (2025-11-25 http, {rep['ids']} ids, "
        f"{rep['requests']} instances): {rep['observed']} observed steps"
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
    if not rep["explained_by"] and rep["unexplained"]:
        lines.append("no design of the model explains it")
    return "\n".join(lines)


def run(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="mcp-inflight replay", description=__doc__.split("\n\n")[1].replace("\n", " ")
    )
    p.add_argument("trace", help="a JSON Lines trace (mcp-inflight record --out)")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    args = p.parse_args(argv)
    try:
        events = read(args.trace)
    except TraceError as e:
        sys.stderr.write(f"mcp-inflight replay: {args.trace}: unreadable trace at {e}\n")
        return 2
    except OSError as e:
        sys.stderr.write(f"mcp-inflight replay: {e}\n")
        return 2
    ab = abstract(events)
    v = check(ab)
    others = [] if v.clean else explains(ab)
    rep = report(ab, v, others)
    print(json.dumps(rep, indent=2) if args.json else text(rep, v))
    return 0 if v.clean else 1
