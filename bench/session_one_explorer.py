"""The session model on its own engines and on the one explorer, side by side, as check runs it.

    .venv/bin/python bench/session_one_explorer.py [--runs 3] [--bounds 2x2]

For each profile of the session model (the safe design, the reusing client) at the bounds
given (``IDSxREQUESTS``; default ``check``'s 2 x 2), one after the other in this process:

* **session**: ``explore(cfg, symmetry=True, liveness=True, engine="auto")``, the session's own
  engines as ``check`` runs them (native where a C compiler is: its key of orbits and its
  liveness judge, ``proofs/session_search.py``, ``proofs/native.py``);
* **one**: ``explore(spec(cfg), symmetry=True, engine="fastest")``, the one explorer on the
  session's declaration (``model/session_spec.py``): the symmetry check of
  ``proofs/declared_symmetry.py`` first, then the search with the least renaming per orbit
  (native where it runs the spec, else compiled: the engine that ran is printed), liveness
  judged on the reduced graph.

Each is timed from a warm build cache (one run of each first, not counted); the figure is the
median of ``--runs``, wall and CPU seconds of this process.  Printed per profile: both runs'
states (the declaration's reduction is exact, one state per orbit; the session's key may give an
orbit two keys where the server's ids share the id sort), whether their verdicts agree (the one
explorer's read as the session's record, ``proofs/session_run.py``; on every property, liveness
included), and the ratio one / session.  The machine is shared: the load average is printed
before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from mcp_inflight.model.config import DESIGNS, Config, client_for, profiles
from mcp_inflight.model.session_spec import spec
from mcp_inflight.proofs.explorer import explore
from mcp_inflight.proofs.session_run import run_result


def _timed(fn: Any, runs: int) -> tuple[Any, float, float]:
    fn()  # the build cache warmed, imports done
    walls, cpus, out = [], [], None
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return out, statistics.median(walls), statistics.median(cpus)


def _verdicts(res: Any) -> dict[str, bool]:
    return {v.name: v.ok for v in res.verdicts if v.applies}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bounds", default="2x2", help="IDSxREQUESTS (default: 2x2)")
    args = ap.parse_args()
    ids, requests = (int(x) for x in args.bounds.split("x"))
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    head = (
        f"{'profile':<18} {'session st':>10} {'one st':>8} {'agree':>5} "
        f"{'session s':>9} {'one s':>7} {'one/sess':>8} {'session CPU':>11} {'one CPU':>8}  engine"
    )
    print(head)
    for revision, transport in profiles():
        cfg = Config(DESIGNS["atomic"], revision, transport, ids, requests)
        cfg = Config(
            cfg.design, revision, transport, ids, requests, client_for("reusing", revision)
        )
        ref, ref_wall, ref_cpu = _timed(
            lambda cfg=cfg: explore(
                cfg, symmetry=True, liveness=True, engine="auto", progress=False
            ),
            args.runs,
        )
        one, one_wall, one_cpu = _timed(
            lambda cfg=cfg: explore(spec(cfg), symmetry=True, engine="fastest"), args.runs
        )
        agree = _verdicts(run_result(cfg, one, True)) == _verdicts(ref)
        print(
            f"{revision + ' ' + transport:<18} {ref.states:>10,} {one.states:>8,} "
            f"{'yes' if agree else 'NO':>5} {ref_wall:>9.2f} {one_wall:>7.2f} "
            f"{one_wall / ref_wall:>8.2f} {ref_cpu:>11.2f} {one_cpu:>8.2f}  {one.engine}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
