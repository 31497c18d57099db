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
The guard tells them apart as the SDK does: by the ``MCP-Protocol-Version`` header alone (a value
that is not a handshake revision goes the SDK's 2026-07-28 way, whatever ``Mcp-Session-Id`` says).

Bodies: the guard fails closed: no body reaches the SDK unjudged.  It reads a POST's body up to
``max_body`` (the SDK's default, 4 MiB) and refuses a larger one with 413 as soon as it is over
(a ``Content-Length`` over it is refused unread); a body that never fully arrived (the client
left mid-body) is not forwarded.  The body is read by the SDK's own parser and message adapter
(:func:`judge`), so the guard judges the very message the SDK will serve (``NaN``, ``1E400``,
duplicate keys: whatever the SDK accepts); a body the SDK would refuse (not JSON, too deep, not
a JSON-RPC message) is answered 400 by the guard with the SDK's error code, never forwarded.

The SDK's session expiry: while a request's client is gone, the guard keeps the disconnect from
the SDK (see *a broken stream*), unless the handler asks the client something
(a server-to-client request, dropped: it can never be answered).  Then the disconnect reaches
the SDK, which ends that POST as it would unguarded, so its idle expiry runs; the id stays in
flight at the guard until the SDK session ends (a DELETE, or its 404 for the session).

Cancels: a cancel for a request the model admitted but that still waits at the guard for its SDK
slot (behind ``7``, ``"07"`` waits) is not held: that request is dropped at the guard and its
POST answered as the SDK answers a cancelled request (-32800 on its stream).

Every lifecycle decision (admit or refuse, release, drop a message, which request a cancel hits)
is the model's, asked of the runtime core (``mcp_inflight.impl.core.SessionCore``, one per
session, the ``atomic`` design on the 2025-11-25 profile): ``arrive``, ``emit`` (progress, logs
and server-to-client requests alike: each goes out only on its own request's open stream),
``finish``, ``close``, ``cancel``.  This module only reads the SDK's traffic and adds no rule.

stdio: :func:`guard_stdio` (in :mod:`mcp_inflight.impl.guard_stdio`, which imports this module) wraps
the SDK's stdio streams with the same model (its stdio profile); a refusal there is an error
with ``id: null`` whose ``data`` names the id.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from mcp_inflight.model import ATOMIC

from . import jsonio, sse
from .asgi_types import Receive, Scope, Send
from .core import InvalidId, Refused, SessionCore

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
#: The revisions the SDK serves on its 2025-era (session) path; any other header value goes its
#: 2026-07-28 way (``mcp.server.streamable_http_manager``, ``HANDSHAKE_PROTOCOL_VERSIONS``).
HANDSHAKE_VERSIONS = frozenset(("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"))
#: The SDK's answer to a request that settled without a response on the 2025-era wire.
REQUEST_CANCELLED = -32800
MAX_BODY = 4 * 1024 * 1024
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


def _header(scope: Scope, name: bytes) -> Any:
    for k, v in scope.get("headers", ()):
        if k.lower() == name:
            return v.decode("latin-1")
    return None


def _sdk_slots(rid: Any) -> Any:
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
    """Finds the JSON-RPC messages in an SSE body as its chunks go by (``impl.sse``'s decoder);
    an event whose data is not JSON gives None."""

    def __init__(self) -> None:
        self.decoder = sse.Decoder()

    def feed(self, chunk: bytes) -> list:
        out = []
        for event in self.decoder.feed(chunk):
            try:
                out.append(jsonio.loads(event.data))
            except ValueError:
                out.append(None)
        return out


TOO_LARGE = {"code": -32600, "message": "Payload Too Large"}
PARSE_ERROR = -32700
INVALID_PARAMS = -32602


@functools.cache
def _sdk_reader() -> Any:
    """The SDK's own reading of a POST body (``mcp.server.streamable_http``): pydantic-core's
    JSON parser, then the SDK's JSON-RPC message adapter; ``(None, None)`` without the SDK."""
    try:
        import pydantic_core
        from mcp.types import jsonrpc_message_adapter
    except ImportError:  # pragma: no cover - the guard is used in front of the SDK
        return None, None
    return pydantic_core.from_json, jsonrpc_message_adapter


def judge(body: bytes) -> Any:
    """``(message, error)``: the body read exactly as the SDK will read it, so that the guard
    judges what the SDK serves (the SDK's parser accepts ``NaN``, ``Infinity``, numbers that
    overflow a double, and keeps the last of duplicate keys; a strict reader refuses the first
    three, and a body the guard could not read would reach the SDK unjudged).  ``error`` is the
    JSON-RPC error the SDK answers for a body it cannot read or validate (HTTP 400); such a
    body is answered by the guard and never forwarded.  Without the SDK importable, the strict
    reader is used and whatever it refuses is a parse error (closed, never forwarded)."""
    # imported at the first body, not with the guard: importing the SDK's package brings its
    # optional dependencies (OpenTelemetry among them) into a process that may not use them
    _FROM_JSON, _ADAPTER = _sdk_reader()
    if _FROM_JSON is None:  # pragma: no cover - the guard is used in front of the SDK
        try:
            return jsonio.loads(body), None
        except ValueError as e:
            return None, {"code": PARSE_ERROR, "message": f"Parse error: {e}"}
    try:
        msg = _FROM_JSON(body)
    except ValueError as e:
        return None, {"code": PARSE_ERROR, "message": f"Parse error: {str(e)[:200]}"}
    if isinstance(msg, dict) and "method" in msg and "id" in msg:
        rid = msg["id"]
        if not (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
            return msg, None  # a request id the core refuses as Invalid Request (400)
    try:
        _ADAPTER.validate_python(msg, by_name=False)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        return None, {"code": INVALID_PARAMS, "message": f"Validation error: {str(e)[:200]}"}
    return msg, None


def _is_own_response(msg: Any, rid: Any) -> bool:
    if not isinstance(msg, dict) or "method" in msg or not ("result" in msg or "error" in msg):
        return False
    mid = msg.get("id")
    return type(mid) is type(rid) and mid == rid


class Guard:
    """ASGI middleware in front of an official-SDK Streamable HTTP app; see the module text."""

    def __init__(self, app: Any, max_body: int = MAX_BODY, observer: Any = None) -> None:
        self.app = app
        self.max_body = max_body
        #: the lifecycle observer (e.g. :class:`mcp_inflight.otel.LifecycleTelemetry`): its
        #: ``arriving(session_id, core, msg)`` is called before a session's core decides on a
        #: request (the one hook of this layer)
        self.observer = observer
        self.sessions: dict[str, SessionCore] = {}
        self.in_sdk: dict[tuple, asyncio.Event] = {}  # (session, SDK slot) -> left the SDK
        self.forwarded: dict = {}  # handle -> its POST reached the SDK
        self.waiting: dict = {}  # handle -> set when cancelled at the guard
        self.orphans: dict[str, list[asyncio.Event]] = {}  # session -> slots of abandoned handlers

    def __getattr__(self, name: Any) -> Any:  # e.g. Starlette's .state, .router of the wrapped app
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        version = _header(scope, VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_VERSIONS:
            return await self.app(scope, receive, send)  # the SDK's sessionless 2026-07-28 way
        sid = _header(scope, SESSION_HEADER)
        if sid is None:  # initialize: no session yet, nothing can collide
            return await self.app(scope, receive, send)
        if scope.get("method") != "POST":
            return await self.app(scope, receive, self._observe(sid, send, scope.get("method")))
        clen = _header(scope, b"content-length")
        if clen is not None and clen.isdigit() and int(clen) > self.max_body:
            return await _reply(send, 413, TOO_LARGE, sid)  # refused unread, never forwarded
        body, state = await _read_body(receive, self.max_body)
        if state == "gone":  # the client left mid-body: nothing of it is served
            return None
        if state == "large":
            return await _reply(send, 413, TOO_LARGE, sid)
        msg, error = judge(body)
        if error is not None:  # the SDK would refuse it too: answered here, never forwarded
            return await _reply(send, 400, error, sid)
        replay = _Replay(body, receive)
        if not isinstance(msg, dict) or "method" not in msg:
            return await self.app(scope, replay.receive, self._observe(sid, send))
        if "id" not in msg:
            if msg.get("method") == "notifications/cancelled":
                return await self._cancel(sid, msg, scope, replay, send)
            return await self.app(scope, replay.receive, self._observe(sid, send))
        return await self._request(sid, msg["id"], scope, replay, send, msg)

    def _observe(self, sid: Any, send: Send, method: Any = "POST") -> Any:
        """``send`` for a message that is not a request: the SDK's 404 for the session (or the
        success of its DELETE) tells the guard that the session is gone."""

        async def observed(message: Any) -> None:
            if message["type"] == "http.response.start":
                status = message.get("status", 200)
                if status == 404 or (method == "DELETE" and 200 <= status < 300):
                    self._forget(sid)
            await send(message)

        return observed

    def _forget(self, sid: Any) -> None:
        """The SDK session is gone: drop its core and release its abandoned handlers' slots."""
        for ev in self.orphans.pop(sid, ()):
            ev.set()
        for k in [k for k, ev in self.in_sdk.items() if k[0] == sid and ev.is_set()]:
            del self.in_sdk[k]
        core = self.sessions.get(sid)
        if core is not None and not any(k[0] == sid for k in self.in_sdk):
            core.end()  # the model's session end: the SDK has already stopped its handlers
            del self.sessions[sid]

    async def _cancel(self, sid: Any, msg: Any, scope: Scope, replay: Any, send: Send) -> Any:
        core = self.sessions.get(sid)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        target = core.cancel(params.get("requestId")) if core is not None else None
        if target is None:
            return await _reply(send, 202, None, sid)
        reached = self.forwarded.get(target)
        if reached is not None and not reached.is_set():
            # the target still waits at the guard for its SDK slot: drop it there (never held)
            self.waiting[target].set()
            return await _reply(send, 202, None, sid)
        return await self.app(scope, replay.receive, self._observe(sid, send))

    async def _request(
        self, sid: Any, rid: Any, scope: Scope, replay: Any, send: Send, msg: Any = None
    ) -> Any:
        if isinstance(rid, str) and rid == SDK_STANDALONE_SLOT:
            return await _reply(
                send,
                400,
                {
                    "code": InvalidId.code,
                    "message": f"Invalid Request: id {json.dumps(rid)} is the server's "
                    f"standalone stream slot; use another id",
                    "data": {"id": rid},
                },
                sid,
            )
        core = self.sessions.get(sid)
        if core is None:
            core = self.sessions[sid] = new_core("http")
        if self.observer is not None:
            self.observer.arriving(sid, core, msg if msg is not None else {"id": rid})
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
        cancelled = self.waiting[handle] = asyncio.Event()
        slots = [(sid, s) for s in _sdk_slots(rid)]
        left = asyncio.Event()
        entered = False
        abandoned = False
        try:
            while True:  # one request per SDK slot inside the SDK at a time
                busy = [self.in_sdk[k] for k in slots if k in self.in_sdk]
                if not busy or cancelled.is_set():
                    break
                await _first([*busy, cancelled])
            if cancelled.is_set():
                return await _cancelled_reply(send, rid, sid)
            for k in slots:
                self.in_sdk[k] = left
            entered = True
            reached.set()
            watch = self._watch(core, handle, rid, replay, send)
            watch.sid = sid
            replay.on_gone = watch.gone
            await self.app(scope, replay.receive, watch)
            abandoned = replay.released and not watch.answered
        finally:
            self.forwarded.pop(handle, None)
            self.waiting.pop(handle, None)
            if abandoned and sid in self.sessions:
                # the SDK's handler still waits on its client: its slots and id stay taken
                # until the SDK session ends
                self.orphans.setdefault(sid, []).append(left)
            else:
                if entered:
                    for k in slots:
                        if self.in_sdk.get(k) is left:
                            del self.in_sdk[k]
                left.set()
                core.finish(handle)  # no-op when its response already released it
                self._drop_if_empty(sid, core)

    def _drop_if_empty(self, sid: Any, core: Any) -> None:
        if core.empty() and self.sessions.get(sid) is core and not self.orphans.get(sid):
            del self.sessions[sid]

    def _watch(self, core: Any, handle: Any, rid: Any, replay: Any, send: Send) -> Any:
        """The SDK's ``send`` for this POST: every outgoing chunk goes out only where the model
        says it is deliverable (this request's own, open stream), and the request's own response
        releases its entry before the client can see it."""
        return _Watch(self, core, handle, rid, replay, send)


class _Watch:
    """See :meth:`Guard._watch`."""

    def __init__(
        self, guard: Any, core: Any, handle: Any, rid: Any, replay: Any, send: Send
    ) -> None:
        self.guard = guard
        self.core = core
        self.handle = handle
        self.rid = rid
        self.replay = replay
        self.send = send
        self.sse = False
        self.answered = False
        self.decoder = _SSEWatch()
        self.sid = None
        self.asking = False  # the last message out was a server-to-client request

    def gone(self) -> None:
        """The client went away: a handler waiting on it can never go on, so the SDK must
        see the disconnect (its idle expiry then runs as without the guard)."""
        if self.asking:
            self.replay.release()

    async def __call__(self, message: Any) -> None:
        replay, core, handle = self.replay, self.core, self.handle
        if replay.gone:
            core.close(handle)  # 2025-11-25: the stream broke, the handler goes on
        goes = not replay.gone
        if message["type"] == "http.response.start":
            headers = {k.lower(): v for k, v in message.get("headers", ())}
            self.sse = headers.get(b"content-type", b"").startswith(b"text/event-stream")
            if message.get("status") == 404 and self.sid is not None:
                self.guard._forget(self.sid)  # the SDK no longer knows the session
        elif message["type"] == "http.response.body" and not self.answered:
            final = not message.get("more_body", False)
            if self.sse:
                msgs = self.decoder.feed(message.get("body", b""))
                if any(_is_own_response(m, self.rid) for m in msgs):
                    self.answered = True
                    goes = core.finish(handle) is handle
                else:
                    goes = core.emit(handle) is handle
                    if msgs:
                        self.asking = _is_server_request(msgs[-1])
                    if not goes and replay.gone and self.asking:
                        replay.release()  # it waits on a client that is gone: let the SDK know
            elif final:
                self.answered = True
                goes = core.finish(handle) is handle
        if goes:
            await self.send(message)
        elif (
            message["type"] == "http.response.body"
            and not message.get("more_body", False)
            and not replay.gone
        ):
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})


def _is_server_request(msg: Any) -> bool:
    return isinstance(msg, dict) and "method" in msg and "id" in msg


async def _first(events: Any) -> None:
    """Wait until one of the asyncio events is set."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def _read_body(receive: Receive, limit: int) -> Any:
    """``(body, state)``: state ``"whole"``, ``"gone"`` (the client left before its end) or
    ``"large"`` (over ``limit``; reading stopped there)."""
    chunks = []
    size = 0
    while True:
        m = await receive()
        if m["type"] == "http.disconnect":
            return b"", "gone"
        chunk = m.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", "large"
        chunks.append(chunk)
        if not m.get("more_body", False):
            return b"".join(chunks), "whole"


class _Replay:
    """The request body once, then the connection's own events, except that a disconnect is
    kept from the SDK (its clean-up would remove streams by id); the guard records it, and
    lets it through when :meth:`release` is called."""

    def __init__(self, body: Any, receive: Receive) -> None:
        self.body = body
        self.inner = receive
        self.gone = False
        self.released = False
        self.sent = False
        self.let_go = asyncio.Event()
        self.on_gone = None

    def release(self) -> None:
        self.released = True
        self.let_go.set()

    async def receive(self) -> Any:
        if not self.sent:
            self.sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        if not self.gone:
            m = await self.inner()
            if m["type"] != "http.disconnect":
                return m
            self.gone = True
            if self.on_gone is not None:
                self.on_gone()
        await self.let_go.wait()  # until the guard lets the SDK see the disconnect
        return {"type": "http.disconnect"}


async def _reply(send: Send, status: Any, error: Any, sid: Any) -> None:
    headers = [(b"content-type", b"application/json"), (SESSION_HEADER, sid.encode("latin-1"))]
    body = b"" if error is None else jsonio.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _cancelled_reply(send: Send, rid: Any, sid: Any) -> None:
    """What the SDK writes for a request cancelled before it answered (2025-era wire)."""
    body = sse.encode(
        jsonio.dumps(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "error": {"code": REQUEST_CANCELLED, "message": "Request cancelled"},
            }
        )
    )
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
                (SESSION_HEADER, sid.encode("latin-1")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


def guard(app: Any, max_body: int = MAX_BODY, observer: Any = None) -> Guard:
    """Wrap an official-SDK Streamable HTTP ASGI app (``server.streamable_http_app()``);
    ``max_body`` should match the SDK's ``max_request_body_size`` when that was changed;
    ``observer``: see :attr:`Guard.observer`."""
    return Guard(app, max_body, observer)
