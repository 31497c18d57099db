"""Where a Streamable HTTP app keeps its 2025-11-25 sessions: the session-store strategy.

:class:`~.http.App` is one request path for every deployment; what differs between one process
and several workers sharing a Redis is behind :class:`SessionStore`, which the app calls at the
points where the two differ and nowhere else:

* finding a request's session (``find``) and making one (``initialize``): a dict of this
  process, or a record in Redis of which each worker keeps a local view;
* admitting a request (``request``): the local core alone, or the store's ``claim`` first and
  its ``release`` at the end (the lease protocol of ``model/lease.py``);
* a notification or an answer for a request that may run on another worker (``notification``,
  ``answer``), a ``Last-Event-ID`` resume of a stream kept elsewhere (``resume``), the end of a
  session (``delete``), a 2026-07-28 ``requestState`` that must be single-use over every worker
  (``state_replayed``);
* the app's life (``start``, ``stop``) and each HTTP exchange (``wrap``: a worker names itself
  in a response header and answers 503 when the store fails).

Two implementations: :class:`~.memory_sessions.MemorySessions` (the default: sessions in this
process, resumable streams in the app's event store) and :class:`~.redis_http.RedisSessions` (a
worker of several). ``create_app(server, store=...)`` composes one; ``create_app(server, redis=URL)``
makes the Redis one.

A store is given the app it serves (``attach``) and uses the app only through :class:`Host`,
the app's public surface for stores.  This module imports neither the app nor a store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .asgi_types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:  # pragma: no cover - names for the annotations only
    from .events import EventStore
    from .http_checks import BodyReader, Headers
    from .server import Server, Session
    from .streams import HttpSession, StreamOutlet

__all__ = ["ASGIApp", "Host", "Receive", "Scope", "Send", "SessionLookup", "SessionStore"]

#: (the session, None) or (None, (HTTP status, message))
SessionLookup = tuple["HttpSession | None", "tuple[int, str] | None"]


class Host(Protocol):
    """What a session store may use of the app it serves."""

    server: Server
    sessions: dict[str, HttpSession]
    bodies: BodyReader
    event_store: EventStore | None
    max_sessions: int | None
    max_in_flight: int | None
    session_idle_timeout: float | None
    retry_ms: int

    def sweep(self, now: float) -> None: ...
    def expired(self, s: HttpSession, now: float) -> bool: ...
    def end_session(self, s: HttpSession) -> None: ...
    async def too_many_sessions(self, send: Send, rid: Any) -> None: ...
    async def run_request(
        self,
        session: Session,
        msg: dict[str, Any],
        receive: Receive,
        send: Send,
        extra: tuple[tuple[bytes, bytes], ...] | list[tuple[bytes, bytes]],
    ) -> None: ...
    async def start_stream(
        self, session: Session, handle: Any, outlet: StreamOutlet, receive: Receive, send: Send
    ) -> None: ...
    async def pump(
        self,
        session: Session,
        handle: Any,
        outlet: StreamOutlet,
        token: object,
        receive: Receive,
        send: Send,
        headers: list[tuple[bytes, bytes]],
        first: bytes = b"",
    ) -> None: ...
    async def standalone_stream(
        self,
        session: HttpSession,
        receive: Receive,
        send: Send,
        first: bytes = b"",
        name: str | None = None,
    ) -> None: ...


class SessionStore(Protocol):
    """The app's session-store strategy (see the module text)."""

    def attach(self, app: Host) -> None:
        """Serve ``app`` (called once, by the app's constructor)."""

    def wrap(self, inner: ASGIApp) -> ASGIApp:
        """The ASGI callable of each exchange, around the app's own (``inner`` itself when
        there is nothing to add)."""

    async def start(self) -> None:
        """At the lifespan's startup; an exception's text is the startup failure reported."""

    async def stop(self) -> None:
        """At the lifespan's shutdown: end what the store holds."""

    async def find(self, headers: Headers) -> SessionLookup:
        """The request's session by its ``Mcp-Session-Id``, or the HTTP error."""

    async def initialize(self, msg: dict[str, Any], send: Send) -> None:
        """``initialize`` without a session id: make a session and answer."""

    async def request(
        self, session: HttpSession, msg: dict[str, Any], receive: Receive, send: Send
    ) -> None:
        """A request of a 2025-11-25 session: admit it (or refuse it) and answer it."""

    async def notification(self, session: HttpSession, msg: dict[str, Any]) -> None:
        """A client's notification (``notifications/cancelled`` may mean another worker's)."""

    async def answer(self, session: HttpSession, msg: dict[str, Any]) -> None:
        """A client's answer to a server-to-client request."""

    async def resume(self, session: HttpSession, last: str, receive: Receive, send: Send) -> bool:
        """GET with ``Last-Event-ID``: answer it and say True, or False when this store does
        not resume (the GET is then a standalone stream)."""

    async def delete(self, session: HttpSession) -> None:
        """DELETE: end the session (everywhere it is held)."""

    async def state_replayed(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """2026-07-28: the error reply when ``msg``'s ``requestState`` was already used
        elsewhere (another worker, or before a restart); None to go on."""

    async def shared_reply(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """2026-07-28: the reply to a request the store answers itself (a task method of the
        extension, from a store shared by workers); None: the request runs in its scope."""
