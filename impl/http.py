"""Streamable HTTP as a plain ASGI callable over the session core (run it with uvicorn).

A reader follows one POST from headers to response here: the routing, the sessions and every
status code.  How an admitted request's stream is written to its connection (and what a dropped
or slow connection does to it) is :mod:`.http_writer`, a base class of the app; the default
session store, sessions in this process, is :mod:`.memory_sessions`.  What a request must pass before a session sees it (headers
given once, content negotiation, Host and Origin, the body's size and time bounds) is
:mod:`.http_checks`, verdicts on the request's bytes and the app's options alone.

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
  handlers are cancelled and pending server-to-client requests released.

Resumable streams (2025-11-25, with an event store: the default).  Every event on a POST
stream and on the standalone stream has an id from the store (:mod:`.events`: unique within the
session, naming its stream, never a request id); a POST stream starts with a priming event (an
id, empty data and ``retry``).  A dropped connection is neither a cancel nor a broken stream:
the stream is detached, its handler goes on, and what it sends (progress, logs, server-to-client
requests, the response) is kept.  ``GET`` with ``Last-Event-ID`` replays that id's stream only,
from after that id, and then, while the stream has not ended, this connection writes its later
events (a newer resume takes the stream over from an older one).  An id the store cannot resume
from (malformed, of another session, of no event of this session, or older than an event the
store's bounds dropped) is 400 with -32600: not 404, which on a request with a session id
tells the client its session is gone (and makes it initialize again), while the session is
fine.  With ``event_store=None`` no event has an id, ``Last-Event-ID`` is ignored and a broken
POST stream drops that stream only: its handler goes on and its later messages are dropped.

Checks on every request: ``Host`` must name this server (DNS rebinding: 421 otherwise),
``Origin`` if present must be an allowed origin (403), the body is limited (413), a JSON
array body is 400 with -32600 (no batches), an unsupported ``MCP-Protocol-Version`` is 400
(-32022; on a POST the body is read first, so the error carries the request's id), and on
2026-07-28 a request whose ``_meta`` names another revision than the header is 400 (-32020).

2026-07-28 answers a JSON-RPC error that is a request's whole reply with the HTTP status of
:data:`MODERN_ERROR_STATUS` (the transport: -32601 Method not found is 404; -32020, -32021 and
-32022 are 400; a request the schema rejects, -32602 or -32600, is 400), as a JSON body.  A
reply that follows notifications on an SSE stream keeps the stream's 200, and so does one that
comes after the handler's first step: a running request's headers (200, SSE) are sent as soon as
the handler has taken that step, so a handler silent for long does not trip a client's read
timeout waiting for them.
"""

from __future__ import annotations

from typing import Any

from .asgi_types import Receive, Scope, Send
from .events import EventStore, MemoryEventStore
from .http_checks import (
    LOOPBACK,
    SINGLE,
    BodyReader,
    Headers,
    HostCheck,
    accepts,
    accepts_post,
    is_json,
)
from .http_writer import MODERN_ERROR_STATUS, StreamWriting, error_status
from .memory_sessions import MemorySessions
from .messages import (
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INVALID_REQUEST,
    LEGACY,
    MODERN,
    PROTOCOL_VERSION_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    Kind,
    dumps,
    error_reply,
    parse,
)
from .server import Refused, Running, Server, Session
from .stores import SessionStore
from .streams import (
    MAX_STREAM_BUFFER,
    SERVER_BUSY,
    HttpSession,
    StreamOutlet,
    busy_response,
    json_body,
)

__all__ = [
    "LOOPBACK",
    "MODERN_ERROR_STATUS",
    "SERVER_BUSY",
    "App",
    "MemorySessions",
    "create_app",
]


#: the name earlier releases gave the POST stream (kept for callers of this module)
_Outlet = StreamOutlet


class App(StreamWriting):
    """The ASGI app; see the module text.

    Resource bounds (each a keyword of :func:`create_app`; ``None`` turns a bound off):

    * ``max_body`` (4 MiB): a larger body is 413, refused as soon as its size is known (from
      ``Content-Length`` or while it streams), never buffered whole.
    * ``max_sessions`` (1024): ``initialize`` beyond it is 503 with ``Retry-After`` (after idle
      sessions past their expiry are dropped).
    * ``session_idle_timeout`` (3600 s): a 2025-11-25 session with no request in flight, no
      standalone stream and no request for that long is ended; its id then gets 404, which the
      official client answers by initialising again.
    * ``max_in_flight`` (256): a request arriving while that many of its session's handlers run
      is 429 (before the core sees it: the request is not admitted, its id stays free).
    * ``max_stream_buffer`` (1 MiB): the bytes queued for one stream's connection; a client
      that reads its stream slower than its handler writes is cut off there (the connection is
      closed, and the request is treated as on a closed stream: 2025-11-25 goes on without a
      stream, or detached and kept for a resume with an event store; 2026-07-28 is cancelled).
    * ``max_detached`` (1024) and ``detached_timeout`` (600 s): handlers left running after
      their connection went away (2025-11-25: a disconnect is not a cancel), over the whole
      process; beyond the number a newly detached handler is cancelled at once, and one still
      running after the time is cancelled then.
    * ``body_timeout`` (30 s): a body not all there that long after its request began is 408
      (checked about once a second).  Slow headers are the HTTP server's (``serve`` gives
      uvicorn a deadline on them).

    Resumption: ``event_store`` (default ``"memory"``: a :class:`.events.MemoryEventStore` of
    its own, bounded per session and in total; an :class:`.events.EventStore`; or ``None``, no
    resumption) and ``retry_ms`` (1000: the ``retry`` the priming events give clients).  On by
    default because the official client resumes by itself when a stream drops after an event
    with an id, and a request whose connection dropped otherwise loses its response; the store's
    bounds cap what that costs in memory.
    """

    def __init__(
        self,
        server: Server,
        path: str = "/mcp",
        allowed_hosts: Any = None,
        allowed_origins: Any = None,
        max_body: int | None = 4 * 1024 * 1024,
        max_sessions: int | None = 1024,
        session_idle_timeout: float | None = 3600.0,
        max_in_flight: int | None = 256,
        body_timeout: float | None = 30.0,
        event_store: EventStore | None | str = "memory",
        retry_ms: int = 1000,
        max_stream_buffer: int | None = MAX_STREAM_BUFFER,
        max_detached: int | None = 1024,
        detached_timeout: float | None = 600.0,
        store: SessionStore | None = None,
    ) -> None:
        self.server = server
        self.path = path
        self.hosts = HostCheck(allowed_hosts, allowed_origins)
        self.bodies = BodyReader(max_body, body_timeout)
        self.max_sessions = max_sessions
        self.session_idle_timeout = session_idle_timeout
        self.max_in_flight = max_in_flight
        self.max_stream_buffer = max_stream_buffer
        self.slow_readers_cut = 0  # streams cut off for a reader too slow
        self.max_detached = max_detached
        self.detached_timeout = detached_timeout
        self.detached: dict = {}  # outlet of a handler running without its connection -> timer
        self.detached_cancelled = 0  # detached handlers cancelled by either bound
        self.sessions: dict[str, HttpSession] = {}
        if event_store == "memory":
            event_store = MemoryEventStore()
        elif isinstance(event_store, str):
            raise ValueError(f"event_store: {event_store!r} (an EventStore, 'memory' or None)")
        self.event_store = event_store
        self.retry_ms = retry_ms
        self._spare: list[Session] = []  # idle 2026-07-28 scopes, ready for the next POST
        self._active: set[Session] = set()  # 2026-07-28 scopes whose POST is being answered
        self._left: set[Session] = set()  # scopes no longer reachable by a request (their
        # POST ended, or their session was deleted) whose
        # handlers still unwind; each leaves this set
        # when its last handler finishes (``on_idle``)
        self._next_sweep = 0.0
        self.store: SessionStore = MemorySessions() if store is None else store
        self.store.attach(self)
        self._exchange = self.store.wrap(self._serve)

    def live_requests(self) -> int:
        """Requests admitted and not finished, over every session and every 2026-07-28 POST,
        including those whose POST has ended or whose session was deleted while their handler
        still runs.  0 once everything has finished and no registry holds an entry (a request
        left in a core after its handler ended, a leak, keeps it above 0)."""
        scopes = [*list(self.sessions.values()), *list(self._active), *list(self._left)]
        return sum(len(s.core.live()) for s in scopes)

    def _leave(self, s: Session) -> None:
        """``s`` is no longer reachable by a request: keep it only while a handler unwinds."""
        if s.idle():
            self._left.discard(s)
            s.on_idle = None
        else:
            s.on_idle = self._leave
            self._left.add(s)

    # --- plumbing -------------------------------------------------------------------------
    async def _unsupported(self, send: Send, version: Any, rid: Any = None) -> None:
        await self._error(
            send,
            400,
            UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported MCP-Protocol-Version: {version}",
            rid,
            data={"supported": [LEGACY, MODERN], "requested": version},
        )

    # --- ASGI ------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> Any:
        kind = scope["type"]
        if kind == "lifespan":
            return await self._lifespan(receive, send)
        if kind != "http":
            return
        return await self._exchange(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> Any:
        if scope["path"] != self.path:
            return await self._reply(
                send, 404, b"Not Found", ctype=[(b"content-type", b"text/plain")]
            )
        headers = Headers.of(scope["headers"])
        if headers.twice:
            twice = sorted(n.decode("latin-1") for n in headers.twice.intersection(SINGLE))
            if twice:
                return await self._error(
                    send,
                    400,
                    INVALID_REQUEST,
                    f"Bad Request: header given more than once: {', '.join(twice)}",
                )
        server_addr = scope.get("server")
        own_port = server_addr[1] if server_addr and len(server_addr) > 1 else None
        if not self.hosts.checked("host", headers.get(b"host"), own_port):
            return await self._error(
                send, 421, -32600, "Misdirected Request: Host is not this server"
            )
        origin = headers.get(b"origin")
        if origin is not None and not self.hosts.checked("origin", origin, own_port):
            return await self._error(send, 403, -32600, "Forbidden: Origin not allowed")
        version = headers.get(b"mcp-protocol-version")
        version = version.decode("latin-1") if version is not None else None
        supported = version is None or version == MODERN or version in HANDSHAKE_VERSIONS
        method = scope["method"]
        if method == "POST":
            if not accepts_post(headers.get(b"accept")):
                return await self._error(
                    send,
                    406,
                    INVALID_REQUEST,
                    "Not Acceptable: the client must "
                    "accept both application/json and text/event-stream",
                )
            if not is_json(headers.get(b"content-type")):
                return await self._error(
                    send,
                    415,
                    INVALID_REQUEST,
                    "Unsupported Media Type: Content-Type must be application/json",
                )
            return await self._post(
                scope, receive, send, headers, version == MODERN, None if supported else version
            )
        if not supported:
            return await self._unsupported(send, version)
        if version == MODERN:
            return await self._reply(send, 405, b"", [(b"allow", b"POST")])
        if method == "GET":
            if not accepts(headers.get(b"accept"), "text/event-stream"):
                return await self._error(
                    send,
                    406,
                    INVALID_REQUEST,
                    "Not Acceptable: the client must accept text/event-stream",
                )
            return await self._get(receive, send, headers)
        if method == "DELETE":
            return await self._delete(send, headers)
        return await self._reply(send, 405, b"", [(b"allow", b"GET, POST, DELETE")])

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                try:
                    await self.store.start()
                except Exception as e:  # noqa: BLE001 - reported to the server, which stops
                    await send({"type": "lifespan.startup.failed", "message": str(e)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif m["type"] == "lifespan.shutdown":
                await self.store.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def expired(self, s: HttpSession, now: float) -> bool:
        return (
            self.session_idle_timeout is not None
            and now - s.seen > self.session_idle_timeout
            and s.standalone is None
            and s.idle()
        )

    def sweep(self, now: float) -> None:
        """End the sessions past their idle expiry (run at most once per second, lazily)."""
        if self.session_idle_timeout is None or now < self._next_sweep:
            return
        self._next_sweep = now + min(1.0, self.session_idle_timeout)
        for s in [s for s in self.sessions.values() if self.expired(s, now)]:
            self.end_session(s)

    def end_session(self, s: HttpSession) -> None:
        """``s`` ends here: its handlers are cancelled, its standalone stream closed."""
        self.sessions.pop(s.sid, None)
        s.end()
        self._leave(s)
        if s.standalone is not None and not s.standalone.done():
            s.standalone.set_result(None)
        if s.store is not None:
            s.store.forget(s.sid)

    async def _post(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: Headers,
        modern: Any,
        unsupported: Any = None,
    ) -> Any:
        body = await self.bodies.read(receive, headers)
        if isinstance(body, int):
            if body == 413:
                return await self._error(send, 413, -32600, "Payload Too Large")
            if body == 408:
                return await self._error(
                    send, 408, -32600, "Request Timeout: the body came too slowly"
                )
            return await self._error(
                send,
                400,
                -32600,
                "Bad Request: the body is incomplete or its Content-Length is not a number",
            )
        inc = parse(body)
        if unsupported is not None:  # the request's id, when it has a readable one
            return await self._unsupported(send, unsupported, inc.id)
        if inc.kind is Kind.INVALID:
            return await self._error(
                send, 400, inc.error["code"], inc.error["message"], inc.id, inc.error.get("data")
            )
        msg = inc.msg
        if modern:
            if inc.kind is not Kind.REQUEST:
                return await self._reply(send, 202)
            meta = (
                (msg.get("params") or {}).get("_meta")
                if isinstance(msg.get("params"), dict)
                else None
            )
            stated = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
            if stated is not None and stated != MODERN:
                return await self._error(
                    send,
                    400,
                    HEADER_MISMATCH,
                    f"MCP-Protocol-Version header {MODERN} does not match the "
                    f"request's _meta protocol version {stated}",
                    msg["id"],
                )
            # no session: each POST is its own scope; an idle scope is reused (its core is empty)
            spare = self._spare
            session = spare.pop() if spare else Session(self.server, "http", MODERN)
            client = scope.get("client")
            session.peer = client[0] if client else None
            self._active.add(session)
            try:
                replayed = await self.store.state_replayed(msg)
                if replayed is not None:
                    return await self._reply(send, 400, dumps(replayed))
                own = await self.store.shared_reply(msg)
                if own is not None:
                    return await self._reply(send, error_status(own) or 200, dumps(own))
                return await self.run_request(session, msg, receive, send, ())
            finally:
                self._active.discard(session)
                if not session.idle():
                    self._leave(session)
                elif len(spare) < 256:
                    spare.append(session)
        store = self.store
        if (
            inc.kind is Kind.REQUEST
            and msg["method"] == "initialize"
            and b"mcp-session-id" not in headers
        ):
            return await store.initialize(msg, send)
        shared, err = await store.find(headers)
        if err is not None or shared is None:
            assert err is not None
            return await self._error(send, err[0], -32600, err[1])
        if inc.kind is Kind.REQUEST:
            return await store.request(shared, msg, receive, send)
        if inc.kind is Kind.NOTIFICATION:
            await store.notification(shared, msg)
        else:
            await store.answer(shared, msg)
        return await self._reply(send, 202)

    async def run_request(
        self, session: Session, msg: dict[str, Any], receive: Receive, send: Send, extra: Any
    ) -> Any:
        """The request path of one session's core: admitted (its stream, :meth:`start_stream`),
        answered at once, or refused (409)."""
        if self.max_in_flight is not None and len(session.tasks) >= self.max_in_flight:
            return await busy_response(send, msg["id"], extra)
        if isinstance(session, HttpSession) and session.store is not None:
            outlet = session.outlet()  # kept: resumable
        else:
            outlet = StreamOutlet()
        arrival = session.request(msg, outlet)
        if isinstance(arrival, Running):
            return await self.start_stream(session, arrival.handle, outlet, receive, send, extra)
        if isinstance(arrival, Refused):
            return await self._reply(send, 409, dumps(error_reply(None, arrival.error)), extra)
        value = arrival.reply
        if value is None:  # the core routed the reply nowhere (not reachable on a fresh POST)
            return await self._reply(send, 202, b"", extra)
        modern = session.revision == MODERN
        return await self._reply(
            send, (modern and error_status(value)) or 200, json_body(value), extra
        )

    async def too_many_sessions(self, send: Send, rid: Any) -> Any:
        """``initialize`` beyond ``max_sessions``: 503 with ``Retry-After``."""
        return await self._error(
            send,
            503,
            SERVER_BUSY,
            "Service Unavailable: too many sessions; try again later",
            rid,
            headers=[(b"retry-after", b"1")],
        )

    async def _get(self, receive: Receive, send: Send, headers: Headers) -> Any:
        session, err = await self.store.find(headers)
        if err is not None or session is None:
            assert err is not None
            return await self._error(send, err[0], -32600, err[1])
        last = headers.get(b"last-event-id")
        if last is not None and await self.store.resume(
            session, last.decode("latin-1"), receive, send
        ):
            return
        return await self.standalone_stream(session, receive, send)

    async def _delete(self, send: Send, headers: Headers) -> Any:
        session, err = await self.store.find(headers)
        if err is not None or session is None:
            assert err is not None
            return await self._error(send, err[0], -32600, err[1])
        await self.store.delete(session)
        return await self._reply(send, 200)


def create_app(
    server: Server,
    path: str = "/mcp",
    redis: str | None = None,
    store: SessionStore | None = None,
    **options: Any,
) -> App:
    """The Streamable HTTP ASGI app for ``server`` at ``path`` (options: ``allowed_hosts``,
    ``allowed_origins``, and the resource bounds of :class:`App`).

    ``store``: where 2025-11-25 sessions are kept (a :class:`.stores.SessionStore`; default
    :class:`MemorySessions`, this process).  ``redis``: a Redis URL, for one of several workers
    sharing 2025-11-25 sessions: a :class:`.redis_http.RedisSessions` made with the options it
    takes (``lease_ms``, ``resumable``, ``store_timeout``, ``max_event_bytes``)."""
    if redis is not None:
        if store is not None:
            raise ValueError("create_app: give redis or store, not both")
        from .redis_http import RedisSessions

        store = RedisSessions.from_options(redis, options)
    return App(server, path, store=store, **options)
