"""Command line: ``mcp-inflight prove`` (the z3 prover alone, with the mutants of ``atomic``)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from mcp_inflight.cli_common import (
    Parser,
    add_profile_options,
    add_prover_options,
    positive,
    prover_usage_error,
    stop_on_signals,
    unknown_note,
    unwritable,
)
from mcp_inflight.model.config import DESIGNS, Config, client_for, profiles
from mcp_inflight.proofs.prove import (
    BMC_IDS,
    BMC_REQUESTS,
    all_designs,
    prove_all,
)
from mcp_inflight.report import prove_text, write_junit


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="mcp-inflight prove",
        description="Prove the invariants with z3 for any number of ids, requests and streams. "
        "Each invariant is proved inductive (with the auxiliary invariants of "
        "model/auxiliary.py, themselves proved); one that is not comes back with a "
        "counterexample to induction, and bounded model checking then looks for a "
        "real trace from the initial state (shortest first; over "
        f"{BMC_REQUESTS} requests and {BMC_IDS} ids, the explorer's default bound). "
        "Exit 0 when every "
        "invariant is proved; 1 when one is not, or when the solver gives up "
        "(never counted as a pass); 2 on a usage error. Protocol hazards are "
        "reported and never change the exit code.",
    )
    add_profile_options(
        p,
        list(all_designs()),
        "atomic | unguarded | check_then_claim | all, or a mutant of atomic "
        "(atomic-split-claim, atomic-no-refusal, ...) (default: atomic)",
    )
    add_prover_options(p)
    p.add_argument(
        "--jobs",
        type=positive,
        default=min(2, os.cpu_count() or 1),
        help="configurations proved in parallel processes (default: 2, or 1 on one core)",
    )
    p.add_argument(
        "--ranking",
        action="store_true",
        help="prove requests_answered for any number of requests instead (proofs/ranking.py)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--junit-xml", metavar="PATH", help="write one test case per run x property")
    return p


def configs(design: str, revision: str, transport: str, client: str = "reusing") -> list[Config]:
    names = all_designs()
    designs = list(DESIGNS.values()) if design == "all" else [names[design]]
    return [
        Config(d, rev, tr, client=client_for(client, rev))
        for d in designs
        for rev, tr in profiles(revision, transport)
    ]


def run(argv: list[str]) -> int:
    try:
        return _run(argv)
    except KeyboardInterrupt:
        sys.stderr.write("mcp-inflight prove: interrupted\n")
        return 130


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    prover_usage_error(build_parser(), args)
    if unwritable("mcp-inflight prove", "--junit-xml", args.junit_xml):
        return 2
    stop_on_signals()
    cfgs = configs(args.design, args.revision, args.transport, args.client)
    if args.ranking:
        return _ranking(cfgs, args.json)
    results = prove_all(
        cfgs,
        depth=args.depth,
        timeout=args.timeout,
        budget=args.budget,
        jobs=args.jobs,
        progress=not args.json and sys.stderr.isatty(),
        cache="refresh" if args.no_cache else "use",
    )
    ok = all(r.ok for r in results)
    if args.json:
        json.dump({"ok": ok, "runs": [r.to_json() for r in results]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(prove_text(results) + "\n")
        sys.stdout.write(unknown_note(results))
        sys.stdout.write(
            "OK: every invariant is proved for any number of ids and requests\n"
            if ok
            else "FAILED: see the table, counterexamples and traces above\n"
        )
    if args.junit_xml:
        write_junit(args.junit_xml, None, results)
    return 0 if ok else 1


def _ranking(cfgs: list[Config], as_json: bool) -> int:
    from mcp_inflight.proofs.ranking import rank_all

    verdicts = rank_all(cfgs)
    ok = all(v.proved for v in verdicts if v.status != "n/a")
    if as_json:
        json.dump({"ok": ok, "runs": [v.to_json() for v in verdicts]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for v in verdicts:
            sys.stdout.write(f"requests_answered  {v.cfg.label}: {v.status}\n")
            for f in v.failures + v.unknown + ([v.note] if v.note else []):
                sys.stdout.write(f"  {f}\n")
    return 0 if ok else 1
