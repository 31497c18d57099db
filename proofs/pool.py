"""Worker processes for the checkers' many runs, that never outlive the run that started them.

``session_search.search_many`` and ``prove_all`` spread configurations over processes.  When the parent is
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
from collections.abc import Callable, Iterator
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
