"""How long ``mcp-inflight check`` takes as a user meets it: cold, warm, and warm in a new process.

    .venv/bin/python bench/check_time.py [--runs 3] [-- CHECK ARGS...]

Side by side in one run (the machine's load is printed before and after):

1. ``check --no-cache``: every proof, symmetry check, small-model section and sensitivity run
   made afresh (and stored);
2. ``check`` right after, reading what run 1 stored: the explorer still runs, the rest comes
   from the checkers' cache;
3. ``check`` again, each run under another ``PYTHONHASHSEED``: a cache key that followed the
   process's string hashing would miss here and cost as much as run 1.

Each figure is the median wall time of ``--runs`` runs (run 1 once: it is the slowest), with
the ratio to run 1.  Every run must exit 0 with the same verdict line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "check", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(
            f"check {' '.join(args)} exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}"
        )
    return dt, p.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("check_args", nargs="*", help="arguments for check (after --)")
    args = ap.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "MCP_INFLIGHT_CACHE": cache, "PYTHONHASHSEED": "1"}
        cold, verdict = _run(["--no-cache", *args.check_args], env)
        warm, seeded = [], []
        for n in range(args.runs):
            dt, v = _run(args.check_args, env)
            warm.append(dt)
            assert v == verdict, (v, verdict)
            dt, v = _run(args.check_args, {**env, "PYTHONHASHSEED": str(100 + n)})
            seeded.append(dt)
            assert v == verdict, (v, verdict)
    what = " ".join(["check", *args.check_args])
    print(f"{what}: {verdict}")
    print(f"1. --no-cache:                      {cold:6.1f} s")
    w, s = statistics.median(warm), statistics.median(seeded)
    print(f"2. warm, same hash seed:            {w:6.1f} s   ratio to 1: {w / cold:.3f}")
    print(f"3. warm, a new hash seed each run:  {s:6.1f} s   ratio to 1: {s / cold:.3f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
