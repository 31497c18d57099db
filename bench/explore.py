"""Explorer growth with the bound, symmetry on vs off, measured side by side in one run.

    .venv/bin/python bench/explore.py [--design atomic] [--revision 2025-11-25] [--transport http]
                                      [--budget 60]

For bounds (ids, requests) growing from (2, 2), each bound is explored with and without
symmetry reduction; the table shows states, transitions, seconds, states/s and the reduction
factor.  It stops after the first bound whose slower run took longer than --budget seconds.
"""

import argparse
import time

from mcp_inflight.model import DESIGNS, Config, profiles
from mcp_inflight.proofs.explore import explore

BOUNDS = [(2, 2), (3, 2), (2, 3), (3, 3), (2, 4)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--design", default="atomic", choices=list(DESIGNS))
    p.add_argument("--revision", default="all")
    p.add_argument("--transport", default="all")
    p.add_argument("--budget", type=float, default=60.0)
    a = p.parse_args()
    print(f"{'profile':<24} {'ids':>3} {'req':>3} {'sym':>4} {'states':>9} {'trans':>10}"
          f" {'seconds':>8} {'states/s':>9} {'reduction':>9}")
    for rev, tr in profiles(a.revision, a.transport):
        for ids, req in BOUNDS:
            cfg = Config(DESIGNS[a.design], rev, tr, ids=ids, requests=req)
            runs = {}
            for sym in (True, False):
                t0 = time.monotonic()
                r = explore(cfg, symmetry=sym, progress=False)
                runs[sym] = (r, time.monotonic() - t0)
            for sym in (True, False):
                r, sec = runs[sym]
                red = runs[False][0].states / r.states
                print(f"{rev + ' ' + tr:<24} {ids:>3} {req:>3} {'on' if sym else 'off':>4}"
                      f" {r.states:>9,} {r.transitions:>10,} {sec:>8.2f} {r.states / sec:>9,.0f}"
                      f" {red:>8.2f}x", flush=True)
            if max(s for _, s in runs.values()) > a.budget:
                break


if __name__ == "__main__":
    main()
