"""Worker processes for the checkers' many runs, that never outlive the run that started them.

:func:`run_many` (the explorer's runs of many session configurations) and ``prove_all`` spread
configurations over processes.  When the parent is
stopped (Ctrl-C, or SIGTERM as a CI timeout sends it), every worker must stop too, not go on
exploring as an orphan: :func:`worker_pool` terminates the workers when the block it guards is
left by an exception (``KeyboardInterrupt``, ``SystemExit`` raised by a signal handler), and each
worker asks the kernel (Linux) to be sent SIGTERM when its parent dies, so even a parent killed
outright takes its workers with it.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.context import BaseContext
from typing import Any

_PR_SET_PDEATHSIG = 1

#: set in a worker of :func:`worker_pool` (a search there keeps to one thread: the pool's
#: workers already use the cores)
in_worker = False


def _worker_init(init: Callable[..., object] | None = None, initargs: tuple[Any, ...] = ()) -> None:
    """In a worker: default signal handling (a parent's handlers are not inherited in effect),
    and SIGTERM when the parent dies (Linux); then ``init(*initargs)`` if given."""
    global in_worker
    in_worker = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
        except (OSError, AttributeError):  # pragma: no cover - no prctl
            pass
    if init is not None:
        init(*initargs)


def terminate(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: pending work cancelled, running workers terminated and reaped."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)
        if p.is_alive():  # pragma: no cover - a worker that ignored SIGTERM
            p.kill()
            p.join(5)


@contextmanager
def worker_pool(
    jobs: int,
    context: BaseContext | None = None,
    init: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
    fresh: tuple[str, ...] = (),
) -> Iterator[ProcessPoolExecutor]:
    """A process pool of ``jobs`` workers whose workers end with the block or with the parent;
    each worker runs ``init(*initargs)`` first, if given (e.g. to keep a progress queue).

    ``fresh``: every task in a new worker, forked from a server that has imported these modules
    (so a task starts in the same state whichever worker ran what before it: z3's answers
    depend on the terms its process has made so far)."""
    tasks = None
    if fresh:
        context = multiprocessing.get_context(
            "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        )
        if context.get_start_method() == "forkserver":
            context.set_forkserver_preload(list(fresh))
        tasks = 1
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_worker_init,
        initargs=(init, initargs),
        max_tasks_per_child=tasks,
    )
    try:
        yield pool
    except BaseException:
        terminate(pool)
        raise
    pool.shutdown(wait=True)


def _job(args: tuple[Callable[..., Any], Any, dict[str, Any]]) -> Any:
    from .progress import worker_sink

    run, item, kwargs = args
    if kwargs.pop("progress_to_parent", False):
        kwargs["progress"] = worker_sink() or False
    return run(item, **kwargs)


def run_many(
    run: Callable[..., Any],
    items: Sequence[Any],
    jobs: int | None = None,
    progress: Any = None,
    per: Sequence[dict[str, Any]] | None = None,
    **kwargs: Any,
) -> list[Any]:
    """``run(item, progress=..., **kwargs, **per[n])`` for each of ``items``, in that order,
    spread over up to ``jobs`` processes (default: the number of CPUs) when there is more than
    one.  The results are those of one run after another; only the wall time differs.

    ``progress`` as a run takes it (True, False, None: on a terminal, or a sink such as a
    ``proofs.progress.Display``); runs in worker processes send their progress to this process
    through a queue while they run, drawn here with the others'.  ``per``: each item's own
    arguments beside ``kwargs``."""
    import os
    import queue as queue_mod
    from concurrent.futures import FIRST_COMPLETED, wait

    from .progress import Display, sink_for, worker_init

    own = list(per) if per is not None else [{} for _ in items]
    if len(own) != len(items):
        raise ValueError("run_many: one set of arguments per item")
    sink = sink_for(progress)
    jobs = min(jobs or os.cpu_count() or 1, len(items))
    if jobs <= 1:
        return [
            run(x, progress=sink or False, **kwargs, **o) for x, o in zip(items, own, strict=True)
        ]
    ctx = (
        multiprocessing.get_context("fork")
        if "fork" in multiprocessing.get_all_start_methods()
        else multiprocessing.get_context()
    )
    q = ctx.Queue() if sink is not None else None
    kwargs = dict(kwargs, progress=False, progress_to_parent=q is not None)
    out: list[Any] = [None] * len(items)

    def drain() -> None:
        while q is not None and sink is not None:
            try:
                snap = q.get_nowait()
            except queue_mod.Empty:
                return
            sink.update(snap)

    with worker_pool(jobs, ctx, init=worker_init if q is not None else None, initargs=(q,)) as pool:
        futs = {pool.submit(_job, (run, x, dict(kwargs, **own[n]))): n for n, x in enumerate(items)}
        todo = set(futs)
        while todo:
            done, todo = wait(todo, timeout=0.1, return_when=FIRST_COMPLETED)
            drain()
            for fut in done:
                out[futs[fut]] = fut.result()
    drain()  # the workers have ended: what they sent last is in the queue
    if q is not None:
        q.close()
    if isinstance(sink, Display):
        sink.close()
    return out
