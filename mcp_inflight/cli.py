"""Command line: ``mcp-inflight check``; the other subcommands live in their own modules."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import threading

from mcp_inflight.model.config import (
    CLIENTS,
    DESIGNS,
    REVISIONS,
    TRANSPORTS,
    Config,
    client_for,
    profiles,
)

DEFAULT_IDS = 2
DEFAULT_REQUESTS = 2


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def choice(valid, what):
    def parse(v):
        if v not in valid:
            raise argparse.ArgumentTypeError(f"unknown {what} {v!r}; valid: {', '.join(valid)}")
        return v

    return parse


def whole_number(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {v!r}") from None


def positive(v):
    n = whole_number(v)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {v!r}")
    return n


def writable_file(path: str) -> str | None:
    """Why ``path`` cannot be written (a message), or None.  Checked before a long run so that
    a typo in an output path fails at once rather than after the run; a file that did not
    exist is not left behind."""
    existed = os.path.lexists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        return f"cannot write {path}: {e.strerror or e}"
    if not existed:
        os.unlink(path)
    return None


def unwritable(prog: str, option: str, path: str | None) -> bool:
    """Whether ``path``, given to ``option``, cannot be written (see :func:`writable_file`); if
    so, says why on stderr as a usage error of ``prog``."""
    why = writable_file(path) if path else None
    if why is not None:
        sys.stderr.write(f"{prog}: error: {option}: {why}\n")
    return why is not None


def add_profile_options(p: argparse.ArgumentParser, designs: list[str], design_help: str) -> None:
    """``--design`` (one of ``designs`` or all), ``--revision`` and ``--transport``."""
    p.add_argument(
        "--design",
        default="atomic",
        type=choice(designs + ["all"], "design"),
        help=design_help,
    )
    p.add_argument(
        "--revision",
        default="all",
        type=choice(list(REVISIONS) + ["all"], "revision"),
        help="2025-11-25 | 2026-07-28 | all (default: all)",
    )
    p.add_argument(
        "--transport",
        default="all",
        type=choice(list(TRANSPORTS) + ["all"], "transport"),
        help="stdio | http | all (default: all)",
    )
    p.add_argument(
        "--client",
        default="reusing",
        type=choice(list(CLIENTS) + ["compliant"], "client"),
        help="the client's id rule: reusing (reuses an id once answered: 2026-07-28's rule, "
        "common practice on 2025-11-25), fresh (never reuses an id in the session: "
        "2025-11-25's rule) or compliant (the rule of each run's revision) (default: reusing)",
    )


def add_prover_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The prover's ``--depth``, ``--budget`` and ``--timeout``, for ``check`` and ``prove``."""
    from mcp_inflight.proofs.prove import DEFAULT_BUDGET, DEFAULT_DEPTH, DEFAULT_TIMEOUT

    p.add_argument(
        "--depth",
        type=positive,
        default=DEFAULT_DEPTH,
        help=f"{prefix}longest trace bounded model checking looks for (default: {DEFAULT_DEPTH})",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="M",
        help=f"{prefix}millions of z3 resource units per solver query; the units count the "
        "solver's work, not seconds, so a loaded machine reaches the same verdicts. A query "
        f"that runs out is 'unknown' and fails the run (default: {DEFAULT_BUDGET:g})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"{prefix}wall-clock seconds per solver query, a backstop behind --budget; "
        f"running out fails the run (default: {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help=f"{prefix}prove every configuration again (and store the results) instead of "
        "reading its finished result from the cache (~/.cache/mcp-inflight/proofs, keyed by a "
        "hash of the model's and the checkers' source, the z3 version, the design, profile, "
        "--depth, --budget and --timeout)",
    )


def prover_usage_error(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for opt in ("budget", "timeout"):
        if getattr(args, opt) <= 0:
            parser.error(f"--{opt} must be positive")


def unknown_note(proofs) -> str:
    """The line saying which invariants the solver gave up on, or ``""``."""
    unknown = [
        f"{p.name} on {r.cfg.label} ({p.note})"
        for r in proofs or []
        for p in r.proofs
        if p.applies and p.kind == "invariant" and p.status == "unknown"
    ]
    if not unknown:
        return ""
    return "UNKNOWN: the solver gave up on " + "; ".join(unknown) + "; this is not a pass\n"


def _on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def stop_on_signals() -> None:
    """SIGTERM ends the process through ``SystemExit`` (as Ctrl-C does through
    ``KeyboardInterrupt``), so the checkers' worker pools are terminated on the way out."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)


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
    "paths": (
        "mcp_inflight.cli_small",
        "check the small models: input-required rounds, resumption",
    ),
    "lease": (
        "mcp_inflight.cli_lease",
        "check the lease protocol of many workers sharing a store (explorer and prover)",
    ),
}


def _available() -> dict:
    """The delegated subcommands whose module is installed."""
    import importlib.util

    return {k: v for k, v in DELEGATED.items() if importlib.util.find_spec(v[0]) is not None}


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="mcp-inflight",
        description="The request lifecycle of MCP servers as one verified state machine.",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    c = sub.add_parser(
        "check",
        help="explore every reachable state and judge the invariants",
        description="Explore every reachable state of the model (breadth-first, so every "
        "counterexample is a shortest one) for each selected design and profile, "
        "and judge each invariant, witness and protocol hazard; then prove each "
        "invariant with z3 for any number of ids and requests (as 'mcp-inflight "
        "prove' does) and print both verdicts side by side. Exit 0 when every "
        "invariant holds and is proved and every witness is reached; 1 otherwise "
        "(a solver timeout included); 2 on a usage error. Hazards are reported in "
        "their own section and never change the exit code. A short section on the lease "
        "protocol of many workers (fenced, at its default bounds; 'mcp-inflight lease' for "
        "more) follows, then one on the small models of input-required rounds and resumable "
        "streams (their safe designs; 'mcp-inflight paths' for the mutants); both count "
        "towards the exit code.",
    )
    add_profile_options(
        c,
        list(DESIGNS),
        "atomic | unguarded | check_then_claim | all (default: atomic); "
        "'mcp-inflight prove --design' also takes the mutants of atomic",
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
        "--no-symmetry",
        action="store_true",
        help="do not reduce by symmetry of ids and instances (to compare counts)",
    )
    c.add_argument(
        "--liveness",
        action="store_true",
        help="keep the state graph and judge the liveness properties on the compiled engine "
        "(on by default at --requests 2 or fewer unless --engine native; at the default "
        "bound it takes the compiled engine and doubles its time)",
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
        help="the explorer's engine: native (the model's rules generated as C, built once per "
        "configuration with the C compiler and cached), compiled (generated Python), "
        "interpreted (model/step.py); the same states, verdicts and traces (tests compare "
        "them). Default auto: native when a C compiler is present, else compiled",
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
    c.add_argument("--no-lease", action="store_true", help="skip the lease protocol's section")
    c.add_argument(
        "--no-paths",
        action="store_true",
        help="skip the section on the small models (input-required rounds, resumption)",
    )
    add_prover_options(c, "prover: ")
    for name, (_, helptext) in _available().items():
        d = sub.add_parser(name, help=helptext, add_help=False)
        d.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _runs(args):
    designs = list(DESIGNS.values()) if args.design == "all" else [DESIGNS[args.design]]
    return [
        Config(d, rev, tr, args.ids, args.requests, client_for(args.client, rev))
        for d in designs
        for rev, tr in profiles(args.revision, args.transport)
    ]


def _liveness(args) -> bool:
    """Liveness is judged when asked, and by default at --requests 2 or fewer (where keeping
    the graph is cheap), except on ``--engine native``, which keeps no graph."""
    return args.liveness or (args.requests <= 2 and args.engine != "native")


def cmd_check(args) -> int:
    from mcp_inflight import report

    if args.no_prove and args.no_explore:
        build_parser().error("--no-prove and --no-explore leave nothing to run")
    prover_usage_error(build_parser(), args)
    if unwritable("mcp-inflight check", "--junit-xml", args.junit_xml):
        return 2
    if args.engine == "native" and args.liveness:
        sys.stderr.write(
            "mcp-inflight check: error: --liveness needs the compiled engine "
            "(--engine auto or compiled); the native engine does not keep the graph\n"
        )
        return 2
    if args.engine == "native" and not args.no_explore:
        from mcp_inflight.proofs.native import available

        if not available():
            sys.stderr.write(
                "mcp-inflight check: error: --engine native needs a C compiler "
                "(gcc or cc on PATH, or CC); use --engine compiled\n"
            )
            return 2
    stop_on_signals()
    cfgs = _runs(args)
    results = proofs = None
    if not args.no_explore:
        from mcp_inflight.proofs.explore import explore_many
        from mcp_inflight.proofs.progress import Display

        results = explore_many(
            cfgs,
            symmetry=not args.no_symmetry,
            max_states=args.max_states,
            progress=False if args.no_progress else Display(sys.stderr),
            engine=args.engine,
            liveness=_liveness(args),
        )
    if not args.no_prove:
        from mcp_inflight.proofs.prove import prove_all

        proofs = prove_all(
            cfgs,
            depth=args.depth,
            timeout=args.timeout,
            budget=args.budget,
            jobs=min(2, os.cpu_count() or 1),
            progress=not args.json and sys.stderr.isatty(),
            cache="refresh" if args.no_cache else "use",
        )
    ok = (results is None or all(r.ok for r in results)) and (
        proofs is None or all(p.ok for p in proofs)
    )
    lease = None
    if not args.no_lease:
        from mcp_inflight.cli_lease import check_section, check_text

        lease = check_section("refresh" if args.no_cache else "use")
        ok = ok and lease.ok
    paths = None
    if not args.no_paths:
        from mcp_inflight import cli_small

        paths = cli_small.check_section("refresh" if args.no_cache else "use")
        ok = ok and all(r.ok for r in paths)
    if args.json:
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
                        if k in ("seconds", "queries", "slowest_query", "ok", "depth", "auxiliary")
                    }
        else:
            runs = [p.to_json() for p in proofs]
        doc = {"ok": ok, "runs": runs}
        if lease is not None:
            doc["lease"] = lease.to_json()
        if paths is not None:
            doc["paths"] = {name: r.json for name, r in zip(cli_small.MODELS, paths, strict=True)}
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        if results is not None and proofs is not None:
            text = report.combined_text(results, proofs)
        elif results is not None:
            text = report.explore_text(results)
        else:
            text = report.prove_text(proofs)
        sys.stdout.write(text + "\n")
        if lease is not None:
            sys.stdout.write("\n" + check_text(lease) + "\n\n")
        if paths is not None:
            sys.stdout.write(cli_small.check_text(paths) + "\n\n")
        what = {
            (False, False): "every invariant holds and is proved, and every witness is reached",
            (False, True): "every invariant holds and every witness is reached",
            (True, False): "every invariant is proved",
        }[(args.no_explore, args.no_prove)]
        sys.stdout.write(unknown_note(proofs))
        sys.stdout.write(
            f"OK: {what}\n" if ok else "FAILED: see the table and counterexamples above\n"
        )
    if args.junit_xml:
        report.write_junit(args.junit_xml, results, proofs)
    return 0 if ok else 1


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in _available():
        module = importlib.import_module(DELEGATED[argv[0]][0])
        return module.run(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "check":
        try:
            return cmd_check(args)
        except KeyboardInterrupt:
            sys.stderr.write("mcp-inflight check: interrupted\n")
            return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
