"""Where the prover's time goes on every design, and what the explorer-guided search saves.

    .venv/bin/python bench/prove_speed.py [--design all] [--no-check-time]

Side by side in one run (the machine's load is the same for both):

1. per configuration, the whole proof (induction, counterexamples to induction, bounded search)
   two ways, each in a fresh process, two at a time: the bounded search asking z3 at every depth
   from 0 ("z3 alone", as the prover did before) against asking it only at the length of the
   shortest violation found by the explorer on the same universe ("guided", the default).  CPU
   seconds of the process and solver queries, and whether the verdicts are the same;
2. ``mcp-inflight prove --design all --no-cache`` and ``mcp-inflight check --design all``, wall
   clock: a cold run (``--no-cache``: every proof made again; the native engine already built)
   and a warm one (proofs read from the cache).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_inflight.model.config import DESIGNS, Config, profiles  # noqa: E402
from mcp_inflight.proofs.pool import worker_pool  # noqa: E402
from mcp_inflight.proofs.prove import Prover, all_designs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CLI = str(ROOT / ".venv" / "bin" / "mcp-inflight")


def _one(args):
    cfg, guide = args
    c0 = time.process_time()
    r = Prover(cfg, guide=guide).run()
    verdicts = {p.name: (p.status, len(p.trace) if p.trace else None) for p in r.proofs}
    return time.process_time() - c0, r.seconds, r.queries, verdicts


def _wall(argv: list[str]) -> float:
    t0 = time.monotonic()
    subprocess.run([CLI, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def _per_config(cfgs) -> bool:
    work = [(c, g) for c in cfgs for g in (False, True)]
    with worker_pool(2, fresh=("mcp_inflight.proofs.prove",)) as ex:
        out = list(ex.map(_one, work))
    print("\n1. per configuration: CPU seconds (queries), z3 alone vs guided by the explorer")
    print(f"   {'configuration':<40} {'z3 alone':>14} {'guided':>14} {'ratio':>6}  verdicts")
    tot = [0.0, 0.0]
    same_all = True
    for k, cfg in enumerate(cfgs):
        (c0, _, q0, v0), (c1, _, q1, v1) = out[2 * k], out[2 * k + 1]
        tot[0] += c0
        tot[1] += c1
        same = v0 == v1
        same_all &= same
        print(
            f"   {cfg.label:<40} {c0:>8.1f} ({q0:>3}) {c1:>8.1f} ({q1:>3}) "
            f"{c1 / max(c0, 1e-9):>6.2f}  {'same' if same else 'DIFFERENT'}"
        )
    print(
        f"   {'total':<40} {tot[0]:>14.1f} {tot[1]:>14.1f} {tot[1] / max(tot[0], 1e-9):>6.2f}  "
        f"{'all the same (status and trace length)' if same_all else 'NOT all the same'}"
    )
    return same_all


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--design", default="all", choices=["all", *all_designs()])
    ap.add_argument("--no-check-time", action="store_true", help="skip section 2")
    ap.add_argument("--no-per-config", action="store_true", help="skip section 1")
    ap.add_argument(
        "--baseline-cli",
        metavar="PATH",
        help="the mcp-inflight of an older checkout: its prove --design in section 2 too, just "
        "before ours (its own defaults; an older one has no cache)",
    )
    args = ap.parse_args(argv)
    designs = list(DESIGNS.values()) if args.design == "all" else [all_designs()[args.design]]
    cfgs = [Config(d, rev, tr) for d in designs for rev, tr in profiles()]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    same_all = True
    if not args.no_per_config:
        same_all = _per_config(cfgs)
    if not args.no_check_time:
        d = args.design
        print("\n2. wall clock, 2 worker processes")
        if args.baseline_cli:
            t0 = time.monotonic()
            subprocess.run(
                [args.baseline_cli, "prove", "--design", d, "--json"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            base = time.monotonic() - t0
            print(f"   prove --design {d} by {args.baseline_cli}: {base:.1f}s")
        cold = _wall(["prove", "--design", d, "--json", "--no-cache"])
        warm = _wall(["prove", "--design", d, "--json"])
        print(f"   prove --design {d}: {cold:.1f}s with --no-cache, {warm:.1f}s from the cache")
        if args.baseline_cli:
            print(f"   ratio ours (no cache) / baseline: {cold / max(base, 1e-9):.2f}")
        if d == "all":
            cold = _wall(["check", "--design", d, "--json", "--no-cache"])
            warm = _wall(["check", "--design", d, "--json"])
            print(f"   check --design {d}: {cold:.1f}s with --no-cache, {warm:.1f}s from the cache")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0 if same_all else 1


if __name__ == "__main__":
    sys.exit(main())
