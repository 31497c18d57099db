"""Command line: ``mcp-inflight paths`` (the small models: rounds, resumption, tasks, subscriptions).

Each small model (``model/rounds.py``, ``model/resume.py``) is explored exhaustively and proved
by induction with ``proofs/small.py``, at one design or all of them.  The safe design (the first
of the model's ``DESIGNS``: what the runtime does) passes when it holds every property, reaches
every witness and is proved; a mutant passes when the checker catches it (some property fails).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import dataclass
from typing import Any

from mcp_inflight.cli_common import Parser, positive, stop_on_signals
from mcp_inflight.model.declare import DECLARED_MODELS
from mcp_inflight.proofs.small import Checked, check, cti_lines, trace_text

#: the small models: name -> module (``DESIGNS``, ``DESIGN_DOCS``, ``BOUNDS``, ``spec``)
MODELS = {name: m for name, m in DECLARED_MODELS.items() if name != "lease"}


def _module(name: str) -> Any:
    return importlib.import_module(MODELS[name])


def _bounds() -> dict[str, tuple[list[str], str]]:
    """Every bound of every model: name -> (models that have it, help)."""
    out: dict[str, tuple[list[str], str]] = {}
    for name in MODELS:
        for bound, (default, text) in _module(name).BOUNDS.items():
            models, _ = out.get(bound, ([], ""))
            out[bound] = ([*models, name], f"{name}: {text} (default: {default})")
    return out


def build_parser() -> argparse.ArgumentParser:
    lines = []
    for name in MODELS:
        m = _module(name)
        lines.append(f"{name} designs:")
        lines += [f"  {d:<20} {m.DESIGN_DOCS[d]}" for d in m.DESIGNS]
    p = Parser(
        prog="mcp-inflight paths",
        description="Check the small models beside the session model: 2026-07-28 "
        "input-required rounds with a client-held requestState (rounds), resumable "
        "2025-11-25 streams (resume), the task lifecycle of both revisions (tasks) and "
        "2026-07-28 subscriptions/listen (subscriptions). Each is explored exhaustively (breadth first: shortest "
        "traces) and proved by induction with z3 at the given bounds. Exit 0 when each safe "
        "design holds every property, reaches every witness and is proved, and each mutant "
        "asked for is caught; 1 otherwise; 2 on a usage error.",
        epilog="\n".join(lines),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--model",
        default="all",
        choices=[*MODELS, "all"],
        help=" | ".join([*MODELS, "all"]) + " (default: all)",
    )
    p.add_argument(
        "--design",
        default=None,
        help="a design of the model (see below), or all (the safe design and every mutant); "
        "default: the safe design (sealed, named-streams)",
    )
    for bound, (_models, text) in _bounds().items():
        p.add_argument(f"--{bound.replace('_', '-')}", type=positive, dest=bound, help=text)
    p.add_argument("--no-prove", action="store_true", help="explore only (no z3)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return p


def _verdict(checked: Checked, safe: bool) -> bool:
    """Whether a run passes: the safe design holds everything; a mutant is caught."""
    if safe:
        return checked.ok
    ex = checked.explored
    return any(
        ex.verdicts[p.name] == "fails" for p in ex.spec.props if p.kind in ("always", "step")
    )


def _text(checked: Checked, safe: bool, passed: bool) -> list[str]:
    ex, pr = checked.explored, checked.proved
    sp = ex.spec
    role = "safe design" if safe else "mutant"
    verdict = "PASS" if passed else "FAIL"
    if not safe:
        verdict += " (caught)" if passed else " (not caught: no property fails)"
    out = [
        f"{sp.label()} [{role}]: {ex.states} states, {ex.transitions} transitions, "
        f"depth {ex.depth}, {ex.deadlocks} deadlocks (no move enabled), {ex.seconds:.2f} s explored"
        + ("" if pr is None else f", {pr.seconds:.2f} s proved")
        + f"  {verdict}"
    ]
    for p in sp.props:
        v = ex.verdicts[p.name]
        proof = "" if pr is None or p.name not in pr.verdicts else pr.word(p.name)
        out.append(f"  {p.kind:<9} {p.name:<28} {v:<12} {proof}")
    if pr is not None:
        out.append(
            f"  prover: slots in range {pr.word('in_range')}; auxiliary invariants "
            f"kept {len(pr.kept)}, dropped {len(pr.dropped)}"
            + (f" ({', '.join(pr.dropped)})" if pr.dropped else "")
        )
    for e in ex.errors:
        out.append(f"  ERROR {e}")
    for p in sp.props:
        v = ex.verdicts[p.name]
        if v == "fails":
            out.append(f"  {p.name} fails: shortest trace")
            out += trace_text(ex.traces[p.name])
        elif v == "not reached" and safe:
            out.append(f"  {p.name}: witness not reached ({p.doc})")
        elif pr is not None and pr.verdicts.get(p.name) == "not proved" and safe:
            out += cti_lines(pr.ctis[p.name])
    if safe and pr is not None and pr.verdicts["in_range"] != "proved":
        out += cti_lines(pr.ctis["in_range"])
    return out


def run(argv: list[str]) -> int:
    stop_on_signals()
    parser = build_parser()
    args = parser.parse_args(argv)
    names = list(MODELS) if args.model == "all" else [args.model]
    given = {b: getattr(args, b) for b in _bounds() if getattr(args, b) is not None}
    runs: list[tuple[str, str, dict[str, int]]] = []
    for name in names:
        m = _module(name)
        designs = list(m.DESIGNS)
        if args.design in (None, designs[0]):
            chosen = [designs[0]]
        elif args.design == "all":
            chosen = designs
        elif args.design in designs:
            chosen = [args.design]
        elif args.model == "all":
            continue
        else:
            parser.error(f"unknown design {args.design!r} of {name}; valid: {', '.join(designs)}")
        bounds = {k: v for k, v in given.items() if k in m.BOUNDS}
        runs += [(name, d, bounds) for d in chosen]
    if not runs:
        parser.error(f"no model has a design {args.design!r}")
    if args.model != "all":
        stray = set(given) - set(_module(args.model).BOUNDS)
        if stray:
            parser.error(f"{args.model} has no bound {', '.join(sorted(stray))}")
    results = []
    ok = True
    for name, design, bounds in runs:
        m = _module(name)
        safe = design == next(iter(m.DESIGNS))
        try:
            checked = check(m.spec(design, **bounds), with_proof=not args.no_prove)
        except KeyboardInterrupt:
            sys.stderr.write("mcp-inflight paths: interrupted\n")
            return 130
        passed = _verdict(checked, safe)
        ok = ok and passed
        results.append((checked, safe, passed))
        if not args.json:
            print("\n".join(_text(checked, safe, passed)))
    if args.json:
        json.dump(
            {
                "ok": ok,
                "runs": [
                    {**c.to_json(), "role": "safe" if s else "mutant", "pass": p}
                    for c, s, p in results
                ],
            },
            sys.stdout,
            indent=1,
        )
        sys.stdout.write("\n")
    return 0 if ok else 1


@dataclass
class Summary:
    """One small model's run as ``mcp-inflight check`` reports it (plain data, so it can be kept
    in the checkers' cache)."""

    label: str
    states: int
    ok: bool
    cells: list[Any]  # proofs.outcome.Cell
    json: dict[str, Any]


def _summary(checked: Checked) -> Summary:
    from mcp_inflight.proofs.outcome import ok, small_cells

    cs = small_cells(checked)
    return Summary(
        label=checked.explored.spec.label(),
        states=checked.explored.states,
        ok=ok(cs),
        cells=cs,
        json=checked.to_json(),
    )


def check_section(
    cache: str | None = "use",
    plan: dict[str, list[str]] | None = None,
    prove: bool = True,
    bounds: dict[str, int] | None = None,
) -> list[Summary]:
    """``mcp-inflight check``'s section: the small models and designs of ``plan`` (default:
    each model's safe design) at ``bounds`` (each model takes the names of its ``BOUNDS``;
    default: its defaults), explored and (unless ``prove`` is false) proved.  Each model and
    design is read from the checkers' cache when the model and the checkers are unchanged
    (``cache="use"``; :func:`section_key`), computed afresh and stored with ``"refresh"``,
    neither read nor stored with ``None``."""
    from mcp_inflight.proofs import cache as store

    plan = plan or {name: [next(iter(_module(name).DESIGNS))] for name in MODELS}
    out = []
    for name, designs in plan.items():
        mine = bounds_of(name, bounds)
        for d in designs:
            key = section_key(name, d, prove, mine)
            found = store.load("paths", key) if cache == "use" else None
            if not isinstance(found, Summary):
                found = _summary(check(_module(name).spec(d, **mine), with_proof=prove))
                if cache is not None:
                    store.store("paths", key, found)
            out.append(found)
    return out


def bounds_of(model: str, bounds: dict[str, int] | None) -> dict[str, int]:
    """The part of ``bounds`` that names bounds of ``model`` (its ``BOUNDS``)."""
    own = _module(model).BOUNDS
    return {k: v for k, v in (bounds or {}).items() if k in own}


def section_key(model: str, design: str, prove: bool, bounds: dict[str, int] | None = None) -> str:
    """The cache key of one model and design of :func:`check_section` at ``bounds``."""
    from mcp_inflight.proofs import cache as store

    return store.source_key("paths-check", model, design, prove, bounds or {})


def check_text(section: list[Summary]) -> str:
    from mcp_inflight.report import cells_text

    title = (
        "The small models: input-required rounds, resumption, tasks, subscriptions (explored and proved by "
        "induction at their bounds only: 'proved at bounds'; 'mcp-inflight paths' for more):"
    )
    return cells_text(title, [c for r in section for c in r.cells])
