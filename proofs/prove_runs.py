"""The prover's runs of many configurations: each in a fresh process, started now and collected
when their results are needed, so that ``check`` can search with the explorer while z3 proves.

:func:`proving` starts the runs (those not read from the cache) and yields the function that
waits for them; ``proofs/prove.py:prove_all`` is ``proving`` collected at once.  A configuration
runs in a fresh process whenever it runs in another process at all (z3's answers depend on the
terms its process made before, so each starts from the same state): its results are the same
whether it started before the explorer, after it, or alone.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from mcp_inflight.model.config import Config

from . import prove as P
from .records import ProveResult

#: what the prover's worker processes import before they are forked (make no z3 term)
PRELOAD = (P.__name__, "mcp_inflight.proofs.explorer", "mcp_inflight.proofs.native_spec")


@contextmanager
def proving(
    cfgs: Sequence[Config],
    depth: int = P.DEFAULT_DEPTH,
    timeout: float = P.DEFAULT_TIMEOUT,
    jobs: int = 1,
    progress: bool = False,
    budget: float = P.DEFAULT_BUDGET,
    cache: str | None = None,
    symmetric: Sequence[bool] | None = None,
    background: bool = False,
) -> Iterator[Callable[[], list[ProveResult]]]:
    """Start proving ``cfgs`` (arguments as for ``prove_all``) and yield what collects the
    results, in the order given; the workers stop with the block.

    ``background``: run even a single configuration in a worker process, started now (else,
    as ``prove_all`` always did, one configuration is proved in this process when collected)."""
    from . import cache as store

    sym_ok = [True] * len(cfgs) if symmetric is None else list(symmetric)
    work = [(c, depth, timeout, budget, y) for c, y in zip(cfgs, sym_ok, strict=True)]
    keys = [
        store.source_key("prove", w[0], depth, budget, timeout, w[4])  # the whole run
        for w in work
    ]
    out: list[Any] = [store.load("proofs", k) if cache == "use" else None for k in keys]
    todo = [n for n, r in enumerate(out) if r is None]
    t0 = time.monotonic()
    done = 0

    def note(n: int, r: ProveResult) -> None:
        nonlocal done
        done += 1
        if cache is not None and all(p.status != "unknown" for p in r.proofs):
            store.store("proofs", keys[n], dataclasses.replace(r, cached=True))
        if progress:
            sys.stderr.write(
                f"  proved {done}/{len(todo)}: {r.cfg.label} in {r.seconds:.1f}s "
                f"({time.monotonic() - t0:.1f}s elapsed)\n"
            )
            sys.stderr.flush()

    if progress and len(todo) < len(work):
        sys.stderr.write(
            f"  {len(work) - len(todo)} of {len(work)} proofs read from the cache "
            "(--no-cache to prove them again)\n"
        )
    with ExitStack() as stack:
        futs: dict[int, Any] = {}
        if len(todo) > 1 or (todo and background):
            from .pool import worker_pool

            # each configuration in a fresh process, so its results do not depend on --jobs or
            # on which configurations a worker proved before; forked from a server that has
            # imported the prover and the explorer its bounded search asks (once, not per run)
            ex = stack.enter_context(worker_pool(min(max(1, jobs), len(todo)), fresh=PRELOAD))
            futs = {n: ex.submit(P._prove_one, work[n]) for n in todo}

        def collect() -> list[ProveResult]:
            for n in todo:
                if out[n] is None:
                    out[n] = futs[n].result() if n in futs else P._prove_one(work[n])
                    note(n, out[n])
            return list(out)

        yield collect
