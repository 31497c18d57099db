"""Tasks shared by several workers (2025-11-25 tasks of a session; 2026-07-28 tasks of the
extension): the link between a worker's in-process runtime
(:class:`~.task_runtime.TaskRuntime`) and the Redis store (:class:`~.redis_tasks.RedisTasks`).

The worker that creates a task runs its work with the in-process runtime, as a single process
does (the work, its questions on a ``tasks/result`` stream, its status notifications to the
session's streams on this worker).  :class:`Mirror` copies each move of that runtime's store to
Redis, in order, through one queue: ``create`` (same id, this worker holding the lease),
``ask`` (2026-07-28: each question with its key), ``answer``, ``finish``, ``cancel``
(2025-11-25) and ``honour`` (2026-07-28: the work stopped on a cancellation).  No response
leaves the worker before the queue is drained (:meth:`Mirror.drain`, called by
:mod:`.redis_http` before a response starts), so any worker can read a task as soon as the
client can name it.

Another worker answers ``tasks/get``, ``tasks/list``, ``tasks/cancel`` and ``tasks/result`` from
Redis (:func:`answer`); the runner's worker too, except ``tasks/result`` of a task it runs,
which stays local (its stream carries the work's questions).  A cancel from another worker is
decided in Redis, then reaches the runner by its worker channel (:meth:`Mirror.cancelled`),
which stops the work through the in-process runtime; the runner's late moves are refused by
the scripts (terminal states are sticky).

2026-07-28 (:func:`answer_2026`): ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` are
answered from Redis on every worker, the runner's included, after the same checks a session
makes (:func:`~.session_tasks.refused_2026`).  ``tasks/update`` removes the answered questions
in Redis and reaches the runner by its worker channel (:meth:`Mirror.updated`), whose work
takes the answers through the in-process runtime's ``update``; ``tasks/cancel`` records the
request in Redis and reaches the runner the same way, which stops the work (its end is the
store's ``honour``).

Binding: a 2025-11-25 task is bound to its session, and the session is shared, so the owner is
the session id on every worker.  A 2026-07-28 task is bound to
:data:`~.api.UNAUTHENTICATED`, as in one process: this server has no authorization context,
so every 2026-07-28 request shares that one, and a task is protected by its unguessable id.
The two never meet: a 2025-11-25 session naming a 2026-07-28 task id, or the reverse, finds no
task under its owner and gets the answer of an unknown id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .api import PARAMS_OF_2026, UNAUTHENTICATED
from .messages import INVALID_PARAMS, error, error_reply
from .redis_tasks import RedisTasks
from .session_tasks import refused_2026
from .task_runtime import RELATED_TASK, TaskRuntime, cancelled_error
from .tasks import CANCELLED, COMPLETED, FAILED, INPUT_REQUIRED, REV_2025, WORKING, TaskError

__all__ = ["Mirror", "answer", "answer_2026", "SHARED_METHODS", "SHARED_METHODS_2026"]

#: the 2025-11-25 task methods another worker answers from Redis
SHARED_METHODS = ("tasks/get", "tasks/list", "tasks/cancel", "tasks/result")
#: the 2026-07-28 task methods, answered from Redis on every worker
SHARED_METHODS_2026 = tuple(PARAMS_OF_2026)


class Mirror:
    """Copies a runtime's task moves to Redis, in the order they were made."""

    def __init__(self, tasks: RedisTasks, runtime: TaskRuntime) -> None:
        self.tasks = tasks
        self.runtime = runtime
        self.queue: asyncio.Queue[Callable[[], Awaitable[Any]]] = asyncio.Queue()
        self.copied: dict[str, str] = {}  # task id -> its revision
        self.owners: set[str] = set()  # sessions with a task created on this worker
        self._runner: asyncio.Task[None] | None = None
        self._renewer: asyncio.Task[None] | None = None
        self.failures = 0

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._runner = loop.create_task(self._run())
        self._renewer = loop.create_task(self._renew())
        self.runtime.mirror = self

    def stop(self) -> None:
        for t in (self._runner, self._renewer):
            if t is not None:
                t.cancel()

    async def _run(self) -> None:
        while True:
            op = await self.queue.get()
            try:
                await op()
            except TaskError:
                pass  # refused by the store: the task is already terminal there (sticky)
            except Exception:  # noqa: BLE001 - the store failed one move; the lease decides
                self.failures += 1
            finally:
                self.queue.task_done()

    async def _renew(self) -> None:
        """The lease of every task this worker runs, every third of the lease.  A refused
        renewal (the task is terminal in Redis: cancelled by a cancel whose message was lost,
        or failed as lost after a pause of this worker) stops its work here, the local store
        taking the status Redis has."""
        while True:
            await asyncio.sleep(self.tasks.lease_ms / 3000)
            try:
                refused = await self.tasks.renew()
            except Exception:  # noqa: BLE001 - the store is away: the next round tries again
                continue
            for tid in refused:
                t = self.runtime.store.tasks.get(tid)
                if t is None:
                    continue
                try:
                    st = (await self.tasks.state(t.owner, tid)).get("st")
                except Exception:  # noqa: BLE001 - stopping the work is what matters
                    st = None
                if st == CANCELLED:
                    self._stop_local(tid)
                else:
                    self.runtime._stop(tid)  # its end is the local store's failed

    async def drain(self) -> None:
        """Wait until every move made so far is in Redis."""
        await self.queue.join()

    # --- the runtime's moves (Mirror protocol of task_runtime) ---------------------------

    def created(self, owner: str, tid: str, revision: str, ttl_ms: int) -> None:
        self.copied[tid] = revision
        if revision == REV_2025:
            self.owners.add(owner)
        self.queue.put_nowait(lambda: self.tasks.create(owner, revision, ttl_ms, tid))

    def changed(self, owner: str, tid: str, status: str, result: Any) -> None:
        revision = self.copied.get(tid)
        if revision is None:
            return
        t = self.tasks
        legacy = revision == REV_2025
        if status == INPUT_REQUIRED:
            if legacy:  # 2026-07-28: copied with its question (:meth:`asked`)
                self.queue.put_nowait(lambda: t.ask(tid))
        elif status == WORKING:
            self.queue.put_nowait(lambda: t.answer(owner, tid))
        elif status in (COMPLETED, FAILED):
            self.queue.put_nowait(lambda: t.finish(tid, status == COMPLETED, result))
        elif status == CANCELLED:
            # 2025-11-25: the requester's cancel; 2026-07-28: the work stopped on one
            self.queue.put_nowait(lambda: t.cancel(owner, tid) if legacy else t.honour(tid))
        if status in (COMPLETED, FAILED, CANCELLED):
            self.copied.pop(tid, None)

    def asked(self, owner: str, tid: str, key: str, request: dict[str, Any]) -> None:
        """2026-07-28: a question of the work, kept in Redis under its key (``input_required``)."""
        if tid in self.copied:
            self.queue.put_nowait(lambda: self.tasks.ask(tid, key, request))

    def ended(self, owner: str) -> None:
        """The session ended (every worker's view ends it): the workers that created tasks
        in it cancel them in Redis (the same script on each, idempotent); a session without
        a task leaves nothing in Redis."""
        if owner in self.owners:
            self.owners.discard(owner)
            self.queue.put_nowait(lambda: self.tasks.end_session(owner))

    # --- a cancel decided on another worker ----------------------------------------------

    def cancelled(self, tid: str, token: str) -> None:
        """``tasks/cancel`` of ``tid`` on another worker: stop its work here if this worker
        still runs it under ``token``."""
        held = self.tasks.held.get(tid)
        if held is not None and held[1] == str(token):
            self._stop_local(tid)

    def updated(self, tid: str, token: str, responses: Any) -> None:
        """``tasks/update`` of ``tid`` on any worker (2026-07-28): the answers go to the
        questions of its work if this worker still runs it under ``token``."""
        held = self.tasks.held.get(tid)
        t = self.runtime.store.tasks.get(tid)
        if held is None or held[1] != str(token) or t is None or not isinstance(responses, dict):
            return
        try:
            self.runtime.update(t.owner, tid, responses)
        except TaskError:
            pass  # deleted here meanwhile (its ttl): nothing waits on the answers

    def _stop_local(self, tid: str) -> None:
        t = self.runtime.store.tasks.get(tid)
        if t is None:
            return
        try:
            self.runtime.cancel(t.owner, tid)  # the local store cancels; Redis already has
        except TaskError:
            self.runtime._stop(tid)  # terminal here already: only the work is left to stop


async def answer(
    tasks: RedisTasks, runtime: TaskRuntime, sid: str, msg: dict[str, Any]
) -> dict[str, Any] | None:
    """The reply to a 2025-11-25 task method of session ``sid``, from Redis; None when the
    session's own handling applies (its params do not name a task as expected, or it is a
    ``tasks/result`` of a task this worker runs)."""
    method, rid = msg["method"], msg["id"]
    params = msg.get("params") or {}
    if not isinstance(params, dict):
        return None
    tid = params.get("taskId")
    if not isinstance(tid, str):
        if method != "tasks/list":
            return None
        tid = ""
    try:
        if method == "tasks/get":
            res: dict[str, Any] = await tasks.get(sid, tid)
        elif method == "tasks/cancel":
            res = await tasks.cancel(sid, tid)
        elif method == "tasks/list":
            cursor = params.get("cursor")
            views = await tasks.list(sid)
            ids = [v["taskId"] for v in views]
            start = 0
            if cursor is not None:
                if cursor not in ids:
                    raise TaskError("unknown cursor")
                start = ids.index(cursor) + 1
            page = views[start : start + runtime.page]
            res = {"tasks": page}
            if start + runtime.page < len(views):
                res["nextCursor"] = page[-1]["taskId"]
        else:
            if tid in runtime.store.tasks:
                return None
            status, out = await tasks.result(sid, tid)
            if status == CANCELLED:
                return error_reply(rid, cancelled_error())
            if status == FAILED:
                return error_reply(rid, out)
            meta = {**(out.get("_meta") or {}), RELATED_TASK: {"taskId": tid}}
            return {"jsonrpc": "2.0", "id": rid, "result": {**out, "_meta": meta}}
    except TaskError as e:
        return error_reply(rid, error(INVALID_PARAMS, f"Invalid params: {e}"))
    return {"jsonrpc": "2.0", "id": rid, "result": res}


async def answer_2026(tasks: RedisTasks, msg: dict[str, Any]) -> dict[str, Any]:
    """The reply to a 2026-07-28 task method, from Redis: refused as a session refuses it (the
    extension not named, params the schema rejects), then ``tasks/get`` (the task, its result
    or error inlined once terminal, its pending questions while ``input_required``),
    ``tasks/update`` and ``tasks/cancel`` (acknowledged), under the one binding
    :data:`~.api.UNAUTHENTICATED`."""
    method, rid = msg["method"], msg["id"]
    params: Any = msg.get("params")
    refused = refused_2026(rid, method, params)
    if refused is not None:
        return refused
    tid = params["taskId"]
    try:
        if method == "tasks/get":
            res: dict[str, Any] = await tasks.get(UNAUTHENTICATED, tid)
        elif method == "tasks/cancel":
            await tasks.cancel(UNAUTHENTICATED, tid)
            res = {}
        else:
            await tasks.update(UNAUTHENTICATED, tid, params["inputResponses"])
            res = {}
    except TaskError as e:
        return error_reply(rid, error(INVALID_PARAMS, f"Invalid params: {e}"))
    return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **res}}
