"""Tasks at run time (2025-11-25 tasks and the 2026-07-28 tasks extension): the task store (:mod:`.tasks`, the model's ``fresh-bound``
design) with the work, the clock and the waiters beside it.

Every decision on a task (its id, who may read, cancel or list it, its status, what a late
completion does, what the session's end and the ttl do) is the store's, that is the model's;
this module runs what the store decides:

* the work of a task is an ``asyncio`` task; its end is the store's ``finish`` (a task already
  cancelled stays cancelled), ``tasks/cancel`` and the session's end also stop it (the spec's
  "SHOULD attempt to stop the task execution");
* the ttl is a timer calling the store's ``expire``, capped by the store's ``max_ttl_ms``;
* ``tasks/result`` waits on the task's event, set when the store first reports it terminal (or
  deletes it), then asks the store again;
* every status change the store puts on its outbox becomes a ``notifications/tasks/status``
  whose params are the full ``Task`` (2025-11-25 ``basic/utilities/tasks``, task status
  notification), handed to the owner's listener (its session), which decides the stream;
* the wire's ``createdAt`` and ``lastUpdatedAt`` (ISO 8601, required in every task response)
  and ``pollInterval`` are kept here, as the store has no clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Protocol

from .tasks import (
    CANCELLED,
    INPUT_REQUIRED,
    REV_2025,
    REV_2026,
    TERMINAL,
    NotReady,
    TaskError,
    TaskStore,
)

__all__ = ["TaskRuntime", "TaskError", "Listener", "STATUS_METHOD", "RELATED_TASK"]

STATUS_METHOD = "notifications/tasks/status"
#: the ``_meta`` key associating a message with a task (2025-11-25 tasks)
RELATED_TASK = "io.modelcontextprotocol/related-task"

#: ``listener(task_id, message)``: a message for the owner of ``task_id``
Listener = Callable[[str, dict[str, Any]], Any]


class Mirror(Protocol):
    """Where a runtime shared by several workers copies its tasks' moves (the Redis store of
    :mod:`.redis_tasks`): called in the order the store made them, without waiting."""

    def created(self, owner: str, tid: str, revision: str, ttl_ms: int) -> None: ...

    def changed(self, owner: str, tid: str, status: str, result: Any) -> None: ...

    def asked(self, owner: str, tid: str, key: str, request: dict[str, Any]) -> None: ...

    def ended(self, owner: str) -> None: ...


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskRuntime:
    """The tasks of one :class:`~.server.Server`, shared by its sessions; each task is bound to
    the owner that created it (a session's own key)."""

    def __init__(
        self, max_ttl_ms: int = 3_600_000, poll_interval_ms: int | None = 500, page: int = 100
    ) -> None:
        self.store = TaskStore(max_ttl_ms=max_ttl_ms)
        self.page = page  # tasks/list: tasks per page
        self.poll_interval_ms = poll_interval_ms
        self.works: dict[str, asyncio.Task[Any]] = {}
        self.stops: dict[str, asyncio.Event] = {}  # the work's context's ``cancelled``
        self.terminal: dict[str, asyncio.Event] = {}
        self.times: dict[str, list[str]] = {}  # task id -> [createdAt, lastUpdatedAt]
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.listeners: dict[str, Listener] = {}
        #: 2026-07-28: a task's questions not answered yet, by key: (the request, its waiter)
        self.inputs: dict[str, dict[str, tuple[dict[str, Any], asyncio.Future[Any]]]] = {}
        #: the shared store this runtime's moves are copied to (several workers), if any
        self.mirror: Mirror | None = None

    # --- views ----------------------------------------------------------------------------

    def _wire(self, view: dict[str, Any]) -> dict[str, Any]:
        """The store's view of a task with the times and poll interval the wire requires."""
        created, updated = self.times.get(view["taskId"], ["", ""])
        out = {**view, "createdAt": created, "lastUpdatedAt": updated}
        pending = self.inputs.get(view["taskId"])
        if pending and view["status"] == INPUT_REQUIRED and "ttlMs" in view:
            out["inputRequests"] = {k: req for k, (req, _) in pending.items()}
        if self.poll_interval_ms is not None:
            # SEP-2663 renames the field (pollIntervalMs, as ttlMs)
            out["pollIntervalMs" if "ttlMs" in view else "pollInterval"] = self.poll_interval_ms
        return out

    def _flush(self) -> None:
        """Send what the store's last move put on its outbox: one status notification per
        status change, to the owner; a terminal status wakes the task's waiters."""
        store = self.store
        out, store.outbox = store.outbox, []
        for owner, view in out:
            tid = view["taskId"]
            if self.mirror is not None:
                t = store.tasks.get(tid)
                self.mirror.changed(owner, tid, view["status"], t.result if t else None)
            times = self.times.get(tid)
            if times is not None:
                times[1] = _now()
            listener = self.listeners.get(owner)
            if listener is not None:
                listener(
                    tid, {"jsonrpc": "2.0", "method": STATUS_METHOD, "params": self._wire(view)}
                )
            if view["status"] in TERMINAL:
                self._wake(tid)

    def _wake(self, tid: str) -> None:
        ev = self.terminal.get(tid)
        if ev is not None:
            ev.set()

    # --- the server -----------------------------------------------------------------------

    def create(
        self,
        owner: str,
        ttl_ms: int | None,
        work: Coroutine[Any, Any, tuple[bool, Any]],
        cancelled: asyncio.Event | None = None,
        revision: str = REV_2025,
    ) -> dict[str, Any]:
        """A task for ``owner`` running ``work`` (which returns ``(ok, result)``: the tool's
        result, or a JSON-RPC error when ``ok`` is False); the ``Task`` of its
        ``CreateTaskResult``."""
        t = self.store.create(owner, revision, ttl_ms)
        tid = t.task_id
        if self.mirror is not None:
            self.mirror.created(owner, tid, revision, t.ttl_ms)
        now = _now()
        self.times[tid] = [now, now]
        self.terminal[tid] = asyncio.Event()
        loop = asyncio.get_running_loop()
        self.timers[tid] = loop.call_later(t.ttl_ms / 1000, self.expire, tid)
        if cancelled is not None:
            self.stops[tid] = cancelled
        task = self.works[tid] = loop.create_task(work)
        task.add_done_callback(lambda done: self._work_done(tid, done))
        return self._wire(t.view())

    def _work_done(self, tid: str, task: asyncio.Task[Any]) -> None:
        """The work of ``tid`` ended (a done callback, so that a work cancelled before its
        first step ends too): the store's ``finish`` (a 2026-07-28 cancellation requested of
        the task takes effect first, the store's ``honour``)."""
        self.works.pop(tid, None)
        self.stops.pop(tid, None)
        if task.cancelled():
            t = self.store.tasks.get(tid)
            if t is not None and t.cancel_requested:
                self.store.honour(tid)
            ok, result = False, {"code": -32603, "message": "the task's work was stopped"}
        elif task.exception() is not None:  # the session's work catches the tool's errors
            e = task.exception()
            ok, result = False, {"code": -32603, "message": f"{type(e).__name__}: {e}"}
        else:
            ok, result = task.result()
        self.store.finish(tid, ok, result)
        self._flush()

    def _stop(self, tid: str) -> None:
        stop = self.stops.get(tid)
        if stop is not None:
            stop.set()
        work = self.works.get(tid)
        if work is not None:
            work.cancel()

    def expire(self, tid: str) -> None:
        """The ttl ran out: the store deletes the task; its work stops, its waiters wake.  An
        ended session whose last task this was is forgotten (its key is never used again)."""
        t = self.store.tasks.get(tid)
        self.store.expire(tid)
        if t is not None and t.owner in self.store.ended:
            if not any(o.owner == t.owner for o in self.store.tasks.values()):
                self.store.ended.discard(t.owner)
        self._stop(tid)
        self._wake(tid)
        self.terminal.pop(tid, None)
        self.times.pop(tid, None)
        timer = self.timers.pop(tid, None)
        if timer is not None:
            timer.cancel()

    def end_session(self, owner: str) -> None:
        """The owner's session ended: the store cancels its live tasks; their work stops.  An
        owner with no task is not recorded."""
        self.listeners.pop(owner, None)
        if self.mirror is not None:
            self.mirror.ended(owner)
        if not any(t.owner == owner for t in self.store.tasks.values()):
            return
        self.store.end_session(owner)
        self._flush()
        for tid, t in list(self.store.tasks.items()):
            if t.owner == owner:
                self._stop(tid)
                self._wake(tid)

    def close(self) -> None:
        """Stop every timer and work (the server stops)."""
        for tid in list(self.store.tasks):
            self.expire(tid)

    # --- the requester's methods ----------------------------------------------------------

    def get(self, owner: str, tid: str) -> dict[str, Any]:
        """``tasks/get``; raises :class:`TaskError` for an unknown or another owner's id."""
        return self._wire(self.store.get(owner, tid))

    def list(self, owner: str, cursor: str | None = None) -> dict[str, Any]:
        """``tasks/list``: a page of the owner's tasks (the store's list), in the order they
        were created; ``nextCursor`` when more follow (the last task id of the page; a cursor
        naming no task of the owner, or one deleted since, is refused with
        :class:`TaskError`)."""
        views = self.store.list(owner)
        start = 0
        if cursor is not None:
            ids = [v["taskId"] for v in views]
            if cursor not in ids:
                raise TaskError("unknown cursor")
            start = ids.index(cursor) + 1
        page = views[start : start + self.page]
        out: dict[str, Any] = {"tasks": [self._wire(v) for v in page]}
        if start + self.page < len(views):
            out["nextCursor"] = page[-1]["taskId"]
        return out

    def cancel(self, owner: str, tid: str) -> dict[str, Any]:
        """``tasks/cancel``.  2025-11-25: the task is ``cancelled`` before the answer (the
        store), then its work is asked to stop; raises :class:`TaskError` (unknown, another's,
        terminal).  2026-07-28: the store records the request and answers ``{}`` (a terminal
        task too); the work is asked to stop, and its stopping is the store's ``honour``."""
        view = self.store.cancel(owner, tid)
        self._flush()
        t = self.store.tasks[tid]
        if t.revision == REV_2025 or t.cancel_requested:
            self._stop(tid)
        return self._wire(view) if view else {}

    def asking(self, tid: str) -> None:
        """2025-11-25: the work of ``tid`` needs the requester's input (the store's ``ask``);
        the question itself goes on a ``tasks/result`` stream (the session's part)."""
        self.store.ask(tid)
        self._flush()

    def answered(self, owner: str, tid: str) -> None:
        """2025-11-25: the requester answered through ``tasks/result``'s stream (the store's
        ``answer``): the task works again."""
        self.store.answer(owner, tid)
        self._flush()

    async def ask(self, tid: str, key: str, request: dict[str, Any]) -> Any:
        """2026-07-28: the work of ``tid`` needs the requester's input (the store's ``ask``:
        ``input_required``); ``request`` is shown under ``key`` in ``tasks/get``'s
        ``inputRequests`` until ``tasks/update`` answers it, and its answer is returned."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        pending = self.inputs.setdefault(tid, {})
        pending[key] = (request, fut)
        try:
            if self.mirror is not None:  # the question first: its status change comes with it
                t = self.store.tasks.get(tid)
                if t is not None:
                    self.mirror.asked(t.owner, tid, key, request)
            self.store.ask(tid)
            self._flush()
            return await fut
        finally:
            if pending.get(key, (None, None))[1] is fut:
                del pending[key]
            if not pending:
                self.inputs.pop(tid, None)

    def update(self, owner: str, tid: str, responses: dict[str, Any]) -> None:
        """``tasks/update`` (2026-07-28): the requester's answers, by key.  Each answers its
        question; once none is left the task works again (the store's ``answer``), so a
        partial update leaves it ``input_required`` with the unanswered keys.  Keys that
        name no pending question are ignored."""
        self.store.get(owner, tid)  # unknown, deleted or another's: refused here
        pending = self.inputs.get(tid, {})
        for key, answer in responses.items():
            entry = pending.pop(key, None)
            if entry is not None and not entry[1].done():
                entry[1].set_result(answer)
        if not pending:
            self.store.answer(owner, tid)
            self._flush()

    async def result(self, owner: str, tid: str) -> tuple[str, Any]:
        """``tasks/result``: waits until the task is terminal, then ``(status, result)``;
        raises :class:`TaskError` for an unknown or another owner's id (also when the task
        is deleted or its session ends while waiting)."""
        while True:
            try:
                res = self.store.result(owner, tid)
            except NotReady:
                ev = self.terminal.get(tid)
                if ev is None:  # pragma: no cover - a stored task always has its event
                    raise TaskError(f"unknown task {tid!r}") from None
                await ev.wait()
                continue
            return self.store.tasks[tid].status, res


def cancelled_error() -> dict[str, Any]:
    """``tasks/result``'s error for a cancelled task (its request has no result)."""
    return {"code": -32603, "message": "the task was cancelled"}


__all__ += ["cancelled_error", "CANCELLED", "REV_2025", "REV_2026"]
