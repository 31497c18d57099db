"""The CPU of each z3 prover run of the default ``mcp-inflight check``, phase by phase.

    .venv/bin/python bench/prover_split.py [--runs 3] [--base-rev REV]

Each run of the default check's provers, in a fresh process as ``check`` runs them: the session
model's prover on its four profiles (``atomic``; split into induction with its
counterexamples to induction, the vacuity check, and the bounded search for the hazards' traces
with the explorer run that guides it), and the prover of each declared model at its default
design and bounds (lease, rounds, resume, tasks, subscriptions).  CPU seconds of the run
(``time.process_time``, imports excluded), and its solver queries.

``--base-rev REV`` runs git revision REV's tree (unpacked to a temporary directory and imported
through its ``typecheck/`` links, as ``bench/check_time.py`` does) in turns with this one,
``--runs`` pairs; each figure is the median of its runs.  On a shared machine CPU seconds are
the figure to compare (wall time follows the other work); the pairs run side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: what one fresh process runs: ``kind`` ("session REV TRANSPORT" or a declared model's name)
_ONE = r"""
import importlib, json, sys, time
kind = sys.argv[1]
from mcp_inflight.proofs import bmc, induction, prove as P
spent = {}
def timed(obj, attr, name):
    f = getattr(obj, attr)
    def g(*a, **k):
        c0 = time.process_time()
        try:
            return f(*a, **k)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - c0
    setattr(obj, attr, g)
if kind.startswith("session"):
    from mcp_inflight.model.config import DESIGNS, Config, client_for
    _, rev, tr = kind.split()
    cfg = Config(DESIGNS["atomic"], rev, tr, 2, 2, client_for("reusing", rev))
    # imported before the fork (the one explorer and its native engine)
    for name in ("mcp_inflight.proofs.explorer", "mcp_inflight.proofs.native_spec"):
        importlib.import_module(name)
    timed(P.Prover, "induction", "induction")
    timed(P.Prover, "_vacuity", "vacuity")
    timed(bmc, "search", "bounded search")
    timed(bmc, "shortest", "explorer for it")
    c0 = time.process_time()
    r = P.prove(cfg)
    queries = r.queries
else:
    if kind == "lease":
        from mcp_inflight.model import lease as L
        try:  # before the lease command was folded into check
            from mcp_inflight import cli_lease
            at = cli_lease.config({})
            spec = L.spec_of(L.Config(L.DESIGNS["fenced"], at.workers, at.requests, at.ids))
        except ImportError:
            spec = L.spec()
    else:
        mod = importlib.import_module(f"mcp_inflight.model.{kind}")
        spec = mod.spec(next(iter(mod.DESIGNS)))
    c0 = time.process_time()
    queries = (getattr(induction, "prove", None) or P.prove)(spec).queries  # the one entry now
spent["total"] = time.process_time() - c0
if "induction" in spent:
    spent["induction"] -= spent.get("vacuity", 0.0)
print(json.dumps({"queries": queries, **spent}))
"""

RUNS = [
    "session 2025-11-25 stdio",
    "session 2025-11-25 http",
    "session 2026-07-28 stdio",
    "session 2026-07-28 http",
    "lease",
    "rounds",
    "resume",
    "tasks",
    "subscriptions",
]
#: the session prover's phases; "bounded search" includes "explorer for it" (its guide)
PHASES = ["induction", "vacuity", "bounded search", "explorer for it"]


def _one(kind: str, root: Path | None) -> dict[str, float]:
    env = dict(os.environ)
    cwd = str(ROOT)
    if root is not None:
        env["PYTHONPATH"] = str(root / "typecheck")
        cwd = str(root / "typecheck")
    out = subprocess.run(
        [sys.executable, "-c", _ONE, kind],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _table(label: str, runs: dict[str, list[dict[str, float]]]) -> float:
    print(f"\n{label}: CPU seconds, median of {len(next(iter(runs.values())))} runs (queries)")
    print(f"  {'run':<26} {'total':>6}  " + "  ".join(f"{p:>15}" for p in PHASES))
    total = 0.0
    for kind, rs in runs.items():
        med = {k: statistics.median(r.get(k, 0.0) for r in rs) for k in ["total", *PHASES]}
        total += med["total"]
        phases = "  ".join(
            f"{med[p]:>15.2f}" if kind.startswith("session") else f"{'':>15}" for p in PHASES
        )
        print(f"  {kind:<26} {med['total']:>6.2f}  {phases}  ({int(rs[0]['queries'])})")
    print(f"  {'all':<26} {total:>6.2f}")
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base-rev", help="also run this git revision's provers, in turns")
    args = ap.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    now: dict[str, list[dict[str, float]]] = {k: [] for k in RUNS}
    base: dict[str, list[dict[str, float]]] = {k: [] for k in RUNS}
    with tempfile.TemporaryDirectory() as tmp:
        root = None
        if args.base_rev:
            root = Path(tmp) / "base"
            root.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.base_rev], capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
        for _ in range(args.runs):
            for kind in RUNS:
                if root is not None:
                    base[kind].append(_one(kind, root))
                now[kind].append(_one(kind, None))
    if args.base_rev:
        b = _table(args.base_rev, base)
    n = _table("this tree", now)
    if args.base_rev:
        print(f"\nall prover runs, CPU: {args.base_rev} {b:.2f} s, now {n:.2f} s ({n / b:.3f})")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
