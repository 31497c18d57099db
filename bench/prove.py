"""How long the z3 proofs take: per invariant, per profile, in total, and the slowest query.

    .venv/bin/python bench/prove.py [--design atomic] [--jobs 2]

Three measurements, side by side in one run (the machine's load is the same for all):

1. the default proof as ``mcp-inflight prove`` runs it (profiles in ``--jobs`` processes,
   obligations of one action batched into one query): wall-clock total;
2. the same, one profile after another in this process: seconds per profile, query count and
   the slowest query of each;
3. every obligation asked separately (no batching): seconds per invariant (the time of the
   queries that are about it, summed over profiles and actions), to see which one costs most.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_inflight.model.config import Config, profiles  # noqa: E402
from mcp_inflight.proofs.prove import Prover, all_designs, prove_all  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--design", default="atomic", choices=list(all_designs()))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    design = all_designs()[args.design]
    cfgs = [Config(design, rev, tr) for rev, tr in profiles()]

    t0 = time.monotonic()
    results = prove_all(cfgs, jobs=args.jobs)
    wall = time.monotonic() - t0
    ok = all(r.ok for r in results)
    print(
        f"1. default proof of {design.name}, all profiles, {args.jobs} processes: "
        f"{wall:.2f}s wall-clock ({'all invariants proved' if ok else 'NOT all proved'})"
    )

    print("\n2. per profile (one after another, batched as by default)")
    print(f"   {'profile':<22} {'seconds':>8} {'queries':>8}  slowest query")
    total = 0.0
    slowest = (0.0, "", "")
    for cfg in cfgs:
        r = Prover(cfg).run()
        total += r.seconds
        if r.slowest[0] > slowest[0]:
            slowest = (r.slowest[0], r.slowest[1], cfg.label)
        print(
            f"   {cfg.revision + ' ' + cfg.transport:<22} {r.seconds:>8.2f} {r.queries:>8}  "
            f"{r.slowest[0]:.2f}s  {r.slowest[1]}"
        )
    print(f"   {'total':<22} {total:>8.2f}")
    print(f"   slowest query: {slowest[0]:.2f}s, {slowest[1]} ({slowest[2]})")

    print("\n3. per invariant (every obligation its own query; seconds summed over profiles)")
    spent: dict[str, float] = {}
    kinds: dict[str, str] = {}
    total_u = 0.0
    for cfg in cfgs:
        pr = Prover(cfg, batch=False)
        r = pr.run()
        total_u += r.seconds
        for p in r.proofs:
            if p.applies:
                spent[p.name] = spent.get(p.name, 0.0) + p.seconds
                kinds[p.name] = p.kind
    for name, sec in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"   {kinds[name]:<10} {name:<28} {sec:>7.2f}s")
    print(
        f"   unbatched total {total_u:.2f}s vs batched {total:.2f}s "
        f"(ratio {total_u / max(total, 1e-9):.2f})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
