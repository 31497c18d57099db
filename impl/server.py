"""A small MCP server API over the sans-IO core, shared by the stdio and HTTP adapters.

One cohesive thing, kept in one module on purpose: the server API (tools, methods, the handler's
context) and the session that runs it share the core's answers and the handler's errors, and
neither is used alone.  The messages they speak (revisions, error codes, decoding one message)
are :mod:`.messages`, whose names stay importable from here.

Writing a server::

    from mcp_inflight.impl.server import Server

    server = Server("demo")

    @server.tool()
    async def slow(ctx, label: str, steps: int = 3, delay: float = 0.1) -> str:
        for k in range(steps):
            await asyncio.sleep(delay)
            await ctx.progress(k + 1, steps, f"{label} {k + 1}/{steps}")
            await ctx.log(f"{label}: step {k + 1}")
        return f"done:{label}"

then ``mcp_inflight.impl.http.create_app(server)`` (ASGI) or
``mcp_inflight.impl.stdio.serve_stdio(server)``.

A tool handler is an ``async def`` whose first parameter is the :class:`Context` and whose
other parameters are the tool's arguments; their annotations and defaults become the tool's
``inputSchema`` and are validated by pydantic (an invalid call is a tool error, ``isError``).
It returns a string (one text block), a list of content blocks, or a dict (a full result).
The context gives ``progress(...)``, ``log(...)``, ``elicit(...)``, ``sample(...)`` and
``cancelled`` (an ``asyncio.Event``; the handler's task is also cancelled, so the next
``await`` raises ``CancelledError``).

Validation: incoming messages are checked with ``mcp_types`` 2.3.0 (the pydantic models of the
MCP schema that ship with the official ``mcp`` package): the JSON-RPC envelope
(``mcp_types.jsonrpc``) and each request's and notification's params for the negotiated
revision (``mcp_types.methods.validate_client_request``), so the schema is the official one
and per-revision (a method removed in 2026-07-28, such as ``initialize``' successors, is
refused there as unknown).  Ids are checked first by :func:`impl.core.typed_id`, which keeps
their JSON type.

Every lifecycle decision (admit or refuse, where a message goes, what a cancel hits, when an
id is free) is the core's, that is the model's.  This module routes what the core returns.

Revisions: 2025-11-25 (``initialize``, sessions, server-to-client requests on the originating
request's stream) and 2026-07-28 (``server/discover``, per-request ``_meta``; elicitation,
sampling and roots come back as an ``InputRequiredResult`` and the client retries with the
answers; the handler re-runs, and the answers of earlier rounds come back in a sealed
``requestState``, see :mod:`.request_state`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as T
import pydantic
from mcp_types import methods as M

from .core import Admitted, Handle, Refused, SessionCore
from .messages import (
    CLIENT_CAPABILITIES_META_KEY,
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY,
    LOG_LEVEL_META_KEY,
    LOG_LEVELS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN,
    PARSE_ERROR,
    PROTOCOL_VERSION_META_KEY,
    REVISIONS,
    SERVER_INFO_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    Incoming,
    classify,
    dumps,
    encode_message,
    error,
    error_reply,
    loads,
    parse,
)
from .request_state import RequestStates, StateLimit, StateRefused, call_binding
from .subscriptions import LISTEN, UPDATED, Subscriptions, listen
from .task_runtime import (
    CANCELLED,
    RELATED_TASK,
    REV_2026,
    TaskError,
    TaskRuntime,
    cancelled_error,
)

#: the server API, and the messages' names (:mod:`.messages`), importable from here
__all__ = [
    "Answered",
    "Outlet",
    "Refused",
    "Running",
    "Tool",
    "Server",
    "JsonRpcError",
    "RequestFailed",
    "Context",
    "Session",
    "LEGACY",
    "MODERN",
    "REVISIONS",
    "HANDSHAKE_VERSIONS",
    "SERVER_INFO_META_KEY",
    "LOG_LEVEL_META_KEY",
    "CLIENT_CAPABILITIES_META_KEY",
    "LOG_LEVELS",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "HEADER_MISMATCH",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PROTOCOL_VERSION_META_KEY",
    "error",
    "error_reply",
    "encode_message",
    "dumps",
    "loads",
    "Incoming",
    "parse",
    "classify",
]

# --- what a session writes to, and what an arrival comes to -----------------------------------


class Outlet(Protocol):
    """What an adapter gives a session for one request's channel: ``send`` writes a message on
    it, ``close`` ends it (HTTP: the POST's response; stdio: nothing, the channel is shared).
    The core decides which outlet gets what: ``handle.data`` is the outlet of the request that
    handle stands for."""

    def send(self, msg: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class Answered:
    """A request answered at once, within the step that admitted it: ``reply`` is the message
    to send (None: the core routed it nowhere)."""

    reply: dict[str, Any] | None  # (not frozen: made per request, as the core's Admitted)


@dataclass(slots=True)
class Running:
    """A request whose handler runs: it writes on its outlet, then closes it."""

    handle: Handle  # (not frozen: made per request, as the core's Admitted)


#: what :meth:`Session.request` comes to: :class:`~.core.Refused` (a duplicate of an id in
#: flight: its ``error`` to send), :class:`Answered` or :class:`Running`
Arrival = Refused | Answered | Running


# --- tools -------------------------------------------------------------------------------------


#: the values of a tool's ``execution.taskSupport`` (2025-11-25 tasks, tool-level negotiation)
TASK_SUPPORT = ("forbidden", "optional", "required")


class Tool:
    def __init__(
        self, fn: Callable, name: str, description: str | None, task_support: str | None = None
    ) -> None:
        if task_support is not None and task_support not in TASK_SUPPORT:
            raise ValueError(
                f"tool {name!r}: task_support must be one of {', '.join(TASK_SUPPORT)}"
            )
        self.fn = fn
        self.name = name
        #: whether a call may (``optional``) or must (``required``) run as a task
        self.task_support = task_support
        self.description = description or (inspect.getdoc(fn) or "").split("\n\n")[0] or None
        params = list(inspect.signature(fn).parameters.values())[1:]
        fields = {}
        for p in params:
            ann = Any if p.annotation is inspect.Parameter.empty else p.annotation
            default = ... if p.default is inspect.Parameter.empty else p.default
            fields[p.name] = (ann, default)
        self.model = pydantic.create_model(f"{name}_arguments", **fields)  # type: ignore[call-overload]
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.input_schema = schema
        self.listing = {"name": name, "inputSchema": schema}
        if self.description:
            self.listing["description"] = self.description
        if task_support is not None:
            self.listing["execution"] = {"taskSupport": task_support}

    def arguments(self, raw: Any) -> dict:
        return self._validate(raw if raw is not None else {}).__dict__

    @property
    def _validate(self) -> Any:
        return self.model.__pydantic_validator__.validate_python


def _tool_error(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


#: the 2025-11-25 task methods, and the schema of their params (``mcp_types``)
PARAMS_OF: dict[str, Any] = {
    "tasks/get": T.GetTaskRequestParams,
    "tasks/result": T.GetTaskPayloadRequestParams,
    "tasks/cancel": T.CancelTaskRequestParams,
    "tasks/list": T.PaginatedRequestParams,
}
TASK_METHODS = frozenset(PARAMS_OF)
#: the methods of the 2026-07-28 tasks extension (``tasks/result`` and ``tasks/list`` are gone)
PARAMS_OF_2026: dict[str, Any] = {
    "tasks/get": T.GetTaskRequestParams,
    "tasks/cancel": T.CancelTaskRequestParams,
    "tasks/update": pydantic.create_model(
        "UpdateTaskParams", taskId=(str, ...), inputResponses=(dict[str, Any], ...)
    ),
}
ALL_TASK_METHODS = TASK_METHODS | frozenset(PARAMS_OF_2026)


def _content(value: Any) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}], "isError": False}
    if isinstance(value, list):
        return {"content": value, "isError": False}
    return {"content": [{"type": "text", "text": json.dumps(value)}], "isError": False}


#: the default bound on the ``capabilities`` an ``initialize`` may carry (compact JSON bytes)
MAX_CLIENT_CAPABILITIES = 16 * 1024


class Server:
    """Tools and server identity; transport-independent."""

    def __init__(
        self,
        name: str = "mcp-inflight",
        version: str = "0.1.0",
        instructions: str | None = None,
        capabilities: dict | None = None,
        revision_capabilities: dict | None = None,
        request_states: RequestStates | None = None,
        max_client_capabilities: int | None = MAX_CLIENT_CAPABILITIES,
        max_task_ttl_ms: int = 3_600_000,
    ) -> None:
        """``capabilities``: capabilities advertised on every revision, besides ``tools`` and
        ``logging``.  ``revision_capabilities``: per revision (``"2025-11-25"``,
        ``"2026-07-28"``), capabilities that replace those of the same name on that revision
        only, e.g. ``{"2025-11-25": {"resources": {"subscribe": True}}}`` for a server that
        serves ``resources/subscribe`` (2025-11-25) but not ``subscriptions/listen``
        (2026-07-28).  ``request_states``: what seals and checks the ``requestState`` of
        2026-07-28 input-required rounds (default: a random key of this process; give
        ``RequestStates(secret=...)`` to processes that must accept each other's states).
        ``max_client_capabilities``: the largest ``capabilities`` an ``initialize`` may carry,
        in bytes of compact JSON (default 16 KiB; None: no bound); a larger one is refused
        (-32602) and no session is made.  A session keeps the client's capabilities as that
        compact JSON text, never as the parsed tree (which costs about 24 times as much).
        ``max_task_ttl_ms``: the longest a task is kept (a 2025-11-25 task asks for its ttl; a
        longer one, or none, gets this; a 2026-07-28 task gets this)."""
        self.max_client_capabilities = max_client_capabilities
        self.max_task_ttl_ms = max_task_ttl_ms
        self._task_runtime: TaskRuntime | None = None
        self._tasks_known: tuple[int, int] = (0, -1)
        self._serves_tasks = False
        self.name = name
        self.version = version
        self.instructions = instructions
        self.tools: dict[str, Tool] = {}
        self.methods: dict[str, Callable] = {}
        self.extra_capabilities = dict(capabilities or {})
        per = dict(revision_capabilities or {})
        unknown = sorted(set(per) - set(REVISIONS))
        if unknown:
            raise ValueError(
                f"revision_capabilities: unknown revision(s) {', '.join(unknown)}; "
                f"known: {', '.join(REVISIONS)}"
            )
        self.revision_capabilities = {rev: dict(per.get(rev) or {}) for rev in REVISIONS}
        self.request_states = request_states or RequestStates()
        self.subscriptions = Subscriptions()

    # --- 2026-07-28 subscriptions/listen (impl/subscriptions.py) ---------------------------------
    def list_changed(self, kind: str) -> int:
        """The ``kind`` list (``"tools"``, ``"prompts"``, ``"resources"``) changed: tell every
        live subscription that asked for it; how many were told."""
        return self.subscriptions.announce(f"notifications/{kind}/list_changed")

    def resource_updated(self, uri: str) -> int:
        """The resource ``uri`` changed: tell every live subscription that names it."""
        return self.subscriptions.announce(UPDATED, uri)

    def end_subscriptions(self) -> int:
        """End every live subscription; each listen request is answered (graceful closure)."""
        return self.subscriptions.end_all()

    def method(self, name: str) -> Any:
        """Register ``async def handler(ctx, params) -> dict`` (the JSON-RPC result) for a request
        method, e.g. ``resources/read`` or ``prompts/get``; it replaces the built-in handling of
        that method (``tools/list``, ``tools/call``).  Raise :class:`JsonRpcError` to answer with
        an error.  Params are validated against the MCP schema when the method is in it."""

        def register(fn: Any) -> Any:
            if not inspect.iscoroutinefunction(fn):
                raise TypeError(f"method {name!r}: the handler must be an async function")
            self.methods[name] = fn
            return fn

        return register

    def tool(
        self,
        name: str | None = None,
        description: str | None = None,
        task_support: str | None = None,
    ) -> Any:
        """Register an ``async def handler(ctx, **arguments)`` as a tool.  ``task_support`` (the
        tool's ``execution.taskSupport``): ``"optional"`` lets a call run as a task (2025-11-25:
        when its params carry ``task``; 2026-07-28: when the request names the tasks
        extension), ``"required"`` makes every call one; None or ``"forbidden"``: never."""

        def register(fn: Any) -> Any:
            self.add_tool(fn, name, description, task_support)
            return fn

        return register

    def add_tool(
        self,
        fn: Callable,
        name: str | None = None,
        description: str | None = None,
        task_support: str | None = None,
    ) -> Tool:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"tool {fn.__name__!r}: the handler must be an async function")
        t = Tool(fn, name or fn.__name__, description, task_support)
        self.tools[t.name] = t
        self._tasks_known = (0, -1)  # a tool of the same name may have been replaced
        return t

    @property
    def serves_tasks(self) -> bool:
        """Whether some tool may run as a task (the ``tasks`` capability on 2025-11-25, the
        tasks extension on 2026-07-28); read on every ``tools/call``, so kept until the
        tools change."""
        tools = self.tools
        if self._tasks_known != (id(tools), len(tools)):
            self._tasks_known = (id(tools), len(tools))
            self._serves_tasks = any(
                t.task_support in ("optional", "required") for t in tools.values()
            )
        return self._serves_tasks

    @property
    def task_runtime(self) -> TaskRuntime:
        """The server's tasks, shared by its sessions (made when first needed)."""
        if self._task_runtime is None:
            self._task_runtime = TaskRuntime(self.max_task_ttl_ms)
        return self._task_runtime

    @property
    def info(self) -> dict:
        return {"name": self.name, "version": self.version}

    @property
    def capabilities(self) -> dict:
        """The capabilities common to every revision (see :meth:`capabilities_for`)."""
        return {"tools": {"listChanged": False}, "logging": {}, **self.extra_capabilities}

    def capabilities_for(self, revision: str) -> dict:
        """The capabilities advertised on ``revision`` (initialize's result on 2025-11-25,
        server/discover's on 2026-07-28)."""
        caps = {**self.capabilities, **self.revision_capabilities.get(revision, {})}
        if self.serves_tasks:
            if revision == LEGACY and "tasks" not in caps:
                caps["tasks"] = TASK_CAPABILITY
            elif revision == MODERN:
                caps["extensions"] = {TASKS_EXTENSION: {}, **(caps.get("extensions") or {})}
        return caps


#: the 2026-07-28 tasks extension (SEP-2663), advertised under ``capabilities.extensions``
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: 2026-07-28: whose tasks a request's are.  SEP-2663 binds a task to the authorization
#: context of its requester; this server has none, so every 2026-07-28 request shares one, and
#: a task is protected by its unguessable id alone (as the extension allows without auth)
UNAUTHENTICATED = "2026-07-28: no authorization context"
#: the ``tasks`` capability of a server serving task-augmented ``tools/call`` (2025-11-25)
TASK_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


# --- the handler's view ----------------------------------------------------------------------


class JsonRpcError(Exception):
    """Raised by a handler: answer the request with this JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.error = error(code, message, data)


class RequestFailed(Exception):
    """A server-to-client request could not be made or was answered with an error."""

    def __init__(self, err: dict) -> None:
        self.error = err
        super().__init__(err.get("message", "request failed"))


class _InputRequired(Exception):
    """2026-07-28: the handler needs the client's input; the call returns InputRequiredResult
    (raised by the first question of this run that the answers so far do not cover)."""

    def __init__(self, key: str, request: dict) -> None:
        self.key = key
        self.request = request


_UNREAD = object()


class Context:
    """What a tool handler gets: progress, log, elicit, sample and the cancellation signal."""

    _caps: Any

    @property
    def client_capabilities(self) -> Any:
        """The client's capabilities: the request's (2026-07-28) or its session's."""
        if self._caps is _UNREAD:
            self._caps = self.session.client_capabilities
        return self._caps

    @client_capabilities.setter
    def client_capabilities(self, value: Any) -> None:
        self._caps = value

    def __init__(self, session: Session, handle: Any, params: dict) -> None:
        self.session = session
        self.handle = handle
        self.request_id = handle.id
        meta = params.get("_meta")
        if not isinstance(meta, dict):  # a custom method's params are not schema-checked
            meta = {}
        self.progress_token = meta.get("progressToken")
        self.protocol_version = session.revision
        # 2026-07-28: the request's own; 2025-11-25: the session's, read when first asked for
        self._caps = (
            meta.get(CLIENT_CAPABILITIES_META_KEY) if session.revision == MODERN else _UNREAD
        )
        self.cancelled = asyncio.Event()
        responses = params.get("inputResponses")
        self.input_responses = responses if isinstance(responses, dict) else {}
        self.log_level = meta.get(LOG_LEVEL_META_KEY)
        self._asked = 0
        # 2026-07-28 rounds: the answers this run may use (from a verified requestState and the
        # retry's inputResponses for the keys it asked), the round they come from, and the call
        # the next requestState is bound to; set by the session before the handler runs
        self._answers: dict = {}
        self._round = 0
        self._binding = ""
        self.started = False  # the handler's task has taken its first step

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Report progress (only if the request carried a progress token).  Returns whether the
        notification was written (False: no token, or the core dropped it)."""
        if self.progress_token is None:
            return False
        params = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self._emit("notifications/progress", params)

    async def log(self, data: Any, level: str = "info", logger: str | None = None) -> bool:
        """A ``notifications/message`` on this request's stream (if the level passes)."""
        floor: Any = self.session.log_level
        if self.session.revision == MODERN:
            # 2026-07-28: only requests that opt in with a level in _meta get log messages
            floor = self.log_level
            if floor not in LOG_LEVELS:
                return False
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(floor):
            return False
        params = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        return self._emit("notifications/message", params)

    async def elicit(self, message: str, schema: dict | None = None) -> dict:
        """Ask the user (``elicitation/create``, form mode); returns the ElicitResult dict."""
        params = {
            "mode": "form",
            "message": message,
            "requestedSchema": schema or {"type": "object", "properties": {}},
        }
        return await self._ask("elicitation/create", params)

    async def sample(self, messages: list, max_tokens: int = 256, **extra: Any) -> dict:
        """Ask the client's model (``sampling/createMessage``); returns the CreateMessageResult."""
        params = {"messages": messages, "maxTokens": max_tokens, **extra}
        return await self._ask("sampling/createMessage", params)

    async def list_roots(self) -> dict:
        """Ask for the client's roots (``roots/list``); returns the ListRootsResult."""
        return await self._ask("roots/list", {})

    async def request(self, method: str, params: dict) -> dict:
        """A server-to-client request tied to this request (2025-11-25: sent on its stream and
        awaited; 2026-07-28: returned to the client in an InputRequiredResult, answered by its
        retry).  Returns the client's result; raises :class:`RequestFailed` on an error."""
        return await self._ask(method, params)

    async def notify(self, method: str, params: dict | None = None) -> bool:
        """A notification on this request's stream (where the core routes it)."""
        return self._emit(method, params or {})

    def _emit(self, method: str, params: dict) -> bool:
        return self.session.notify(self.handle, method, params)

    async def _ask(self, method: Any, params: Any) -> dict:
        self._asked += 1
        if self.session.revision == MODERN:
            # The handler re-runs from its start on each retry: its n-th question has the same
            # key on every run, so an answer given in an earlier round answers it again.
            key = f"{method}#{self._asked}"
            if key in self._answers:
                return self._answers[key]
            raise _InputRequired(key, {"method": method, "params": params})
        return await self.session.server_request(self.handle, method, params)


class TaskContext(Context):
    """The context of a tool call running as a task.  Its request was answered with
    ``CreateTaskResult``, so the request's stream is gone and, in the request lifecycle the
    core follows (``model/session.py``), so are the request's notifications: ``progress``,
    ``log`` and ``notify`` send nothing and return False (the tasks page lets a task's
    progress token live on; the models do not say where such messages go yet).  ``cancelled``
    is set by ``tasks/cancel``, the session's end and the ttl."""

    task_id = ""

    def _emit(self, method: str, params: dict) -> bool:
        return False

    async def _ask(self, method: Any, params: Any) -> dict:
        """The task goes ``input_required`` until the question is answered.  2026-07-28: it
        waits, under a key of its own, for ``tasks/update`` (SEP-2663); questions asked at once
        wait together.  2025-11-25: it is sent on a ``tasks/result`` stream waiting on the task
        (the requester calls ``tasks/result`` on ``input_required``), with the task's
        ``related-task`` key, and answered there."""
        if self.session.revision != MODERN:
            return await self.session.task_question(self.task_id, method, params)
        self._asked += 1
        key = f"{method}#{self._asked}"
        request = {"method": method, "params": params}
        return await self.session.server.task_runtime.ask(self.task_id, key, request)


def _refused_params(rid: Any, e: pydantic.ValidationError) -> Any:
    """The -32602 reply naming the first place where ``e`` found the params wrong."""
    first = e.errors()[0]
    where = ".".join(str(x) for x in first["loc"])
    return error_reply(rid, error(INVALID_PARAMS, f"Invalid params: {where}: {first['msg']}"))


def _invalid_params(rid: Any, method: Any, version: Any, params: Any) -> Any:
    """The error reply for a request the MCP schema of ``version`` rejects, else None."""
    try:
        M.validate_client_request(method, version, params)
    except KeyError:
        return error_reply(rid, error(METHOD_NOT_FOUND, f"Method not found: {method} ({version})"))
    except pydantic.ValidationError as e:
        return _refused_params(rid, e)
    return None


# --- one session -----------------------------------------------------------------------------


class Session:
    """One MCP session (stdio: the process; HTTP 2025-11-25: an ``Mcp-Session-Id``; HTTP
    2026-07-28: one POST).  Messages in, replies out through each request's outlet.

    Each request's channel is the adapter's :class:`Outlet`; the core decides which outlet gets
    what (``handle.data`` is the outlet of the request that handle stands for).
    """

    def __init__(self, server: Server, transport: str, revision: str | None = None) -> None:
        self.server = server
        self.transport = transport
        self.revision = revision or LEGACY
        self.negotiated = revision is not None
        self.core = SessionCore(self.revision, transport)
        self.log_level = "debug"
        self._client_capabilities: bytes | None = None  # from initialize, compact JSON
        self.tasks: dict = {}  # handle -> (task, context)
        self.pending: dict = {}  # server-request id (minted by the core) -> future
        self.ended = False
        #: the client's address when the transport knows it (its share of used requestStates)
        self.peer: str | None = None
        #: called with the session when its last handler has finished (adapters prune with it)
        self.on_idle: Callable[[Session], None] | None = None
        #: 2025-11-25 tasks: the key binding this session's tasks to it (fresh, never shown)
        self.task_owner = secrets.token_urlsafe(12)
        self._task_works = 0  # tasks of this session whose work runs
        self._made_tasks = False  # whether this session (2025-11-25) created a task
        self._waiting: dict[str, set[Any]] = {}  # task id -> tasks/result handles waiting on it
        self._channel: Any = None  # stdio: the one channel, for messages of no request
        self._result_watchers: set[asyncio.Event] = set()  # set when a tasks/result arrives

    @property
    def client_capabilities(self) -> Any:
        """The capabilities of the client's ``initialize`` (2025-11-25), read from the compact
        JSON text the session keeps (a fresh copy on each read)."""
        raw = self._client_capabilities
        return None if raw is None else loads(raw)

    @client_capabilities.setter
    def client_capabilities(self, value: Any) -> None:
        self._client_capabilities = None if value is None else dumps(value)

    def _set_revision(self, revision: Any) -> None:
        if revision != self.revision and self.core.empty():
            self.revision = revision
            self.core = SessionCore(revision, self.transport)
        self.negotiated = True

    # --- writing ------------------------------------------------------------------------
    def notify(self, handle: Any, method: Any, params: Any) -> bool:
        target = self.core.emit(handle)
        if target is None:
            return False
        target.data.send({"jsonrpc": "2.0", "method": method, "params": params})
        return True

    async def server_request(self, handle: Any, method: Any, params: Any) -> dict:
        sent = self.core.server_request(handle)
        if sent is None:
            raise RequestFailed(
                error(
                    INTERNAL_ERROR,
                    f"{method} not sent: the request's stream is gone or its handler has stopped",
                )
            )
        sid, target = sent
        try:
            wire, after = await self._announce(handle, sid, method)
        except BaseException:
            self.core.withdraw(handle, sid)  # not sent after all: nothing to wait on
            raise
        fut = asyncio.get_running_loop().create_future()
        self.pending[sid] = fut
        target.data.send({"jsonrpc": "2.0", "id": wire, "method": method, "params": params})
        try:
            return await fut
        finally:
            self.pending.pop(sid, None)
            self.core.withdraw(handle, sid)  # unanswered (cancelled, failed): stop waiting
            if after is not None:
                after()

    async def _announce(
        self, handle: Any, sid: Any, method: Any
    ) -> tuple[Any, Callable[[], None] | None]:
        """Before the server-to-client request ``sid`` of ``handle`` goes out: the id it carries
        on the wire, and what to do once it is no longer awaited (None: nothing).  A session
        whose answers may reach another process records the waiter here first (and raises
        :class:`RequestFailed` when it cannot)."""
        return sid, None

    # --- reading ------------------------------------------------------------------------
    def request(self, msg: dict[str, Any], outlet: Outlet) -> Arrival:
        """A request arrives.  Returns :class:`~.core.Refused` (its ``error``), :class:`Answered`
        (at once, within the step that admitted it) or :class:`Running` (a handler runs and
        will write on ``outlet``, then close it)."""
        if not self.negotiated and msg["method"] in ("initialize", "server/discover"):
            # the handshake picks the revision (and so the core's profile) before admission
            self._set_revision(MODERN if msg["method"] == "server/discover" else LEGACY)
        observer = getattr(self.server, "observer", None)
        if observer is not None:  # the lifecycle observer hook (e.g. mcp_inflight.otel)
            observer.arriving(getattr(self, "sid", None), self.core, msg)
        verdict = self.core.arrive(msg["id"])
        if not isinstance(verdict, Admitted):
            return verdict
        h = verdict.handle
        h.data = outlet
        rid = msg["id"]
        method = msg["method"]
        params: Any = msg.get("params")
        try:
            custom = None
            if method in ALL_TASK_METHODS and self._serves_task_methods(method):
                ctx = Context(self, h, params if isinstance(params, dict) else {})
                reply = self._task_method(h, rid, method, params)
                if reply is None:
                    job = self._task_result(h, rid, params["taskId"], ctx)
            else:
                reply = self._immediate(h, rid, method, params)
                if reply is None:
                    ctx = Context(self, h, params if isinstance(params, dict) else {})
                    custom = self.server.methods.get(method)
                    if custom is None and method == LISTEN and self.revision == MODERN:
                        custom = self._listener(rid)
                    if custom is not None and method == "tools/call" and self._own_tool(params):
                        custom = None  # a tool registered with server.tool runs as registered
                    if self.revision == MODERN:
                        reply = self._resume(ctx, rid, method, params, custom is not None)
                if reply is None:
                    if custom is not None:
                        job = self._run_method(h, rid, custom, params or {}, ctx)
                    else:
                        tool = self.server.tools[params["name"]]
                        reply = self._task_call(h, rid, tool, params)
                        if reply is None:
                            job = self._run(h, rid, tool, params, ctx)
        except Exception as e:  # an admitted request always ends: its id must not stay in flight
            reply = error_reply(rid, error(INTERNAL_ERROR, f"{type(e).__name__}: {e}"))
        if reply is not None:
            target = self.core.finish(h)
            return Answered(reply if target is h else None)
        task = asyncio.get_running_loop().create_task(job)
        self.tasks[h] = (task, ctx)
        return Running(h)

    def _listener(self, rid: Any) -> Callable:
        async def run(ctx: Context, params: dict) -> dict:
            def send(m: str, p: dict) -> bool:
                return self.notify(ctx.handle, m, p)

            return await listen(self.server.subscriptions, rid, params, send, ctx.cancelled)

        return run

    # --- tasks (2025-11-25; the 2026-07-28 extension) ----------------------------------------
    def _serves_task_methods(self, method: str) -> bool:
        return (
            method in (TASK_METHODS if self.revision == LEGACY else PARAMS_OF_2026)
            and method not in self.server.methods
            and self.server.serves_tasks
        )

    def _own_tool(self, params: Any) -> bool:
        return isinstance(params, dict) and params.get("name") in self.server.tools

    def _declares_tasks(self, params: Any) -> bool:
        """2026-07-28: whether the request's client capabilities name the tasks extension."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        caps = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
        ext = caps.get("extensions") if isinstance(caps, dict) else None
        return isinstance(ext, dict) and TASKS_EXTENSION in ext

    def _missing_tasks(self, rid: Any, what: str) -> dict:
        return error_reply(
            rid,
            error(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"{what} needs the client capability extensions.{TASKS_EXTENSION}",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            ),
        )

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
        if not self._declares_tasks(params):
            if support == "required":
                return self._missing_tasks(rid, f"Tool {tool.name!r}")
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
                return True, _tool_error(f"invalid arguments: {e}")
            try:
                return True, _content(await tool.fn(ctx, **args))
            except JsonRpcError as e:
                if self.revision == MODERN:
                    return False, e.error
                return True, _tool_error(str(e))
            except RequestFailed as e:
                return True, _tool_error(str(e))
            except Exception as e:
                return True, _tool_error(f"{type(e).__name__}: {e}")
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
            return _refused_params(rid, e)
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
        if not self._declares_tasks(params):
            return self._missing_tasks(rid, method)
        try:
            PARAMS_OF_2026[method].model_validate(params or {}, by_name=False)
        except pydantic.ValidationError as e:
            return _refused_params(rid, e)
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

    def _resume(self, ctx: Any, rid: Any, method: Any, params: Any, custom: bool) -> Any:
        """2026-07-28: bind the call and, on a retry, verify its ``requestState`` and give the
        context the answers so far; the error reply when the state is refused (the handler
        never runs), else None.  A registered method handler owns any ``requestState`` that is
        not the runtime's (such a state gives no answers to the context)."""
        params = params if isinstance(params, dict) else {}
        states = self.server.request_states
        ctx._binding = call_binding(method, params)
        token = params.get("requestState")
        if token is None or (custom and not states.owns(token)):
            return None
        responses = params.get("inputResponses")
        try:
            resumed = states.resume(
                token,
                ctx._binding,
                responses if isinstance(responses, dict) else None,
                self.peer,
            )
        except StateRefused as e:
            return error_reply(
                rid,
                error(
                    INVALID_PARAMS,
                    f"Invalid params: requestState refused ({e.reason}): {e}",
                    {"reason": e.reason},
                ),
            )
        ctx._answers = resumed.answers
        ctx._round = resumed.round
        return None

    def _input_required(self, rid: Any, ctx: Any, need: _InputRequired) -> dict:
        """The reply to a run that stopped at an unanswered question: InputRequiredResult with
        the next round's sealed state, or an error when the call is over a limit."""
        try:
            token = self.server.request_states.issue(
                ctx._binding, ctx._answers, [need.key], ctx._round + 1
            )
        except StateLimit as e:
            return error_reply(rid, error(INTERNAL_ERROR, f"input required: {e}"))
        result = {
            "resultType": "input_required",
            "inputRequests": {need.key: need.request},
            "requestState": token,
        }
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def _immediate(self, h: Any, rid: Any, method: Any, params: Any) -> Any:
        """The reply to a request answered at once, or None for a tool call that runs."""
        if method == "initialize":
            if self.revision == MODERN:
                return error_reply(
                    rid, error(METHOD_NOT_FOUND, "initialize is not part of 2026-07-28")
                )
            bad = _invalid_params(rid, method, LEGACY, params)
            if bad is not None:
                return bad
            version = params.get("protocolVersion")
            chosen = version if version in HANDSHAKE_VERSIONS else LEGACY
            caps = params.get("capabilities")
            raw = None if caps is None else dumps(caps)
            bound = self.server.max_client_capabilities
            if raw is not None and bound is not None and len(raw) > bound:
                return error_reply(
                    rid,
                    error(
                        INVALID_PARAMS,
                        f"Invalid params: the client's capabilities take {len(raw)} bytes, "
                        f"over the server's limit of {bound}",
                    ),
                )
            self._client_capabilities = raw
            res = {
                "protocolVersion": chosen,
                "capabilities": self.server.capabilities_for(LEGACY),
                "serverInfo": self.server.info,
            }
            if self.server.instructions:
                res["instructions"] = self.server.instructions
            return {"jsonrpc": "2.0", "id": rid, "result": res}
        if method == "server/discover" and self.revision != MODERN:
            return error_reply(
                rid, error(METHOD_NOT_FOUND, "server/discover is not part of 2025-11-25")
            )
        version = self.revision
        bad = _invalid_params(rid, method, version, params)
        if method in self.server.methods:
            # a registered handler runs unless the schema of this revision rejects the request:
            # bad params, or a method of the MCP schema that this revision does not have (a
            # method of no revision is the server's own, and runs)
            if bad is not None and (
                bad["error"]["code"] == INVALID_PARAMS or method in M.SPEC_CLIENT_METHODS
            ):
                return bad
            return None
        if bad is not None:
            return bad
        modern = version == MODERN
        if method == "server/discover":
            res = {
                "supportedVersions": [LEGACY, MODERN],
                "capabilities": self.server.capabilities_for(MODERN),
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {SERVER_INFO_META_KEY: self.server.info},
            }
            if self.server.instructions:
                res["instructions"] = self.server.instructions
        elif method == "ping":
            res = {}
        elif method == "tools/list":
            res = {"tools": [t.listing for t in self.server.tools.values()]}
        elif method == "logging/setLevel":
            self.log_level = params["level"]
            res = {}
        elif method == "tools/call":
            if params["name"] in self.server.tools:
                return None
            return error_reply(rid, error(INVALID_PARAMS, f"Unknown tool: {params['name']}"))
        elif method == LISTEN and modern:
            return None  # runs until its subscription ends (impl/subscriptions.py)
        else:
            return error_reply(rid, error(METHOD_NOT_FOUND, f"Method not found: {method}"))
        if modern:
            res["resultType"] = "complete"
            if method in M.CACHEABLE_METHODS:
                res.setdefault("ttlMs", 0)
                res.setdefault("cacheScope", "private")
        return {"jsonrpc": "2.0", "id": rid, "result": res}

    async def _run_method(self, h: Any, rid: Any, fn: Any, params: Any, ctx: Any) -> None:
        ctx.started = True
        reply = None
        try:
            try:
                res = await fn(ctx, params)
                if self.revision == MODERN and isinstance(res, dict):
                    res.setdefault("resultType", "complete")
                reply = {"jsonrpc": "2.0", "id": rid, "result": res}
            except JsonRpcError as e:
                reply = error_reply(rid, e.error)
            except RequestFailed as e:
                reply = error_reply(rid, e.error)
            except _InputRequired as need:
                reply = self._input_required(rid, ctx, need)
        except asyncio.CancelledError:
            reply = None
        except Exception as e:
            reply = error_reply(rid, error(INTERNAL_ERROR, f"{type(e).__name__}: {e}"))
        finally:
            self._done(h, reply)

    def _done(self, h: Any, reply: Any) -> None:
        self.tasks.pop(h, None)
        target = self.core.finish(h)
        try:
            if target is not None and reply is not None:
                target.data.send(reply)
        finally:
            h.data.close()
            if self.on_idle is not None and self.idle():
                self.on_idle(self)

    async def _run(self, h: Any, rid: Any, tool: Any, params: Any, ctx: Any) -> None:
        ctx.started = True
        reply = None
        try:
            try:
                args = tool.arguments(params.get("arguments"))
            except pydantic.ValidationError as e:
                res = {
                    "content": [{"type": "text", "text": f"invalid arguments: {e}"}],
                    "isError": True,
                }
            else:
                try:
                    res = _content(await tool.fn(ctx, **args))
                except _InputRequired as need:
                    res = None  # type: ignore[assignment]
                    reply = self._input_required(rid, ctx, need)
                except RequestFailed as e:
                    res = {"content": [{"type": "text", "text": str(e)}], "isError": True}
            if res is not None:
                if self.revision == MODERN:
                    res.setdefault("resultType", "complete")
                reply = {"jsonrpc": "2.0", "id": rid, "result": res}
        except asyncio.CancelledError:
            reply = None
        except Exception as e:  # the tool failed: a tool error the model can see
            reply = {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "content": [{"type": "text", "text": f"{type(e).__name__}: {e}"}],
                    "isError": True,
                },
            }
        finally:
            self._done(h, reply)

    def notification(self, msg: dict) -> None:
        method = msg["method"]
        params = msg.get("params")
        try:
            M.validate_client_notification(method, self.revision, params)
        except (KeyError, ValueError, pydantic.ValidationError):
            return  # unknown or malformed notifications are ignored
        if method == "notifications/cancelled":
            target = self.core.cancel((params or {}).get("requestId"))
            if target is not None:
                self._cancel_handler(target)

    def _cancel_handler(self, handle: Any) -> None:
        entry = self.tasks.get(handle)
        if entry is not None:
            task, ctx = entry
            ctx.cancelled.set()
            task.cancel()
            if not ctx.started:
                # A task cancelled before its first step never runs its body, so its ``finally``
                # would never release the request: release it now.
                self._done(handle, None)

    def closed(self, handle: Any) -> None:
        """The request's channel closed before its response (HTTP)."""
        if self.core.close(handle):
            self._cancel_handler(handle)

    def response(self, msg: dict) -> bool:
        """A response from the client to a server-to-client request; False if it answers nothing."""
        sid = msg.get("id")
        if self.core.answer(sid) is None:
            return False  # no handler waits on that id (unknown, answered, or given up)
        fut = self.pending.get(sid)
        if (
            fut is None or fut.done()
        ):  # pragma: no cover - the core's waiter and the future go together
            return False
        if "error" in msg:
            fut.set_exception(RequestFailed(msg["error"]))
        else:
            fut.set_result(msg["result"])
        return True

    def end(self) -> None:
        """The session ends: cancel every handler (through the core) and release every waiter;
        its tasks are cancelled (the task store)."""
        self.ended = True
        if self._made_tasks:
            self.server.task_runtime.end_session(self.task_owner)
        for h in self.core.end():
            self._cancel_handler(h)
        for fut in list(self.pending.values()):
            if not fut.done():
                fut.set_exception(RequestFailed(error(INTERNAL_ERROR, "the session ended")))

    def idle(self) -> bool:
        return self.core.empty() and not self.pending and not self.tasks and not self._task_works
