"""The task methods on a worker of a shared deployment (:mod:`.redis_http`): answered from the
Redis store (:mod:`.redis_task_link`) rather than by the worker's session view, for both
revisions, and the status notifications of a task on a ``tasks/result`` stream of any worker.

Status notifications across workers (2025-11-25).  In one process each status change of a
task is sent as ``notifications/tasks/status`` on every ``tasks/result`` stream waiting on that
task (the session's :meth:`~.session_tasks.SessionTasks.task_message`).  With several workers
the change is made by the task's runner, but the stream may be held by another worker.  Every
status change is published on the owner's status channel by the script that made it
(:mod:`.redis_tasks`), so the worker holding the ``tasks/result`` stream, subscribed while it
waits, sends each change of that task on the stream, in the order the scripts made them, and
then the result: the same messages, on the same stream, as in one process.  A ``tasks/result``
of a task that is already terminal is answered at once with one JSON body, as before; one that
waits answers with an event stream.  As in one process, nothing is sent where no
``tasks/result`` waits (the spec makes the notifications optional: requesters poll).  Pub/sub
is at most once, so a notification can be lost (the result never is: the wait also polls).
"""

from __future__ import annotations

import asyncio
from typing import Any

from .asgi_types import Receive, Send
from .core import typed_id
from .messages import LEGACY, dumps
from .redis_streams import RedisSession
from .redis_task_link import SHARED_METHODS, SHARED_METHODS_2026, answer, answer_2026
from .streams import SSE_HEADERS, reply, sse_event
from .task_runtime import STATUS_METHOD
from .tasks import NotReady, TaskError

__all__ = ["shared_task_method", "shared_reply_2026"]


async def shared_task_method(
    shared: Any, session: RedisSession, msg: dict[str, Any], receive: Receive, send: Send
) -> bool:
    """A 2025-11-25 task method answered from Redis after the store's check of the id (a
    duplicate refused as any request's); True once answered, False: the session's own
    handling (a ``tasks/result`` of a task this worker runs included)."""
    server = shared.app.server
    if (
        shared.mirror is None
        or msg["method"] not in SHARED_METHODS
        or session.revision != LEGACY
        or not server.serves_tasks
        or msg["method"] in server.methods
    ):
        return False
    tok = await shared.store.claim(session.sid, typed_id(msg["id"]), False, None)
    if tok <= 0:
        return False  # refused: the ordinary path claims again and answers the refusal
    tasks, runtime = shared.mirror.tasks, server.task_runtime
    params = msg.get("params")
    tid = params.get("taskId") if isinstance(params, dict) else None
    if msg["method"] == "tasks/result" and isinstance(tid, str):
        if tid not in runtime.store.tasks and await _waits(tasks, session.sid, tid):
            await _result_stream(tasks, runtime, session.sid, msg, tid, receive, send)
            return True
    out = await answer(tasks, runtime, session.sid, msg)
    if out is None:
        return False
    await reply(send, 200, dumps(out))
    return True


async def _waits(tasks: Any, owner: str, tid: str) -> bool:
    """Whether ``tasks/result`` of ``tid`` would wait (the task is the owner's and live)."""
    try:
        await tasks.result_now(owner, tid)
    except NotReady:
        return True
    except TaskError:
        return False
    return False


async def _result_stream(
    tasks: Any,
    runtime: Any,
    owner: str,
    msg: dict[str, Any],
    tid: str,
    receive: Receive,
    send: Send,
) -> None:
    """``tasks/result`` as an event stream: each status change of the task as it is
    published, then the reply; ends early when the client goes away."""
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})

    async def status(view: dict[str, Any]) -> None:
        note = {"jsonrpc": "2.0", "method": STATUS_METHOD, "params": view}
        await send({"type": "http.response.body", "body": sse_event(note), "more_body": True})

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    waiting = asyncio.ensure_future(tasks.result(owner, tid, on_status=status))
    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait((waiting, watcher), return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            return  # the client went away: nothing more to write
        if isinstance(waiting.exception(), OSError):
            return  # a notification found the client gone
        # an unknown task now (its ttl ran out meanwhile) is answered below, from the store
        out = await answer(tasks, runtime, owner, msg)
        body = sse_event(out) if out is not None else b""
        await send({"type": "http.response.body", "body": body, "more_body": False})
    finally:
        for t in (waiting, watcher):
            t.cancel()


async def shared_reply_2026(shared: Any, msg: dict[str, Any]) -> dict[str, Any] | None:
    """2026-07-28: a task method of the extension, answered from Redis on every worker
    (:func:`.redis_task_link.answer_2026`); None: the request's own handling."""
    server = shared.app.server
    if (
        shared.mirror is None
        or msg["method"] not in SHARED_METHODS_2026
        or not server.serves_tasks
        or msg["method"] in server.methods
    ):
        return None
    return await answer_2026(shared.mirror.tasks, msg)
