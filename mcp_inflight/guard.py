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
  ``refuse``), on the session's concrete state; a refused duplicate gets HTTP 409 with a
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
is the model's: this module evaluates ``model/session.py``'s actions with the concrete backend
of ``model/logic.py`` and adds no rule of its own.

stdio: :func:`guard_stdio` wraps the SDK's stdio streams with the same model (its stdio
profile); a refusal there is an error with ``id: null`` whose ``data`` names the id.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from mcp_inflight.model import ACTION, ATOMIC, FIELDS, NONE, Concrete, Config, Life, State, apply_writes
from mcp_inflight.model.session import on_cancel

INVALID_REQUEST = -32600
SESSION_HEADER = b"mcp-session-id"
SDK_STANDALONE_SLOT = "_GET_stream"
CONFIG = Config(ATOMIC, "2025-11-25", "http")
STDIO_CONFIG = Config(ATOMIC, "2025-11-25", "stdio")
_FINISHED = (Life.RESPONDED, Life.REFUSED, Life.CANCELLED)


# =============================================================================================
# The model, run on one session's concrete state
# =============================================================================================

class InvalidId(ValueError):
    """The request's id is not a JSON-RPC id (string or integer)."""


def typed_id(rid):
    """A key that keeps the JSON type of an id: ``7`` and ``"7"`` differ."""
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        raise InvalidId(f"Invalid Request: a request id must be a string or an integer, not {json.dumps(rid)}")
    return (type(rid).__name__, rid)


@dataclass(eq=False)
class Handle:
    """One admitted request (compared by identity)."""

    slot: int
    rid: object


class SessionCore:
    """The ``atomic`` design of the model on one session's state (2025-11-25 Streamable HTTP).

    The state is the model's ``State`` with as many instance and id slots as the session
    needs.  Requests are driven through the model's own actions: ``client_sends`` (or
    ``rogue_sends`` when the sender broke the id rule) and ``arrive`` put the request on the
    server, then ``refuse`` or ``admit``, later ``respond``, ``break_stream``, ``on_cancel`` and
    ``unwind``.  A finished instance is forgotten (its slot returns to the
    model's initial values) so that the state stays as small as what is in flight.
    """

    def __init__(self, config: Config | None = None):
        self.cfg = config or CONFIG
        self.s = State(*[() if f.key else f.default for f in FIELDS])
        self.ids: dict = {}          # typed id -> id slot
        self.handles: dict = {}      # instance slot -> Handle
        self.on_step = None          # optional fn(pre, post, action, r, i, out), for checking

    # --- slots ---------------------------------------------------------------------------
    def _grow(self, key):
        self.s = State(*[getattr(self.s, f.name) + (f.default,) if f.key == key else getattr(self.s, f.name)
                         for f in FIELDS])

    def _logic(self):
        return Concrete({"inst": range(len(self.s.life)), "id": range(len(self.s.inflight))})

    def _id_slot(self, typed) -> int:
        if typed in self.ids:
            return self.ids[typed]
        used = set(self.ids.values())
        free = [k for k in range(len(self.s.inflight)) if k not in used]
        if free:
            slot = free[0]
        else:
            self._grow("id")
            slot = len(self.s.inflight) - 1
        self.ids[typed] = slot
        return slot

    def _instance_slot(self) -> int:
        for r, life in enumerate(self.s.life):
            if life == Life.UNSENT:
                return r
        self._grow("inst")
        return len(self.s.life) - 1

    def _forget(self, r):
        """Drop a finished instance: reset its slot, and its id's slot if nothing else uses it."""
        i = self.s.rid[r]
        vals = []
        for f in FIELDS:
            v = getattr(self.s, f.name)
            if f.key == "inst":
                v = v[:r] + (f.default,) + v[r + 1:]
            vals.append(v)
        self.s = State(*vals)
        self.handles.pop(r, None)
        in_use = any(self.s.life[q] != Life.UNSENT and self.s.rid[q] == i for q in range(len(self.s.life)))
        if not in_use and self.s.inflight[i] == NONE and self.s.stream[i] == NONE:
            for k, v in list(self.ids.items()):
                if v == i:
                    del self.ids[k]

    def _do(self, name, r, i=None):
        ok, out, writes = ACTION[name].run(self._logic(), self.s, self.cfg, r, i)
        if ok:
            pre, self.s = self.s, apply_writes(self.s, writes)
            if self.on_step is not None:
                self.on_step(pre, self.s, ACTION[name], r, i, out)
        return ok, out

    def _mine(self, handle) -> bool:
        return self.handles.get(handle.slot) is handle

    # --- what the guard asks -------------------------------------------------------------
    def arrive(self, rid):
        """``("admitted", Handle)`` or ``("refused", error)`` for a request with id ``rid``."""
        typed = typed_id(rid)
        i = self._id_slot(typed)
        r = self._instance_slot()
        # Who sent it is a ghost no server rule reads; the model's own id rule tells a sender
        # that obeys it (the client) from one that does not (a rogue), which keeps the
        # client-side invariants meaningful when the state is checked.
        sent, _ = self._do("client_sends", r, i)
        if not sent:
            sent, _ = self._do("rogue_sends", r, i)
        arrived, _ = self._do("arrive", r)
        if not (sent and arrived):  # pragma: no cover - the guards hold for a fresh slot
            raise RuntimeError("the model refused to send or deliver on a fresh slot")
        ok, _ = self._do("refuse", r)
        if ok:
            self._forget(r)
            return "refused", {"code": INVALID_REQUEST,
                               "message": f"Invalid Request: id {json.dumps(rid)} is already in flight "
                                          f"in this session",
                               "data": {"id": rid}}
        ok, _ = self._do("admit", r)
        if not ok:  # pragma: no cover - atomic: refuse and admit cover every received request
            raise RuntimeError("model neither refused nor admitted the request")
        h = Handle(r, rid)
        self.handles[r] = h
        return "admitted", h

    def deliverable(self, handle, kind="progress") -> bool:
        """Whether a message of this request goes out on its own stream (the model's output)."""
        if not self._mine(handle):
            return False
        action = "respond" if kind == "response" else "emit"
        stream, goes = ACTION[action].output(self._logic(), self.s, self.cfg, handle.slot, None)[kind]
        return bool(goes) and stream == handle.slot

    def respond(self, handle) -> bool:
        """The request's handler answered: release its entries (by identity).  A cancelled
        request's handler stopped instead (``unwind``).  Returns whether the response goes out."""
        if not self._mine(handle):
            return False
        r = handle.slot
        goes = self.deliverable(handle, "response")
        if self.s.life[r] == Life.CANCELLED:
            self._do("unwind", r)
        else:
            self._do("respond", r)
        if self.s.life[r] in _FINISHED and not self.s.running[r]:
            self._forget(r)
        return goes

    def broken(self, handle):
        """The POST's connection ended: the model's ``break_stream``."""
        if self._mine(handle):
            self._do("break_stream", handle.slot)

    def cancel(self, rid):
        """A ``notifications/cancelled`` for ``rid``: the Handle it cancels, or None (ignored)."""
        try:
            typed = typed_id(rid)
        except InvalidId:
            return None
        if typed not in self.ids:
            return None
        tgt, hit, writes = on_cancel(self._logic(), self.s, self.cfg, self.ids[typed], NONE)
        if not hit:
            return None
        self.s = apply_writes(self.s, writes)
        return self.handles.get(tgt)

    def admitted(self, rid):
        """The Handle in flight under ``rid`` (typed), or None."""
        try:
            typed = typed_id(rid)
        except InvalidId:
            return None
        if typed not in self.ids:
            return None
        return self.handles.get(self.s.inflight[self.ids[typed]])

    def empty(self) -> bool:
        return not self.handles


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
        self.forwarded: dict[Handle, asyncio.Event] = {}  # admitted -> its POST reached the SDK

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
            return await _reply(send, 400, {"code": INVALID_REQUEST, "message":
                                            f"Invalid Request: id {json.dumps(rid)} is the server's "
                                            f"standalone stream slot; use another id", "data": {"id": rid}}, sid)
        core = self.sessions.setdefault(sid, SessionCore())
        try:
            verdict, value = core.arrive(rid)
        except InvalidId as exc:
            self._drop_if_empty(sid, core)
            return await _reply(send, 400, {"code": INVALID_REQUEST, "message": str(exc)}, sid)
        if verdict == "refused":
            self._drop_if_empty(sid, core)
            return await _reply(send, 409, value, sid)
        handle = value
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
            core.respond(handle)       # no-op when its response already released it
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
                core.broken(handle)
            goes = not replay.gone
            if message["type"] == "http.response.start":
                ctype = dict((k.lower(), v) for k, v in message.get("headers", ())).get(b"content-type", b"")
                state["sse"] = ctype.startswith(b"text/event-stream")
            elif message["type"] == "http.response.body" and not state["answered"]:
                final = not message.get("more_body", False)
                if state["sse"]:
                    if any(_is_own_response(m, rid) for m in watch.feed(message.get("body", b""))):
                        state["answered"] = True
                        goes = core.respond(handle)
                    else:
                        goes = core.deliverable(handle)
                elif final:
                    state["answered"] = True
                    goes = core.respond(handle)
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
    core = SessionCore(STDIO_CONFIG)
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
                verdict, value = self.core.arrive(msg.id)
                if verdict == "refused":
                    await self.write.send(SessionMessage(JSONRPCError(
                        jsonrpc="2.0", id=None,
                        error=ErrorData(code=value["code"], message=value["message"], data=value["data"]))))
                    continue
                handle = value
                meta = item.metadata if isinstance(item.metadata, ServerMessageMetadata) else ServerMessageMetadata()
                inner_hook = meta.on_request_unanswered

                async def unanswered(handle=handle, inner_hook=inner_hook):
                    self.core.respond(handle)      # a cancelled handler stopped: unwind
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
            handle = self.core.admitted(msg.id)
            if handle is not None and not self.core.respond(handle):
                return
        elif isinstance(item.metadata, ServerMessageMetadata) and item.metadata.related_request_id is not None:
            handle = self.core.admitted(item.metadata.related_request_id)
            if handle is not None and not self.core.deliverable(handle):
                return
        await self.inner.send(item)

    async def aclose(self):
        await self.inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()
        return None
