"""Streamable HTTP as a plain ASGI callable over the session core (run it with uvicorn).

``create_app(server, path="/mcp")`` returns the app.  No web framework: an ASGI callable is the
thinnest layer uvicorn can run (no routing tables, middleware stacks or request objects built
per call), and SSE framing is a few bytes written by hand, so a tools/call costs the JSON work,
the core's steps and the ASGI sends, nothing more.

Both revisions on one endpoint, told apart by the ``MCP-Protocol-Version`` header:

* **2026-07-28** (header ``2026-07-28``): POST only (GET and DELETE get 405), no sessions
  (``Mcp-Session-Id`` is ignored).  Each POST is its own scope: its request is admitted by a
  core of its own and everything it writes goes on its own response; a closed response stream
  is cancellation (the core's ``close``).  With no session there is no way to tell two clients
  apart, so ids of different POSTs never collide.
* **2025-11-25** (no header, or a handshake revision): ``initialize`` creates a session whose
  ``Mcp-Session-Id`` comes from :mod:`secrets`; later requests need it (400 without, 404 when
  unknown or ended).  A request's POST is answered with SSE (tool calls: progress, logs and
  server-to-client requests, then the response) or JSON (answered at once).  A duplicate of an
  id in flight gets 409 with a JSON-RPC -32600 body (``id: null``, ``data.id`` naming the id)
  before anything is registered.  One standalone GET stream per session (a second gets 409);
  it is kept in a slot of its own, never under a request id.  DELETE ends the session: its
  handlers are cancelled and pending server-to-client requests released.  A broken POST
  stream drops that stream only; its handler goes on and its later messages are dropped.

Checks on every request: ``Host`` must name this server (DNS rebinding: 421 otherwise),
``Origin`` if present must be an allowed origin (403), the body is limited (413), a JSON
array body is 400 with -32600 (no batches), an unsupported ``MCP-Protocol-Version`` is 400
(-32022; on a POST the body is read first, so the error carries the request's id), and on
2026-07-28 a request whose ``_meta`` names another revision than the header is 400 (-32020).

2026-07-28 answers a JSON-RPC error that is a request's whole reply with the HTTP status of
:data:`MODERN_ERROR_STATUS` (the transport: -32601 Method not found is 404; -32020, -32021 and
-32022 are 400; a request the schema rejects, -32602 or -32600, is 400), as a JSON body.  A
reply that follows notifications on an SSE stream keeps the stream's 200.
"""

from __future__ import annotations

import asyncio
import secrets
from urllib.parse import urlsplit

from .server import (HANDSHAKE_VERSIONS, HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, LEGACY,
                     METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, MODERN, PARSE_ERROR,
                     PROTOCOL_VERSION_META_KEY, UNSUPPORTED_PROTOCOL_VERSION, Server, Session, dumps,
                     error, error_reply, parse)

_JSON = [(b"content-type", b"application/json")]
_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")

#: 2026-07-28: the HTTP status of a request answered by a JSON-RPC error alone (other codes: 200).
#: The transport spec (basic/transports/streamable-http): -32601 is 404; -32020, -32022 and
#: -32021 are 400.  The conformance suite (SEP-2575 checks): a request whose ``_meta`` the
#: schema rejects (-32602) is 400.  The official ``mcp`` 2.3.0 server uses the same table.
MODERN_ERROR_STATUS = {
    PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400, UNSUPPORTED_PROTOCOL_VERSION: 400, METHOD_NOT_FOUND: 404,
}


def _sse(msg) -> bytes:
    return b"event: message\ndata: " + dumps(msg) + b"\n\n"


def _error_status(msg) -> int | None:
    """The 2026-07-28 HTTP status of ``msg`` if it is a JSON-RPC error with a mapped code."""
    err = msg.get("error") if "result" not in msg else None
    if isinstance(err, dict):
        return MODERN_ERROR_STATUS.get(err.get("code"))
    return None


class _Outlet:
    """One POST's response stream: messages queue here and the POST writes them as SSE."""

    __slots__ = ("items", "wake", "done", "broken")

    def __init__(self):
        self.items = []
        self.wake = None
        self.done = False
        self.broken = False

    def send(self, msg):
        if self.broken or self.done:
            return
        self.items.append(msg)
        w = self.wake
        if w is not None and not w.done():
            w.set_result(None)

    def close(self):
        self.done = True
        w = self.wake
        if w is not None and not w.done():
            w.set_result(None)


class _HttpSession(Session):
    def __init__(self, server, sid):
        super().__init__(server, "http", LEGACY)
        self.sid = sid
        self.standalone = None      # the GET stream's closer (a future), in a slot of its own


class App:
    """The ASGI app; see the module text."""

    def __init__(self, server: Server, path: str = "/mcp", allowed_hosts=None, allowed_origins=None,
                 max_body: int = 4 * 1024 * 1024):
        self.server = server
        self.path = path
        self.allowed_hosts = set(allowed_hosts or LOOPBACK)
        self.allowed_origins = set(allowed_origins or ())
        self.max_body = max_body
        self.sessions: dict[str, _HttpSession] = {}
        self._spare: list[Session] = []        # idle 2026-07-28 scopes, ready for the next POST
        self._active: set[Session] = set()     # 2026-07-28 scopes whose POST is being answered
        self._left: set[Session] = set()       # scopes no longer reachable by a request (their
                                               # POST ended, or their session was deleted) that
                                               # were not idle then: a handler still unwinding,
                                               # or a leak

    def live_requests(self) -> int:
        """Requests admitted and not finished, over every session and every 2026-07-28 POST,
        including those whose POST has ended or whose session was deleted while their handler
        still runs.  0 once everything has finished and no registry holds an entry (a request
        left in a core after its handler ended, a leak, keeps it above 0)."""
        for s in list(self._left):
            if s.idle():
                self._left.discard(s)
        scopes = [*list(self.sessions.values()), *list(self._active), *list(self._left)]
        return sum(len(s.core.live()) for s in scopes)

    # --- plumbing -------------------------------------------------------------------------
    @staticmethod
    async def _reply(send, status, body: bytes = b"", headers=(), ctype=_JSON):
        h = (ctype if body else []) + [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": h + list(headers)})
        await send({"type": "http.response.body", "body": body})

    async def _error(self, send, status, code, message, rid=None, data=None, headers=()):
        await self._reply(send, status, dumps(error_reply(rid, error(code, message, data))), headers)

    async def _unsupported(self, send, version, rid=None):
        await self._error(send, 400, UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported MCP-Protocol-Version: {version}",
                          rid, data={"supported": [LEGACY, MODERN], "requested": version})

    def _host_ok(self, host: bytes | None) -> bool:
        if host is None:
            return False
        h = host.decode("latin-1")
        name = h.rsplit(":", 1)[0] if not h.endswith("]") else h
        return name in self.allowed_hosts or h in self.allowed_hosts

    def _origin_ok(self, origin: bytes | None) -> bool:
        if origin is None:
            return True
        o = origin.decode("latin-1")
        if o in self.allowed_origins:
            return True
        try:
            return urlsplit(o).hostname in {n.strip("[]") for n in self.allowed_hosts}
        except ValueError:
            return False

    async def _body(self, receive, headers) -> bytes | None:
        clen = headers.get(b"content-length")
        if clen is not None:
            try:
                if int(clen) > self.max_body:
                    return None
            except ValueError:
                return None
        chunks = []
        size = 0
        while True:
            m = await receive()
            if m["type"] == "http.disconnect":
                return b""
            chunk = m.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not m.get("more_body"):
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # --- ASGI ------------------------------------------------------------------------------
    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind == "lifespan":
            return await self._lifespan(receive, send)
        if kind != "http":
            return
        if scope["path"] != self.path:
            return await self._reply(send, 404, b"Not Found", ctype=[(b"content-type", b"text/plain")])
        headers = dict(scope["headers"])
        if not self._host_ok(headers.get(b"host")):
            return await self._error(send, 421, -32600, "Misdirected Request: Host is not this server")
        if not self._origin_ok(headers.get(b"origin")):
            return await self._error(send, 403, -32600, "Forbidden: Origin not allowed")
        version = headers.get(b"mcp-protocol-version")
        version = version.decode("latin-1") if version is not None else None
        supported = version is None or version == MODERN or version in HANDSHAKE_VERSIONS
        method = scope["method"]
        if method == "POST":
            return await self._post(scope, receive, send, headers, version == MODERN,
                                    None if supported else version)
        if not supported:
            return await self._unsupported(send, version)
        if version == MODERN:
            return await self._reply(send, 405, b"", [(b"allow", b"POST")])
        if method == "GET":
            return await self._get(receive, send, headers)
        if method == "DELETE":
            return await self._delete(send, headers)
        return await self._reply(send, 405, b"", [(b"allow", b"GET, POST, DELETE")])

    async def _lifespan(self, receive, send):
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif m["type"] == "lifespan.shutdown":
                for s in list(self.sessions.values()):
                    self._end(s)
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _session(self, headers):
        """(session, None) or (None, (status, message))."""
        sid = headers.get(b"mcp-session-id")
        if sid is None:
            return None, (400, "Bad Request: Mcp-Session-Id header is required")
        s = self.sessions.get(sid.decode("latin-1"))
        if s is None:
            return None, (404, "Session not found")
        return s, None

    def _end(self, s: _HttpSession):
        self.sessions.pop(s.sid, None)
        s.end()
        if not s.idle():
            self._left.add(s)
        if s.standalone is not None and not s.standalone.done():
            s.standalone.set_result(None)

    async def _post(self, scope, receive, send, headers, modern, unsupported=None):
        body = await self._body(receive, headers)
        if body is None:
            return await self._error(send, 413, -32600, "Payload Too Large")
        inc = parse(body)
        if unsupported is not None:         # the request's id, when it has a readable one
            return await self._unsupported(send, unsupported, inc.id)
        if inc.kind == "invalid":
            return await self._error(send, 400, inc.error["code"], inc.error["message"], inc.id,
                                     inc.error.get("data"))
        msg = inc.msg
        if modern:
            if inc.kind != "request":
                return await self._reply(send, 202)
            meta = (msg.get("params") or {}).get("_meta") if isinstance(msg.get("params"), dict) else None
            stated = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
            if stated is not None and stated != MODERN:
                return await self._error(send, 400, HEADER_MISMATCH,
                                         f"MCP-Protocol-Version header {MODERN} does not match the "
                                         f"request's _meta protocol version {stated}", msg["id"])
            # no session: each POST is its own scope; an idle scope is reused (its core is empty)
            spare = self._spare
            session = spare.pop() if spare else Session(self.server, "http", MODERN)
            self._active.add(session)
            try:
                return await self._request(session, msg, receive, send, ())
            finally:
                self._active.discard(session)
                if not session.idle():
                    self._left.add(session)
                elif len(spare) < 256:
                    spare.append(session)
        if inc.kind == "request" and msg["method"] == "initialize" and b"mcp-session-id" not in headers:
            sid = secrets.token_urlsafe(24)
            session = _HttpSession(self.server, sid)
            self.sessions[sid] = session
            extra = [(b"mcp-session-id", sid.encode())]
            return await self._request(session, msg, receive, send, extra)
        session, err = self._session(headers)
        if err is not None:
            return await self._error(send, err[0], -32600, err[1])
        if inc.kind == "request":
            return await self._request(session, msg, receive, send, ())
        if inc.kind == "notification":
            session.notification(msg)
        else:
            session.response(msg)
        return await self._reply(send, 202)

    async def _request(self, session: Session, msg, receive, send, extra):
        outlet = _Outlet()
        status, value = session.request(msg, outlet)
        if status == "refused":
            return await self._reply(send, 409, dumps(error_reply(None, value)), extra)
        modern = session.revision == MODERN
        if status == "reply":
            if value is None:      # the core routed the reply nowhere (not reachable on a fresh POST)
                return await self._reply(send, 202, b"", extra)
            return await self._reply(send, (modern and _error_status(value)) or 200, dumps(value), extra)
        handle = value
        await asyncio.sleep(0)          # let the handler take its first step
        if outlet.done:                 # it has already answered: one body, no stream to watch
            items = outlet.items
            if modern and len(items) == 1 and _error_status(items[0]):
                return await self._reply(send, _error_status(items[0]), dumps(items[0]), extra)
            body = b"".join(_sse(m) for m in items)
            return await self._reply(send, 200, body, extra, ctype=_SSE)
        loop = asyncio.get_running_loop()
        watcher = loop.create_task(self._watch(session, handle, outlet, receive))
        started = False
        try:
            while True:
                if not outlet.items and not outlet.done:
                    outlet.wake = loop.create_future()
                    await outlet.wake
                    outlet.wake = None
                if outlet.broken:
                    return
                items, outlet.items = outlet.items, []
                last = outlet.done and not outlet.items
                if not started and last and modern and len(items) == 1 and _error_status(items[0]):
                    # an error is the whole reply: its own status, as JSON
                    return await self._reply(send, _error_status(items[0]), dumps(items[0]), extra)
                chunk = b"".join(_sse(m) for m in items)
                if not started:
                    await send({"type": "http.response.start", "status": 200, "headers": _SSE + list(extra)})
                    started = True
                await send({"type": "http.response.body", "body": chunk, "more_body": not last})
                if last:
                    return
        except OSError:          # the client went away while we wrote
            outlet.broken = True
            session.closed(handle)
        finally:
            watcher.cancel()

    async def _watch(self, session, handle, outlet, receive):
        while True:
            m = await receive()
            if m["type"] == "http.disconnect":
                if not outlet.done:
                    outlet.broken = True
                    session.closed(handle)
                    w = outlet.wake
                    if w is not None and not w.done():
                        w.set_result(None)
                return

    async def _get(self, receive, send, headers):
        session, err = self._session(headers)
        if err is not None:
            return await self._error(send, err[0], -32600, err[1])
        if session.standalone is not None:
            return await self._error(send, 409, -32600, "Conflict: this session already has a standalone stream")
        loop = asyncio.get_running_loop()
        closer = session.standalone = loop.create_future()
        await send({"type": "http.response.start", "status": 200, "headers": _SSE})
        await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})

        async def watch():
            while (await receive())["type"] != "http.disconnect":
                pass
            if not closer.done():
                closer.set_result(None)

        watcher = loop.create_task(watch())
        try:
            await closer
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                pass
        finally:
            watcher.cancel()
            if session.standalone is closer:
                session.standalone = None

    async def _delete(self, send, headers):
        session, err = self._session(headers)
        if err is not None:
            return await self._error(send, err[0], -32600, err[1])
        self._end(session)
        return await self._reply(send, 200)


def create_app(server: Server, path: str = "/mcp", **options) -> App:
    """The Streamable HTTP ASGI app for ``server`` at ``path`` (options: ``allowed_hosts``,
    ``allowed_origins``, ``max_body``)."""
    return App(server, path, **options)
