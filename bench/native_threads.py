"""The declared models' native engine on one thread and on two, side by side, and where two pay.

    .venv/bin/python bench/native_threads.py [--runs 3] [--liveness]

For searches from some ten thousand states to a few million (the session's declaration
``session_spec.spec(cfg)`` at the ``atomic`` design, unreduced and with symmetry, and the tasks
model at its default bounds), the C search alone (``NativeExplored.c_seconds``: its C built
before with the optimised flags, not timed; the symmetry check, the traces and the liveness
judgement after the search, all on one thread, not timed either) on one thread, on two with
every batch split (``parallel_from=1``), and on two as ``explore`` runs it (a level's batches
under ``native_build.PARALLEL_FROM`` states on one thread), in turns, ``--runs`` rounds; each
figure is the median of its runs, and the ratios are one thread's time over the other's (above
1: two threads are faster).  The states of a level are what a batch can split, so the mean
states per level (states / levels) is shown: a search whose levels are small cannot gain.
Safety only unless ``--liveness`` (then the search also keeps the graph's edges, more for the
hand-over to write).  Every run's findings (counts, verdicts, traces) are checked equal to the
one-thread run's.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
from typing import Any

from mcp_inflight.model import tasks
from mcp_inflight.model.config import DESIGNS, Config, client_for
from mcp_inflight.model.declare import Spec
from mcp_inflight.model.session_spec import spec as session_spec
from mcp_inflight.proofs import native_build, native_spec

#: above the largest case's states (the session at 3 x 2 over HTTP, unreduced: 2.9 million)
MAX_STATES = 5_000_000

#: (label, bound, symmetry, the spec)
CASES: list[tuple[str, str, bool, Any]] = [
    ("tasks fresh-bound", "2x1", False, lambda: tasks.spec("fresh-bound")),
    *[
        (
            f"session {rev} {tr}",
            f"{ids}x{req}",
            sym,
            lambda rev=rev, tr=tr, ids=ids, req=req: session_spec(
                Config(DESIGNS["atomic"], rev, tr, ids, req, client_for("reusing", rev))
            ),
        )
        for rev, tr, ids, req, sym in [
            ("2026-07-28", "http", 2, 2, False),
            ("2025-11-25", "stdio", 2, 2, True),
            ("2025-11-25", "stdio", 2, 2, False),
            ("2025-11-25", "http", 2, 2, False),
            ("2025-11-25", "http", 3, 2, True),
            ("2025-11-25", "stdio", 3, 2, False),
            ("2025-11-25", "http", 3, 2, False),
        ]
    ],
]


def _safety(spec: Spec) -> Spec:
    return dataclasses.replace(spec, props=tuple(p for p in spec.props if p.kind != "liveness"))


def _findings(ex: Any) -> tuple[Any, ...]:
    return (ex.states, ex.transitions, ex.depth, ex.verdicts, ex.traces, ex.coverage, ex.deadlocks)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--runs", type=int, default=3, help="rounds, in turns (default 3)")
    ap.add_argument(
        "--liveness", action="store_true", help="keep the liveness properties (and the graph)"
    )
    a = ap.parse_args()
    if not native_build.available():
        raise SystemExit("no C compiler: the native engine does not run here")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"PARALLEL_FROM = {native_build.PARALLEL_FROM}; CPUs: {os.cpu_count()}")
    print(
        f"{'model / profile':<26} {'bound':>5} {'sym':>3} {'states':>10} {'per level':>10}"
        f" {'1 thread s':>10} {'2, all s':>9} {'2, as run s':>11} {'1/(2, all)':>10}"
        f" {'1/(2, as run)':>13}"
    )
    ways = {
        "one": (1, native_build.PARALLEL_FROM),
        "all": (2, 1),
        "run": (2, native_build.PARALLEL_FROM),
    }
    for label, bound, sym, make in CASES:
        spec = make() if a.liveness else _safety(make())
        gen, _ = native_spec.prepare(spec, sym)
        native_spec.build(gen.source, optimised=True)  # not timed
        first = native_spec.search_native(spec, MAX_STATES, symmetry=sym, threads=1)
        times: dict[str, list[float]] = {k: [] for k in ways}
        for _ in range(a.runs):
            for k, (th, pf) in ways.items():
                ran = native_spec.search_native(
                    spec, MAX_STATES, symmetry=sym, threads=th, parallel_from=pf
                )
                if _findings(ran) != _findings(first):
                    raise SystemExit(f"{label} {bound}: {k} found otherwise than one thread")
                times[k].append(ran.c_seconds)
        m = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"{label:<26} {bound:>5} {'yes' if sym else 'no':>3} {first.states:>10,}"
            f" {first.states // (first.depth + 1):>10,} {m['one']:>10.3f} {m['all']:>9.3f}"
            f" {m['run']:>11.3f} {m['one'] / m['all']:>10.2f} {m['one'] / m['run']:>13.2f}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
