"""The native engine on one thread and on two, side by side, and where two start to pay.

    .venv/bin/python bench/native_threads.py [--runs 3]

For searches from a few thousand states to a few million (the session's ``atomic`` design,
unreduced and with symmetry; safety only: the liveness judgement after a search, on the graph
it kept, runs on one thread and is not timed here), the search alone (its C built before, not
timed; the C source generated, as every run does, included) on one thread,
on two with every batch of two or more states split (``parallel_from=1``), and on two as
``explore`` runs it (batches under ``native_build.PARALLEL_FROM`` states on one thread), in turns,
``--runs`` rounds; each figure is the median wall time of its runs, and the ratios are one
thread's time over the other's (above 1: two threads are faster).  The states of a level are
what a batch can split, so the mean states per level (states / levels) is shown: a search whose
levels are small cannot gain.  Every run's counts are checked equal to the one-thread run's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from mcp_inflight.model.config import DESIGNS, Config, client_for
from mcp_inflight.proofs import native, native_build

CASES = [
    # (revision, transport, ids, requests, symmetry)
    ("2026-07-28", "http", 2, 2, False),
    ("2025-11-25", "stdio", 2, 2, True),
    ("2025-11-25", "stdio", 2, 2, False),
    ("2025-11-25", "http", 2, 2, False),
    ("2025-11-25", "http", 3, 2, True),
    ("2025-11-25", "stdio", 3, 2, False),
    ("2025-11-25", "http", 3, 2, False),
]


def _run(
    cfg: Config, symmetry: bool, threads: int, parallel_from: int
) -> tuple[float, tuple[int, int, int]]:
    t0 = time.monotonic()
    r = native.search_native(cfg, symmetry=symmetry, threads=threads, parallel_from=parallel_from)
    return time.monotonic() - t0, (r.states, r.transitions, r.depth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="rounds, in turns (default 3)")
    a = ap.parse_args()
    if not native_build.available():
        raise SystemExit("no C compiler: the native engine does not run here")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"PARALLEL_FROM = {native_build.PARALLEL_FROM}; CPUs: {os.cpu_count()}")
    print(
        f"{'profile':<17} {'bound':>5} {'sym':>3} {'states':>10} {'per level':>10}"
        f" {'1 thread s':>10} {'2, all s':>9} {'2, as run s':>11} {'1/(2, all)':>10}"
        f" {'1/(2, as run)':>13}"
    )
    for rev, tr, ids, req, sym in CASES:
        cfg = Config(DESIGNS["atomic"], rev, tr, ids, req, client_for("reusing", rev))
        _run(cfg, sym, 1, native_build.PARALLEL_FROM)  # builds the C (not timed)
        ways = {
            "one": (1, native_build.PARALLEL_FROM),
            "all": (2, 1),
            "run": (2, native_build.PARALLEL_FROM),
        }
        times: dict[str, list[float]] = {k: [] for k in ways}
        counts = set()
        for _ in range(a.runs):
            for k, (th, pf) in ways.items():
                sec, count = _run(cfg, sym, th, pf)
                times[k].append(sec)
                counts.add(count)
        if len(counts) != 1:
            raise SystemExit(f"{cfg.label}: the runs' counts differ: {sorted(counts)}")
        ((states, _, depth),) = counts
        m = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"{rev + ' ' + tr:<17} {ids}x{req:<3} {'yes' if sym else 'no':>3} {states:>10,}"
            f" {states // (depth + 1):>10,} {m['one']:>10.3f} {m['all']:>9.3f} {m['run']:>11.3f}"
            f" {m['one'] / m['all']:>10.2f} {m['one'] / m['run']:>13.2f}"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
