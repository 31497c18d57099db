"""A guard for MCP servers built on the official Python SDK (``mcp`` 2.x): refuse a request whose
id is in flight in its session, before the SDK sees it.

Two lines in the server's code::

    from mcp_inflight.guard import guard
    app = guard(server.streamable_http_app())     # then run ``app`` with uvicorn as before

The SDK keys its per-request streams and its in-flight table by request id and overwrites them
when a second request arrives under an id that is still in flight (its progress, elicitation and
response then go to the wrong POST; see ``mcp-inflight probe``).  The guard sits in front of the
SDK's ASGI app and changes nothing in it:

* **admission**: a POST carrying a JSON-RPC request in a session (``Mcp-Session-Id``) is
  admitted or refused by the model's ``atomic`` design (``model/session.py``: ``admit``,
  ``refuse``, through the runtime core); a refused duplicate gets HTTP 409 with a
  JSON-RPC ``-32600`` body (``id: null``, ``data.id`` naming the id) and never reaches the SDK.
  Ids keep their JSON type: ``7`` and ``"7"`` are two ids.  An id that is not a string or an
  integer is Invalid Request (HTTP 400).
* **release**: the entry is held until the POST's own response passes through the guard (the
  model's ``respond``, by identity), so the client can reuse the id as soon as it sees the
  response.  If the POST's stream ends without a response (the SDK closed it), the entry is
  released then.
* **a broken stream** (the client went away) is the model's ``break_stream``: the request stays
  in flight while its handler runs (a disconnect is not a cancel on 2025-11-25), its later
  messages are dropped, and the id is free once the handler answers.  The guard keeps the
  disconnect from the SDK, so the SDK's own unguarded clean-up (by id) cannot remove another
  request's stream.
* **cancellation**: ``notifications/cancelled`` reaches the SDK only when its id names a request
  in flight (the model's ``on_cancel``); for an unknown or finished id it is answered 202 and
  dropped, as the spec says to ignore it.
* **the SDK's own keys**: the SDK stores a request's stream under ``str(id)`` and its in-flight
  entry under the id with numeric strings read as integers, so ``7``, ``"7"`` and ``"07"`` share
  slots there.  The guard lets only one request per such slot into the SDK at a time; a second
  one, admitted by the model, waits at the guard until the first has left the SDK (it is served
  late, never misrouted).  An id equal to the SDK's internal slot name ``_GET_stream`` is refused
  with -32600 (HTTP 400): the SDK would put the request's stream in its standalone stream's slot.

Requests without a session pass through untouched: ``initialize`` (nothing to collide with yet)
and 2026-07-28 POSTs, which the SDK serves each on its own, with no table shared between them.

Every lifecycle decision (admit or refuse, release, drop a message, which request a cancel hits)
is the model's, asked of the runtime core (``mcp_inflight.impl.core.SessionCore``, one per
session, the ``atomic`` design on the 2025-11-25 profile): ``arrive``, ``emit`` (progress, logs
and server-to-client requests alike: each goes out only on its own request's open stream),
``finish``, ``close``, ``cancel``.  This module only reads the SDK's traffic and adds no rule.

stdio: :func:`guard_stdio` wraps the SDK's stdio streams with the same model (its stdio
profile); a refusal there is an error with ``id: null`` whose ``data`` names the id.
"""

from __future__ import annotations

import asyncio
import json

from mcp_inflight.impl.core import InvalidId, Refused, SessionCore
from mcp_inflight.model import ATOMIC

SESSION_HEADER = b"mcp-session-id"
SDK_STANDALONE_SLOT = "_GET_stream"
REVISION = "2025-11-25"
#: The design the guard's cores run: the model's ``atomic`` (tests swap in a broken one to show
#: that the decisions are the model's).
DESIGN = ATOMIC


def new_core(transport: str = "http") -> SessionCore:
    """One session's core (``mcp_inflight.impl.core``) on the 2025-11-25 profile."""
    return SessionCore(REVISION, transport, DESIGN)


# =============================================================================================
# The ASGI wrapper
# =============================================================================================

def _header(scope, name: bytes):
    for k, v in scope.get("headers", ()):
        if k.lower() == name:
            return v.decode("latin-1")
    return None


def _sdk_slots(rid):
    """The SDK's keys for this id: its stream map's ``str(id)`` and its in-flight table's id,
    where a string that ``int()`` reads is taken as that integer."""
    coerced = rid
    if isinstance(rid, str):
        try:
            coerced = int(rid)
        except ValueError:
            pass
    return {("stream", str(rid)), ("inflight", type(coerced).__name__, coerced)}


class _SSEWatch:
    """Finds the JSON-RPC messages in an SSE body as its chunks go by."""

    def __init__(self):
        self.buf = b""

    def feed(self, chunk: bytes) -> list:
        self.buf += chunk.replace(b"\r\n", b"\n")
        out = []
        while b"\n\n" in self.buf:
            event, self.buf = self.buf.split(b"\n\n", 1)
            data = [line[5:].lstrip(b" ") if line.startswith(b"data:") else None
                    for line in event.split(b"\n")]
            data = [d for d in data if d is not None]
            if data:
                try:
                    out.append(json.loads(b"\n".join(data)))
                except ValueError:
                    out.append(None)
            else:
                out.append(None)
        return out


def _is_own_response(msg, rid) -> bool:
    if not isinstance(msg, dict) or "method" in msg or not ("result" in msg or "error" in msg):
        return False
    mid = msg.get("id")
    return type(mid) is type(rid) and mid == rid


class Guard:
    """ASGI middleware in front of an official-SDK Streamable HTTP app; see the module text."""

    def __init__(self, app):
        self.app = app
        self.sessions: dict[str, SessionCore] = {}
        self.in_sdk: dict[tuple, asyncio.Event] = {}    # (session, SDK slot) -> left the SDK
        self.forwarded: dict = {}                        # handle -> its POST reached the SDK

    def __getattr__(self, name):   # e.g. Starlette's .state, .router of the wrapped app
        return getattr(self.app, name)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        sid = _header(scope, SESSION_HEADER)
        if sid is None:            # initialize: no session yet, nothing can collide
            return await self.app(scope, receive, send)
        body, disconnected = await _read_body(receive)
        replay = _Replay(body, receive, disconnected)
        try:
            msg = json.loads(body)
        except ValueError:
            msg = None
        if not isinstance(msg, dict) or "method" not in msg:
            return await self.app(scope, replay.receive, send)
        if "id" not in msg:
            if msg.get("method") == "notifications/cancelled":
                return await self._cancel(sid, msg, scope, replay, send)
            return await self.app(scope, replay.receive, send)
        return await self._request(sid, msg["id"], scope, replay, send)

    async def _cancel(self, sid, msg, scope, replay, send):
        core = self.sessions.get(sid)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        target = core.cancel(params.get("requestId")) if core is not None else None
        if target is None:
            return await _reply(send, 202, None, sid)
        reached = self.forwarded.get(target)
        if reached is not None:
            await reached.wait()   # the SDK must hold the request before it can cancel it
        return await self.app(scope, replay.receive, send)

    async def _request(self, sid, rid, scope, replay, send):
        if isinstance(rid, str) and rid == SDK_STANDALONE_SLOT:
            return await _reply(send, 400, {"code": InvalidId.code, "message":
                                            f"Invalid Request: id {json.dumps(rid)} is the server's "
                                            f"standalone stream slot; use another id", "data": {"id": rid}}, sid)
        core = self.sessions.get(sid)
        if core is None:
            core = self.sessions[sid] = new_core("http")
        try:
            verdict = core.arrive(rid)
        except InvalidId as exc:
            self._drop_if_empty(sid, core)
            return await _reply(send, 400, exc.error, sid)
        if isinstance(verdict, Refused):
            self._drop_if_empty(sid, core)
            return await _reply(send, 409, verdict.error, sid)
        handle = verdict.handle
        reached = self.forwarded[handle] = asyncio.Event()
        slots = [(sid, s) for s in _sdk_slots(rid)]
        left = asyncio.Event()
        try:
            while True:     # one request per SDK slot inside the SDK at a time
                busy = [self.in_sdk[k] for k in slots if k in self.in_sdk]
                if not busy:
                    break
                await _first(busy)
            for k in slots:
                self.in_sdk[k] = left
            reached.set()
            await self.app(scope, replay.receive, self._watch(core, handle, rid, replay, send))
        finally:
            for k in slots:
                if self.in_sdk.get(k) is left:
                    del self.in_sdk[k]
            left.set()
            self.forwarded.pop(handle, None)
            core.finish(handle)        # no-op when its response already released it
            self._drop_if_empty(sid, core)

    def _drop_if_empty(self, sid, core):
        if core.empty() and self.sessions.get(sid) is core:
            del self.sessions[sid]

    def _watch(self, core, handle, rid, replay, send):
        """The SDK's ``send`` for this POST: every outgoing chunk goes out only where the model
        says it is deliverable (this request's own, open stream), and the request's own response
        releases its entry before the client can see it."""
        state = {"sse": False, "answered": False}
        watch = _SSEWatch()

        async def guarded_send(message):
            if replay.gone:
                core.close(handle)     # 2025-11-25: the stream broke, the handler goes on
            goes = not replay.gone
            if message["type"] == "http.response.start":
                ctype = dict((k.lower(), v) for k, v in message.get("headers", ())).get(b"content-type", b"")
                state["sse"] = ctype.startswith(b"text/event-stream")
            elif message["type"] == "http.response.body" and not state["answered"]:
                final = not message.get("more_body", False)
                if state["sse"]:
                    if any(_is_own_response(m, rid) for m in watch.feed(message.get("body", b""))):
                        state["answered"] = True
                        goes = core.finish(handle) is handle
                    else:
                        goes = core.emit(handle) is handle
                elif final:
                    state["answered"] = True
                    goes = core.finish(handle) is handle
            if goes:
                await send(message)
            elif message["type"] == "http.response.body" and not message.get("more_body", False) \
                    and not replay.gone:
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        return guarded_send


async def _first(events):
    """Wait until one of the asyncio events is set."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def _read_body(receive):
    chunks = []
    while True:
        m = await receive()
        if m["type"] == "http.disconnect":
            return b"".join(chunks), True
        chunks.append(m.get("body", b""))
        if not m.get("more_body", False):
            return b"".join(chunks), False


class _Replay:
    """The request body once, then the connection's own events, except that a disconnect is
    kept from the SDK (its clean-up would remove streams by id); the guard records it."""

    def __init__(self, body, receive, gone):
        self.body = body
        self.inner = receive
        self.gone = gone
        self.sent = False
        self.never = asyncio.Event()

    async def receive(self):
        if not self.sent:
            self.sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        if not self.gone:
            m = await self.inner()
            if m["type"] != "http.disconnect":
                return m
            self.gone = True
        await self.never.wait()    # until the app is done with this request


async def _reply(send, status, error, sid):
    headers = [(b"content-type", b"application/json"), (SESSION_HEADER, sid.encode("latin-1"))]
    body = b"" if error is None else json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def guard(app) -> Guard:
    """Wrap an official-SDK Streamable HTTP ASGI app (``server.streamable_http_app()``)."""
    return Guard(app)


# =============================================================================================
# stdio: the same model around the SDK's stdio streams
# =============================================================================================

def guard_stdio(read_stream, write_stream):
    """Wrap the streams of the SDK's ``stdio_server()`` (2025-11-25 stdio, one session)::

        async with stdio_server() as (read, write):
            read, write = guard_stdio(read, write)
            await server.run(read, write, server.create_initialization_options())

    A request whose id is in flight is answered with a JSON-RPC ``-32600`` error whose ``id`` is
    null and whose ``data`` names the id (so no pending request of the client matches it) and
    never reaches the server; the id is free again once its response is written.  A
    ``notifications/cancelled`` for an id not in flight is dropped.  On stdio the SDK misroutes
    nothing on its own (one ordered channel, every message carries its handler's id), but with
    duplicates admitted a cancel by id reaches the newer of the two and the client gets two
    responses under one id; the guard keeps both from happening.
    """
    core = new_core("stdio")
    return _GuardedRead(read_stream, core, write_stream), _GuardedWrite(write_stream, core)


class _GuardedRead:
    """What the server reads: the client's messages, after the model's admission."""

    def __init__(self, inner, core: SessionCore, write):
        self.inner = inner
        self.core = core
        self.write = write

    def __getattr__(self, name):    # e.g. ``last_context``
        return getattr(self.inner, name)

    async def receive(self):
        from mcp.shared.message import ServerMessageMetadata, SessionMessage
        from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest

        while True:
            item = await self.inner.receive()
            msg = getattr(item, "message", None)
            if isinstance(msg, JSONRPCRequest):
                verdict = self.core.arrive(msg.id)
                if isinstance(verdict, Refused):
                    err = verdict.error
                    await self.write.send(SessionMessage(JSONRPCError(
                        jsonrpc="2.0", id=None,
                        error=ErrorData(code=err["code"], message=err["message"], data=err.get("data")))))
                    continue
                handle = verdict.handle
                meta = item.metadata if isinstance(item.metadata, ServerMessageMetadata) else ServerMessageMetadata()
                inner_hook = meta.on_request_unanswered

                async def unanswered(handle=handle, inner_hook=inner_hook):
                    self.core.finish(handle)       # a cancelled handler stopped: unwind
                    if inner_hook is not None:
                        await inner_hook()

                meta.on_request_unanswered = unanswered
                return SessionMessage(msg, metadata=meta)
            if isinstance(msg, JSONRPCNotification) and msg.method == "notifications/cancelled":
                params = msg.params if isinstance(msg.params, dict) else {}
                if self.core.cancel(params.get("requestId")) is None:
                    continue                       # unknown or finished id: ignored
            return item

    def __aiter__(self):
        return self

    async def __anext__(self):
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self):
        await self.inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()
        return None


class _GuardedWrite:
    """What the server writes: a message of a request goes out only where the model says it is
    deliverable; the request's response releases its id."""

    def __init__(self, inner, core: SessionCore):
        self.inner = inner
        self.core = core

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def send(self, item):
        from mcp.shared.message import ServerMessageMetadata
        from mcp_types import JSONRPCError, JSONRPCResponse

        msg = getattr(item, "message", None)
        if isinstance(msg, (JSONRPCResponse, JSONRPCError)) and msg.id is not None:
            handle = self.core.in_flight(msg.id)
            if handle is not None and self.core.finish(handle) is not handle:
                return
        elif isinstance(item.metadata, ServerMessageMetadata) and item.metadata.related_request_id is not None:
            handle = self.core.in_flight(item.metadata.related_request_id)
            if handle is not None and self.core.emit(handle) is not handle:
                return
        await self.inner.send(item)

    async def aclose(self):
        await self.inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()
        return None
