"""The server API: a :class:`Server` (identity, capabilities, its tools and methods) and its
:class:`Tool` registrations, transport-independent and importable from :mod:`.server`.

Kept apart from the session that runs them (:mod:`.server`) so that the handler's view
(:mod:`.context`) and the task methods of a session (:mod:`.session_tasks`) can read the
server's tables without importing the session: the imports go one way, from the session down.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import mcp_types as T
import pydantic

from .messages import LEGACY, MODERN, REVISIONS
from .request_state import RequestStates
from .subscriptions import UPDATED, Subscriptions
from .task_runtime import TaskRuntime

__all__ = [
    "Tool",
    "Server",
    "TASK_SUPPORT",
    "TASKS_EXTENSION",
    "UNAUTHENTICATED",
    "TASK_CAPABILITY",
    "MAX_CLIENT_CAPABILITIES",
    "PARAMS_OF",
    "PARAMS_OF_2026",
    "TASK_METHODS",
    "ALL_TASK_METHODS",
]


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


def tool_error(text: str) -> dict:
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


def content(value: Any) -> dict:
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
