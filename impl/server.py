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
import secrets
from collections.abc import Callable
from typing import Any

import pydantic
from mcp_types import methods as M

from .api import (
    ALL_TASK_METHODS,
    MAX_CLIENT_CAPABILITIES,
    TASK_CAPABILITY,
    TASKS_EXTENSION,
    UNAUTHENTICATED,
    Server,
    Tool,
    content,
)
from .context import (
    Answered,
    Arrival,
    Context,
    InputRequired,
    JsonRpcError,
    Outlet,
    RequestFailed,
    Running,
    TaskContext,
)
from .core import Admitted, Refused, SessionCore
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
    check_request,
    classify,
    dumps,
    encode_message,
    error,
    error_reply,
    loads,
    parse,
)
from .request_state import StateLimit, StateRefused, call_binding
from .session_tasks import SessionTasks, refused_params
from .subscriptions import LISTEN, listen

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
    "Arrival",
    "TaskContext",
    "TASKS_EXTENSION",
    "UNAUTHENTICATED",
    "TASK_CAPABILITY",
    "MAX_CLIENT_CAPABILITIES",
]

# --- one session -----------------------------------------------------------------------------


def _invalid_params(rid: Any, method: Any, version: Any, params: Any) -> Any:
    """The error reply for a request the MCP schema of ``version`` rejects, else None."""
    try:
        check_request(method, version, params)
    except KeyError:
        return error_reply(rid, error(METHOD_NOT_FOUND, f"Method not found: {method} ({version})"))
    except pydantic.ValidationError as e:
        return refused_params(rid, e)
    return None


# --- one session -----------------------------------------------------------------------------


class Session(SessionTasks):
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

    def _input_required(self, rid: Any, ctx: Any, need: InputRequired) -> dict:
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
            except InputRequired as need:
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
                    res = content(await tool.fn(ctx, **args))
                except InputRequired as need:
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
            ctx._cancel()
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
