"""The one explorer of the declared models: compiled engine vs native engine, side by side.

    .venv/bin/python bench/explore_declared.py            # every declared spec, default bounds
    .venv/bin/python bench/explore_declared.py --models lease,tasks

For every design and mutant of each declared model (``model/declare.py`` users: lease, rounds,
resume, tasks, subscriptions) at its default bounds, and the session's declaration over HTTP
(``model/session_spec.py``, one id and two requests; stdio's states are abstracted by a Python
``canon``, which the native engine refuses), this explores the spec with the compiled engine
(``proofs/compiled_spec.py``: its seconds include generating the Python) and with the native
engine (``proofs/native_spec.py``), one after the other in this process, and checks that both
found the same states, transitions, verdicts and traces.  The native engine's time is shown in
three parts: the cold build (generation, the C compiler, loading; the build cache is a fresh
directory), the warm build (generation and loading from the cache) and the search (the C
search, verdicts, and traces rebuilt through the concrete rules).  The ratio is compiled
seconds over native search seconds; the totals give it with the warm build added too.  The
machine is shared: the load average before and after is printed, and beside the wall seconds
the totals give CPU seconds (this process's, and the compiler's for the cold builds), which
another process's load disturbs far less.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import tempfile
import time
from typing import Any

from mcp_inflight.proofs.explorer import explore

MODELS = ("lease", "rounds", "resume", "tasks", "subscriptions")


def specs(models: list[str], session: bool) -> list[tuple[str, Any]]:
    out = []
    for name in models:
        m = importlib.import_module(f"mcp_inflight.model.{name}")
        out += [(f"{name} {d}", m.spec(d)) for d in m.DESIGNS]
    if session:
        from mcp_inflight.model.config import DESIGNS, Config, client_for
        from mcp_inflight.model.session_spec import spec

        for design in ("atomic", "unguarded", "check_then_claim"):
            for rev in ("2025-11-25", "2026-07-28"):
                cfg = Config(DESIGNS[design], rev, "http", 1, 2, client_for("reusing", rev))
                out.append((f"session {design} {rev} http", spec(cfg)))
    return out


def found(ex: Any) -> tuple[Any, ...]:
    return (ex.states, ex.transitions, ex.depth, ex.verdicts, ex.traces, ex.coverage,
            ex.errors, ex.complete, ex.deadlocks, ex.deadlock_trace)  # fmt: skip


def cpu() -> float:
    """CPU seconds of this process and of its finished children (the C compiler)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--no-session", action="store_true")
    args = ap.parse_args()
    todo = specs([m for m in args.models.split(",") if m], not args.no_session)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'spec':<42} {'states':>7} {'compiled s':>10} {'cold build':>10} "
          f"{'warm build':>10} {'native s':>9} {'ratio':>7}")  # fmt: skip
    tot = {"compiled": 0.0, "cold": 0.0, "warm": 0.0, "search": 0.0}
    tcpu = {"compiled": 0.0, "cold": 0.0, "native": 0.0}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["MCP_INFLIGHT_CACHE"] = cache
        for label, spec in todo:
            c0 = cpu()
            t = time.perf_counter()
            compiled = explore(spec, engine="compiled")
            c = time.perf_counter() - t
            c1 = cpu()
            cold = explore(spec, engine="native")
            c2 = cpu()
            warm = explore(spec, engine="native")
            c3 = cpu()
            tcpu["compiled"] += c1 - c0
            tcpu["cold"] += c2 - c1
            tcpu["native"] += c3 - c2
            if found(cold) != found(compiled) or found(warm) != found(compiled):
                raise SystemExit(f"{label}: the engines disagree")
            tot["compiled"] += c
            tot["cold"] += cold.build_seconds
            tot["warm"] += warm.build_seconds
            tot["search"] += warm.search_seconds
            print(f"{label:<42} {compiled.states:>7} {c:>10.3f} {cold.build_seconds:>10.3f} "
                  f"{warm.build_seconds:>10.3f} {warm.search_seconds:>9.4f} "
                  f"{c / warm.search_seconds:>6.0f}x")  # fmt: skip
    print(f"{len(todo)} specs: compiled {tot['compiled']:.2f} s; native search "
          f"{tot['search']:.2f} s ({tot['compiled'] / tot['search']:.0f}x), with the warm build "
          f"{tot['search'] + tot['warm']:.2f} s "
          f"({tot['compiled'] / (tot['search'] + tot['warm']):.1f}x); cold builds "
          f"{tot['cold']:.2f} s")  # fmt: skip
    print(f"CPU seconds: compiled {tcpu['compiled']:.2f}; native warm (generation, load, "
          f"search) {tcpu['native']:.2f} ({tcpu['compiled'] / tcpu['native']:.1f}x); native cold "
          f"(with the compiler) {tcpu['cold']:.2f}")  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
