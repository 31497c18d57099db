"""The task methods of a session (2025-11-25 tasks; the 2026-07-28 tasks extension), mixed into
:class:`~.server.Session`: a task-augmented ``tools/call`` answered with ``CreateTaskResult``,
``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` and ``tasks/update``, the
questions of a task's work and its status messages.

Every decision on a task is the task runtime's (:mod:`.task_runtime`, over the store of
:mod:`.tasks`, the model's ``fresh-bound``); this part of the session checks the call against
the tool's ``taskSupport`` and the revision, and routes what the runtime returns.  The checks of
a 2026-07-28 task method (:func:`refused_2026`) are module functions, so that a worker that
answers the method from a shared store (:mod:`.redis_task_link`) refuses exactly as a session
does.  Bindings: a 2025-11-25 task belongs to the session that made it (its ``task_owner``); a
2026-07-28 task to :data:`~.api.UNAUTHENTICATED`, the one context of a server without
authorization.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pydantic

from .api import (
    PARAMS_OF,
    PARAMS_OF_2026,
    TASK_METHODS,
    TASKS_EXTENSION,
    UNAUTHENTICATED,
    Server,
    Tool,
    content,
    tool_error,
)
from .context import Context, JsonRpcError, RequestFailed, TaskContext
from .messages import (
    CLIENT_CAPABILITIES_META_KEY,
    INVALID_PARAMS,
    LEGACY,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN,
    error,
    error_reply,
)
from .task_runtime import CANCELLED, RELATED_TASK, REV_2026, TaskError, cancelled_error

__all__ = ["SessionTasks", "declares_tasks", "missing_tasks", "refused_2026", "refused_params"]


def refused_params(rid: Any, e: pydantic.ValidationError) -> Any:
    """The -32602 reply naming the first place where ``e`` found the params wrong."""
    first = e.errors()[0]
    where = ".".join(str(x) for x in first["loc"])
    return error_reply(rid, error(INVALID_PARAMS, f"Invalid params: {where}: {first['msg']}"))


def declares_tasks(params: Any) -> bool:
    """2026-07-28: whether the request's client capabilities name the tasks extension."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    caps = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    ext = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(ext, dict) and TASKS_EXTENSION in ext


def missing_tasks(rid: Any, what: str) -> dict:
    """The -32021 reply of a call that needs the tasks extension the request does not name."""
    return error_reply(
        rid,
        error(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"{what} needs the client capability extensions.{TASKS_EXTENSION}",
            {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        ),
    )


def refused_2026(rid: Any, method: str, params: Any) -> dict | None:
    """The refusal of a 2026-07-28 task method before any task is looked up (the extension
    not named: -32021; params the schema rejects: -32602), else None."""
    if not declares_tasks(params):
        return missing_tasks(rid, method)
    try:
        PARAMS_OF_2026[method].model_validate(params or {}, by_name=False)
    except pydantic.ValidationError as e:
        return refused_params(rid, e)
    return None


class SessionTasks:
    """The task methods of :class:`~.server.Session` (a mixin: the session's attributes and
    methods it uses are declared here, set and defined by the session)."""

    server: Server
    revision: str
    transport: str
    ended: bool
    task_owner: str
    _task_works: int
    _made_tasks: bool
    _waiting: dict[str, set[Any]]
    _channel: Any
    _result_watchers: set[asyncio.Event]
    on_idle: Callable[[Any], None] | None
    notify: Callable[[Any, Any, Any], bool]
    server_request: Callable[..., Any]
    _done: Callable[[Any, Any], None]
    idle: Callable[[], bool]

    def _serves_task_methods(self, method: str) -> bool:
        return (
            method in (TASK_METHODS if self.revision == LEGACY else PARAMS_OF_2026)
            and method not in self.server.methods
            and self.server.serves_tasks
        )

    def _own_tool(self, params: Any) -> bool:
        return isinstance(params, dict) and params.get("name") in self.server.tools

    def _task_call(self, h: Any, rid: Any, tool: Tool, params: dict) -> dict | None:
        """A 2025-11-25 ``tools/call`` as a task: its ``CreateTaskResult`` (the tool runs on
        as the task's work), an error reply when the call and the tool's ``taskSupport``
        disagree, or None for an ordinary call.  A server with no tool that runs as a task
        declares no ``tasks`` capability and ignores ``params.task`` (2025-11-25 tasks: task
        support and handling)."""
        if not self.server.serves_tasks:
            return None
        if self.revision == MODERN:
            return self._task_call_2026(h, rid, tool, params)
        asked = params.get("task")
        support = tool.task_support
        if asked is None:
            if support == "required":
                return error_reply(
                    rid,
                    error(METHOD_NOT_FOUND, f"Tool {tool.name!r} must be called as a task"),
                )
            return None
        if support not in ("optional", "required"):
            return error_reply(
                rid, error(METHOD_NOT_FOUND, f"Tool {tool.name!r} does not run as a task")
            )
        ttl = asked.get("ttl")
        if ttl is not None and ttl < 0:
            return error_reply(rid, error(INVALID_PARAMS, "Invalid params: task.ttl is negative"))
        runtime = self.server.task_runtime
        runtime.listeners[self.task_owner] = self.task_message
        self._made_tasks = True
        if self.transport == "stdio":
            self._channel = h.data
        ctx = TaskContext(self, h, params)
        view = runtime.create(
            self.task_owner, ttl, self._task_work(tool, params, ctx), ctx.cancelled
        )
        ctx.task_id = view["taskId"]
        return {"jsonrpc": "2.0", "id": rid, "result": {"task": view}}

    def _task_call_2026(self, h: Any, rid: Any, tool: Tool, params: dict) -> dict | None:
        """2026-07-28 (SEP-2663): the server decides.  A tool that may run as a task runs as
        one when the request's client capabilities name the extension (``params.task`` is
        ignored); without it the call is ordinary, and a tool that must be a task is refused
        (-32021, the extension named in ``requiredCapabilities``)."""
        support = tool.task_support
        if support not in ("optional", "required"):
            return None
        if not declares_tasks(params):
            if support == "required":
                return missing_tasks(rid, f"Tool {tool.name!r}")
            return None
        ctx = TaskContext(self, h, params)
        view = self.server.task_runtime.create(
            UNAUTHENTICATED, None, self._task_work(tool, params, ctx), ctx.cancelled, REV_2026
        )
        ctx.task_id = view["taskId"]
        return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "task", **view}}

    async def _task_work(self, tool: Tool, params: dict, ctx: TaskContext) -> tuple[bool, Any]:
        """A task's work: the tool's result, a tool error being a result (``isError``), as in
        an ordinary call.  2026-07-28: a :class:`JsonRpcError` raised by the tool is a protocol
        error, and the task fails with it (SEP-2663, error semantics)."""
        ctx.started = True
        self._task_works += 1
        try:
            try:
                args = tool.arguments(params.get("arguments"))
            except pydantic.ValidationError as e:
                return True, tool_error(f"invalid arguments: {e}")
            try:
                return True, content(await tool.fn(ctx, **args))
            except JsonRpcError as e:
                if self.revision == MODERN:
                    return False, e.error
                return True, tool_error(str(e))
            except RequestFailed as e:
                return True, tool_error(str(e))
            except Exception as e:
                return True, tool_error(f"{type(e).__name__}: {e}")
        finally:
            self._task_works -= 1
            if self.on_idle is not None and self.idle():
                self.on_idle(self)

    def _task_method(self, h: Any, rid: Any, method: str, params: Any) -> dict | None:
        """``tasks/get``, ``tasks/list``, ``tasks/cancel`` answered at once; ``tasks/result``
        of a task this session may read: None (it waits, :meth:`_task_result`).  Another
        session's task id gets the answer of an unknown one (-32602)."""
        if self.revision == MODERN:
            return self._task_method_2026(rid, method, params)
        try:
            PARAMS_OF[method].model_validate(params or {}, by_name=False)
        except pydantic.ValidationError as e:
            return refused_params(rid, e)
        runtime = self.server.task_runtime
        owner = self.task_owner
        if self.transport == "stdio":
            self._channel = h.data
        try:
            if method == "tasks/list":
                res: dict = runtime.list(owner, (params or {}).get("cursor"))
            elif method == "tasks/get":
                res = runtime.get(owner, params["taskId"])
            elif method == "tasks/cancel":
                res = runtime.cancel(owner, params["taskId"])
            else:
                runtime.get(owner, params["taskId"])  # refused here when not this session's
                return None
        except TaskError as e:
            return error_reply(rid, error(INVALID_PARAMS, f"Invalid params: {e}"))
        return {"jsonrpc": "2.0", "id": rid, "result": res}

    def _task_method_2026(self, rid: Any, method: str, params: Any) -> dict:
        """``tasks/get`` (the task, its result or error inlined once terminal), ``tasks/update``
        and ``tasks/cancel`` (empty acknowledgements), all answered at once; refused (-32021)
        unless the request's client capabilities name the extension."""
        refused = refused_2026(rid, method, params)
        if refused is not None:
            return refused
        runtime = self.server.task_runtime
        tid = params["taskId"]
        try:
            if method == "tasks/get":
                res: dict = runtime.get(UNAUTHENTICATED, tid)
            elif method == "tasks/cancel":
                runtime.cancel(UNAUTHENTICATED, tid)
                res = {}
            else:
                runtime.update(UNAUTHENTICATED, tid, params["inputResponses"])
                res = {}
        except TaskError as e:
            return error_reply(rid, error(INVALID_PARAMS, f"Invalid params: {e}"))
        return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **res}}

    async def _task_result(self, h: Any, rid: Any, tid: str, ctx: Context) -> None:
        """``tasks/result``: waits until the task is terminal, then answers what its
        ``tools/call`` would have (a cancelled task: an error).  Status notifications of the
        task go on this request's stream while it waits."""
        ctx.started = True
        reply = None
        waiting = self._waiting.setdefault(tid, set())
        waiting.add(h)
        for watcher in self._result_watchers:
            watcher.set()
        try:
            try:
                status, res = await self.server.task_runtime.result(self.task_owner, tid)
            except TaskError as e:
                reply = error_reply(rid, error(INVALID_PARAMS, f"Invalid params: {e}"))
            else:
                if status == CANCELLED:
                    reply = error_reply(rid, cancelled_error())
                elif status == "failed":
                    reply = error_reply(rid, res)
                else:
                    meta = {**(res.get("_meta") or {}), RELATED_TASK: {"taskId": tid}}
                    reply = {"jsonrpc": "2.0", "id": rid, "result": {**res, "_meta": meta}}
        except asyncio.CancelledError:
            reply = None
        finally:
            waiting.discard(h)
            if not waiting:
                self._waiting.pop(tid, None)
            self._done(h, reply)

    async def task_question(self, tid: str, method: str, params: dict) -> dict:
        """2025-11-25: a question of task ``tid``'s work.  The task goes ``input_required``;
        the question waits for a ``tasks/result`` of the task, is sent on its stream with the
        ``related-task`` key, and its answer makes the task work again.  Raises
        :class:`RequestFailed` when the client answers with an error or the stream goes."""
        runtime = self.server.task_runtime
        runtime.asking(tid)
        while True:
            handle = next(iter(self._waiting.get(tid, ())), None)
            if handle is not None:
                break
            called = asyncio.Event()
            self._result_watchers.add(called)
            try:
                await called.wait()
            finally:
                self._result_watchers.discard(called)
        meta = {**(params.get("_meta") or {}), RELATED_TASK: {"taskId": tid}}
        answer = await self.server_request(handle, method, {**params, "_meta": meta})
        runtime.answered(self.task_owner, tid)
        return answer

    def task_message(self, tid: str, msg: dict[str, Any]) -> bool:
        """A message of task ``tid`` (its status, its work's progress and logs), which belongs
        to no open request: on stdio the channel; on HTTP each ``tasks/result`` stream waiting
        on the task (where the core routes it), else nowhere (the spec makes status
        notifications optional, and a client polls).  Returns whether it was written."""
        if self.ended:
            return False
        if self.transport == "stdio":
            if self._channel is None:
                return False
            self._channel.send(msg)
            return True
        sent = False
        for handle in list(self._waiting.get(tid, ())):
            sent = self.notify(handle, msg["method"], msg["params"]) or sent
        return sent
