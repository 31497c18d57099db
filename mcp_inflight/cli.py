"""Command line: ``mcp-inflight check``; the other subcommands live in their own modules."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_inflight import __version__
from mcp_inflight.cli_common import (
    DEFAULT_IDS,
    DEFAULT_REQUESTS,
    Parser,
    add_profile_options,
    add_prover_options,
    choice,
    positive,
    prover_usage_error,
    stop_on_signals,
    unknown_note,
    unwritable,
    whole_number,
    writable_file,
)
from mcp_inflight.model.config import (
    DESIGNS,
    Config,
    client_for,
    profiles,
)
from mcp_inflight.model.declare import DECLARED_MODELS

if TYPE_CHECKING:
    from mcp_inflight.model.config import Design
    from mcp_inflight.proofs.outcome import Cell

__all__ = ["main", "build_parser", "whole_number", "writable_file"]

T = TypeVar("T")


# Subcommands with their own parser, in their own module: name -> (module, help).
DELEGATED = {
    "prove": ("mcp_inflight.cli_prove", "prove the invariants with z3 for any number of ids"),
    "diagrams": ("mcp_inflight.draw", "generate the diagrams from the model, or check them"),
    "serve": ("mcp_inflight.serve", "run an MCP server on the verified core (stdio or HTTP)"),
    "probe": ("mcp_inflight.probe", "probe an MCP server over HTTP for in-flight id collisions"),
    "explore": ("mcp_inflight.web", "serve a page to walk the state space and its counterexamples"),
    "record": (
        "mcp_inflight.trace.record",
        "record the wire trace of a Streamable HTTP server (reverse proxy)",
    ),
    "replay": (
        "mcp_inflight.trace.replay",
        "check a recorded wire trace against the model's atomic design",
    ),
}

#: commands folded into ``check``: name -> what to run instead
FOLDED = {
    "lease": "mcp-inflight check --model lease --design all (bounds: --bound workers=N ...)",
    "paths": "mcp-inflight check --model rounds|resume|tasks|subscriptions --design all "
    "(bounds: --bound NAME=N)",
}


def _available() -> dict:
    """The delegated subcommands whose module is installed."""
    import importlib.util

    return {k: v for k, v in DELEGATED.items() if importlib.util.find_spec(v[0]) is not None}


#: the models ``check`` knows, in the order it reports them
MODELS = ("session", *DECLARED_MODELS)
#: the small models: every declared model but the lease (``--no-paths`` leaves them out)
SMALL = MODELS[2:]


def _designs_of(model: str) -> list[str]:
    """The designs of ``model``, its safe design first."""
    if model == "session":
        return list(DESIGNS)
    from mcp_inflight.check_declared import designs_of

    return designs_of(model)


def _all_designs() -> list[str]:
    return list(dict.fromkeys(d for m in MODELS for d in _designs_of(m)))


#: designs read from --design-file, by name (the session model's)
_FILED: dict = {}


def _bounds_of(model: str) -> dict[str, Any]:
    """The bounds a declared model names (its ``BOUNDS``: name -> (default, help))."""
    return dict(importlib.import_module(f"mcp_inflight.model.{model}").BOUNDS)


def _bound(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"not NAME=N: {text!r}")
    return name, positive(value)


def _bounds(args: argparse.Namespace, plan: dict[str, list[str]]) -> dict[str, int]:
    """``--bound`` as a dict; a usage error for a name no selected declared model has."""
    given = dict(args.bound)
    known = {n for m in plan if m != "session" for n in _bounds_of(m)}
    bad = sorted(set(given) - known)
    if bad:
        where = "; ".join(f"{m}: {', '.join(_bounds_of(m))}" for m in plan if m != "session")
        build_parser().error(
            f"--bound {', '.join(bad)}: not a bound of the selected models"
            + (f" ({where})" if where else " (the session model takes --ids and --requests)")
        )
    return given


def _design_file(path: str) -> Design:
    """The design a ``--design-file`` describes, or a usage error."""
    from mcp_inflight.model.config import design_from_knobs

    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        if not isinstance(spec, dict):
            raise ValueError("the file must hold one JSON object")
        return design_from_knobs(spec)
    except (OSError, ValueError) as e:
        build_parser().error(f"--design-file {path}: {e}")


def _plan(args: argparse.Namespace) -> dict[str, list[str]]:
    """model -> the designs to run, from ``--model``, ``--design`` and the ``--no-*`` flags."""
    if args.design_file:
        if args.model not in ("all", "session") or args.design is not None:
            build_parser().error("--design-file checks one session design: no --model or --design")
        d = _design_file(args.design_file)
        _FILED[d.name] = d
        return {"session": [d.name]}
    chosen = list(MODELS) if args.model == "all" else [args.model]
    if args.no_lease:
        chosen = [m for m in chosen if m != "lease"]
    if args.no_paths:
        chosen = [m for m in chosen if m not in SMALL]
    plan: dict[str, list[str]] = {}
    for m in chosen:
        names = _designs_of(m)
        if args.design is None:
            plan[m] = names[:1]
        elif args.design == "all":
            plan[m] = names
        elif args.design in names:
            plan[m] = [args.design]
    if not plan:
        valid = sorted({d for m in chosen for d in _designs_of(m)})
        build_parser().error(
            f"no model of {', '.join(chosen) or 'the selection'} has a design "
            f"{args.design!r}; valid: {', '.join(valid)}, all"
        )
    return plan


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="mcp-inflight",
        description="The request lifecycle of MCP servers as one verified state machine.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    c = sub.add_parser(
        "check",
        help="explore every reachable state of every model and judge its properties",
        description="Check the models: the request lifecycle of one session (session), the "
        "lease protocol of many workers sharing a store (lease), 2026-07-28 input-required "
        "rounds (rounds), resumable 2025-11-25 streams (resume), the task lifecycle of both "
        "revisions (tasks) and 2026-07-28 subscriptions/listen (subscriptions); by default all "
        "six, each "
        "at its safe design and default bounds. Each is explored (every reachable state, "
        "breadth-first, so every counterexample is a shortest one) and its invariants are "
        "proved with z3. Every verdict is one of: 'proved' (inductive for any number of ids, "
        "instances and workers: the session and lease models), 'proved at bounds' (the "
        "induction ran on the finite universe of the bounds: rounds, resume, tasks, "
        "subscriptions), 'holds "
        "(explored)' (only the explorer judged it: liveness, or --no-prove), 'fails', 'not "
        "proved', 'unknown' (the solver gave up: never a pass), 'reached' / 'not reached' "
        "(witnesses), 'not applicable'. Exit 0 when every invariant holds and is proved and "
        "every witness is reached; 1 otherwise (a solver timeout included); 2 on a usage "
        "error (with --design all, the mutants fail, so the exit code is 1: that the default "
        "run passes says each property is broken by the mutants its model names, in the "
        "sensitivity rows). With --design all each lease and small model also shows its "
        "designs side by side. Hazards are reported in their own rows and never change the "
        "exit code. The "
        "JUnit file has a test case per model x design x run x property and fails exactly "
        "where the exit code does. --revision, --transport, --client, --ids, --requests, "
        "--engine, --liveness and --no-explore apply to the session model; the other models "
        "run at their default bounds, or at those --bound names.",
    )
    c.add_argument(
        "--model",
        default="all",
        type=choice([*MODELS, "all"], "model"),
        help=" | ".join([*MODELS, "all"]) + " (default: all)",
    )
    add_profile_options(
        c,
        _all_designs(),
        "a design of the selected models, or all (every design and mutant of each; the "
        "session model's three designs). Default: each model's safe design (session: atomic, "
        "lease: fenced, rounds: sealed, resume: named-streams). A named design runs the "
        "models that have it. Session: atomic | unguarded | check_then_claim ('mcp-inflight "
        "prove --design' also takes the mutants of atomic); lease: "
        + " | ".join(_designs_of("lease"))
        + "; rounds: "
        + " | ".join(_designs_of("rounds"))
        + "; resume: "
        + " | ".join(_designs_of("resume"))
        + "; tasks: "
        + " | ".join(_designs_of("tasks"))
        + "; subscriptions: "
        + " | ".join(_designs_of("subscriptions")),
        default_design=None,
    )
    c.add_argument(
        "--ids",
        type=positive,
        default=DEFAULT_IDS,
        help=f"distinct request ids (default: {DEFAULT_IDS})",
    )
    c.add_argument(
        "--requests",
        type=positive,
        default=DEFAULT_REQUESTS,
        help=f"request instances a run may send (default: {DEFAULT_REQUESTS})",
    )
    c.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="NAME=N",
        type=_bound,
        help="a bound of the lease and small models (repeatable; each selected model takes "
        "the names it has, and every name must be one of a selected model's): "
        + "; ".join(f"{m}: {', '.join(_bounds_of(m))}" for m in MODELS[1:]),
    )
    c.add_argument(
        "--no-symmetry",
        action="store_true",
        help="do not reduce by symmetry of ids and instances (to compare counts)",
    )
    c.add_argument(
        "--liveness",
        action="store_true",
        help="keep the state graph and judge the liveness properties on it (on by default at "
        "--requests 2 or fewer; the native and compiled engines keep the same graph)",
    )
    c.add_argument(
        "--max-states",
        type=positive,
        default=None,
        help="stop a run after this many states; an incomplete run fails",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    c.add_argument(
        "--engine",
        default="auto",
        type=choice(["auto", "native", "compiled", "interpreted"], "engine"),
        help="the one explorer's engine for the session model (its declaration, "
        "model/session_spec.py), and for its symmetry check: native (the rules generated as "
        "C, built once per configuration with the C compiler and cached), compiled "
        "(generated Python, several times slower), interpreted (the rules read as written: "
        "minutes at the default bounds, for comparing); the same states, "
        "verdicts and traces (tests compare them). Default auto: native when a C compiler is "
        "present and the declaration is one it runs, else compiled",
    )
    c.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress on stderr (by default the explorer's runs report states, states/s, "
        "depth and queue: one line rewritten in place on a terminal, a plain line every few "
        "seconds otherwise, and one summary line per run)",
    )
    c.add_argument("--junit-xml", metavar="PATH", help="write one test case per run x property")
    c.add_argument(
        "--no-prove", action="store_true", help="run only the explorer (skip the z3 proofs)"
    )
    c.add_argument(
        "--no-explore", action="store_true", help="run only the z3 prover (skip the explorer)"
    )
    c.add_argument(
        "--design-file",
        metavar="PATH",
        help="check a design described as knobs in a JSON file (a proposed fix, say) on the "
        'session model: {"name": ..., "base": "atomic", "free_on": "cancel", ...}; the knobs '
        "are those of model/config.py's Design (claim, guarded, guard_write, "
        "cancel_by_connection, free_on, fresh_server_ids, unguessable_server_ids, "
        "answer_clears_waiter, releases_waiters, end_stops_writes, post_scopes, ...); see "
        "examples/designs/",
    )
    c.add_argument(
        "--no-sensitivity",
        action="store_true",
        help="skip the sensitivity section (each invariant and liveness property broken by the "
        "designs or mutants its model names, explored at the default bounds; cached like the "
        "proofs)",
    )
    c.add_argument(
        "--no-lease", action="store_true", help="leave out the lease model (as --model would)"
    )
    c.add_argument(
        "--no-paths",
        action="store_true",
        help="leave out the small models: " + ", ".join(SMALL) + " (as --model would)",
    )
    add_prover_options(c, "prover: ")
    for name, (_, helptext) in _available().items():
        d = sub.add_parser(name, help=helptext, add_help=False)
        d.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _runs(args: argparse.Namespace, names: list[str]) -> list[Config]:
    designs = [_FILED.get(n) or DESIGNS[n] for n in names]
    return [
        Config(d, rev, tr, args.ids, args.requests, client_for(args.client, rev))
        for d in designs
        for rev, tr in profiles(args.revision, args.transport)
    ]


def cmd_check(args: argparse.Namespace) -> int:
    from mcp_inflight import report

    if args.no_prove and args.no_explore:
        build_parser().error("--no-prove and --no-explore leave nothing to run")
    prover_usage_error(build_parser(), args)
    if unwritable("mcp-inflight check", "--junit-xml", args.junit_xml):
        return 2
    if args.engine == "native" and not args.no_explore:
        from mcp_inflight.proofs.native_build import available

        if not available():
            sys.stderr.write(
                "mcp-inflight check: error: --engine native needs a C compiler "
                "(gcc or cc on PATH, or CC); use --engine compiled\n"
            )
            return 2
    stop_on_signals()
    plan = _plan(args)
    bounds = _bounds(args, plan)
    cache = "refresh" if args.no_cache else "use"
    cells = []
    results = proofs = None
    sym_cells: list = []
    from mcp_inflight import check_sections

    with ExitStack() as stack:
        # beside the session's runs (this process and their own pools), in two worker
        # processes: the session's rule discipline and sensitivity, and each declared model;
        # they share nothing but the cache on disk
        pool = check_sections.pool(stack, 2)
        extras = None
        if "session" in plan:
            cfgs = _runs(args, plan["session"])
            extras = check_sections.beside(pool, check_sections.session_extras, args, cfgs, cache)
        # each declared model a job of its own, the largest first, so the two workers share them
        others = sorted((m for m in plan if m != "session"), key=lambda m: m != "tasks")
        declared = {
            m: check_sections.beside(
                pool, check_sections.declared_sections, args, {m: plan[m]}, bounds, cache
            )
            for m in others
        }
        if "session" in plan:
            from mcp_inflight.proofs.outcome import session_cells

            results, proofs, sym_cells = check_sections.session_section(args, cfgs, cache)
            cells += session_cells(results, proofs) + sym_cells
        rules, sens = extras() if extras else ([], [])
        parts = [declared[m]() for m in plan if m in declared]  # in the plan's order
    declared_runs = [r for p in parts for r in p[0]]
    their_rules = [c for p in parts for c in p[1]]
    their_sens = [c for p in parts for c in p[2]]
    cells += [c for r in declared_runs for c in r.cells]
    rules += their_rules
    sens += their_sens
    cells += rules + sens
    from mcp_inflight.proofs.outcome import ok as all_passed

    ok = all_passed(cells)
    if args.json:
        doc = {"ok": ok, "models": list(plan), "results": [c.to_json() for c in cells]}
        if results is not None:
            runs = [r.to_json() for r in results]
            if proofs is not None:
                for run, pr in zip(runs, proofs, strict=False):
                    for key in ("invariants", "hazards"):
                        for v in run[key]:
                            p = pr.proof(v["name"])
                            v["proof"] = p.to_json() if p.applies else None
                    run["prover"] = {
                        k: v
                        for k, v in pr.to_json().items()
                        if k
                        in (
                            "seconds",
                            "queries",
                            "slowest_query",
                            "ok",
                            "depth",
                            "auxiliary",
                            "in_range",
                        )
                    }
            doc["runs"] = runs
        elif proofs is not None:
            doc["runs"] = [p.to_json() for p in proofs]
        if declared_runs:
            doc["declared"] = [r.json for r in declared_runs]
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        if results is not None and proofs is not None:
            sys.stdout.write(report.combined_text(results, proofs) + "\n")
        elif results is not None:
            sys.stdout.write(report.explore_text(results) + "\n")
        elif proofs is not None:
            sys.stdout.write(report.prove_text(proofs) + "\n")
        if declared_runs:
            from mcp_inflight import check_declared

            sys.stdout.write("\n" + check_declared.text(declared_runs) + "\n\n")
        if sym_cells:
            sys.stdout.write(report.symmetry_text(sym_cells) + "\n\n")
        sys.stdout.write(report.discipline_text(rules) + "\n\n")
        if sens:
            sys.stdout.write(report.sensitivity_text(sens) + "\n\n")
        sys.stdout.write(unknown_note(proofs or ()))
        sys.stdout.write(
            _summary_line(cells) if ok else "FAILED: see the table and counterexamples above\n"
        )
    if args.junit_xml:
        report.write_junit_cells(args.junit_xml, cells)
    return 0 if ok else 1


def _summary_line(cells: Iterable[Cell]) -> str:
    """The last line of a passing check: what was shown, in the verdict words of the cells."""
    by_word: dict[str, list[str]] = {}
    for c in cells:
        if c.kind is not None and c.kind.value in ("invariant", "step"):
            by_word.setdefault(str(c.word), [])
            if c.model not in by_word[str(c.word)]:
                by_word[str(c.word)].append(c.model)
    parts = [
        f"{w}: {', '.join(models)}"
        for w, models in by_word.items()
        if w in ("proved", "proved at bounds", "holds (explored)")
    ]
    return "OK: every invariant holds and every witness is reached (" + "; ".join(parts) + ")\n"


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in FOLDED:
        sys.stderr.write(f"mcp-inflight {argv[0]}: now part of check: {FOLDED[argv[0]]}\n")
        return 2
    if argv and argv[0] in _available():
        module = importlib.import_module(DELEGATED[argv[0]][0])
        return module.run(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "check":
        from mcp_inflight.model.logic import ModelError

        try:
            return cmd_check(args)
        except ModelError as e:
            sys.stderr.write(f"mcp-inflight check: {e}\n")
            sys.stdout.write("FAILED: the model cannot be read (see above)\n")
            return 1
        except KeyboardInterrupt:
            sys.stderr.write("mcp-inflight check: interrupted\n")
            return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
