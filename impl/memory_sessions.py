"""The default session store of the Streamable HTTP app: 2025-11-25 sessions in this process.

:class:`MemorySessions` is the :class:`.stores.SessionStore` that :func:`.http.create_app` gives
an app unless told otherwise: the sessions are the app's own dict, a session's resumable
streams are in the app's event store, and a ``Last-Event-ID`` resume is answered from that
store.  It uses the app only through :class:`.stores.Host`, as every store does
(:class:`.redis_http.RedisSessions` is the other), so this module does not import the app.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Coroutine
from typing import Any

from . import sse
from .asgi_types import ASGIApp, Receive, Send
from .events import ReplayRefused
from .http_checks import Headers
from .messages import INVALID_REQUEST, error_reply
from .server import Answered, Refused
from .stores import Host, SessionLookup
from .streams import (
    SSE_HEADERS,
    HttpSession,
    StreamOutlet,
    attached,
    error_response,
    json_body,
    reply,
)

__all__ = ["MemorySessions"]


class MemorySessions:
    """The default session store: 2025-11-25 sessions in this process (the app's ``sessions``),
    resumable streams in the app's event store.  See :class:`.stores.SessionStore`."""

    app: Host

    def attach(self, app: Host) -> None:
        self.app = app

    def wrap(self, inner: ASGIApp) -> ASGIApp:
        return inner

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        for s in list(self.app.sessions.values()):
            self.app.end_session(s)

    async def find(self, headers: Headers) -> SessionLookup:
        """(session, None) or (None, (status, message))."""
        sid = headers.get(b"mcp-session-id")
        if sid is None:
            return None, (400, "Bad Request: Mcp-Session-Id header is required")
        s = self.app.sessions.get(sid.decode("latin-1"))
        if s is None:
            return None, (404, "Session not found")
        now = asyncio.get_running_loop().time()
        if self.app.expired(s, now):
            self.app.end_session(s)
            return None, (404, "Session not found")
        s.seen = now
        return s, None

    async def initialize(self, msg: dict[str, Any], send: Send) -> None:
        app = self.app
        now = asyncio.get_running_loop().time()
        app.sweep(now)
        if app.max_sessions is not None and len(app.sessions) >= app.max_sessions:
            for s in [s for s in app.sessions.values() if app.expired(s, now)]:
                app.end_session(s)
            if len(app.sessions) >= app.max_sessions:
                return await app.too_many_sessions(send, msg["id"])
        sid = secrets.token_urlsafe(24)
        session = HttpSession(app.server, sid, app.event_store)
        session.seen = now
        arrival = session.request(msg, StreamOutlet())
        if isinstance(arrival, Answered):
            value = arrival.reply
            if value is not None and "result" in value:
                app.sessions[sid] = session  # a session exists only once initialize succeeded
                headers = [(b"mcp-session-id", sid.encode())]
                return await reply(send, 200, json_body(value), headers)
            return await reply(send, 200, json_body(value))
        assert isinstance(arrival, Refused)  # initialize is answered at once, never run
        return await reply(send, 409, json_body(error_reply(None, arrival.error)))

    def request(
        self, session: Any, msg: dict[str, Any], receive: Receive, send: Send
    ) -> Coroutine[Any, Any, None]:
        # the app's request path itself (awaited by the app), not a coroutine around it
        return self.app.run_request(session, msg, receive, send, ())

    async def notification(self, session: Any, msg: dict[str, Any]) -> None:
        session.notification(msg)

    async def answer(self, session: Any, msg: dict[str, Any]) -> None:
        session.response(msg)

    async def resume(self, session: Any, last: Any, receive: Receive, send: Send) -> bool:
        if session.store is None:  # no event store: Last-Event-ID is ignored
            return False
        await self._replay(session, last, receive, send)
        return True

    async def _replay(self, session: Any, last_event_id: Any, receive: Receive, send: Send) -> Any:
        """GET with ``Last-Event-ID``: that id's stream only.  The events after the id are
        written first, then (while the stream has not ended) its later events as they come, on
        this connection, which becomes the stream's owner.  The replay is read and the stream
        attached in one step of the event loop, so no event is both replayed and queued."""
        try:
            stream, events = session.store.replay(session.sid, last_event_id)
        except ReplayRefused as e:
            return await error_response(send, 400, INVALID_REQUEST, f"Bad Request: {e}")
        first = b"".join(sse.encode(d, id=eid) for eid, d in events)
        outlet = session.live.get(stream)
        if stream.startswith("g"):  # the standalone stream: nothing was ever written on it
            return await self.app.standalone_stream(session, receive, send, first, stream)
        if outlet is None or outlet.done:  # the stream has ended: what was kept, then the end
            return await reply(send, 200, first, ctype=SSE_HEADERS)
        token = object()
        previous, outlet.owner = outlet.owner, token
        attached(outlet)
        outlet.take()  # queued for the previous owner, and so in the replay
        if previous is not None:
            outlet.wake_writer()  # the previous connection ends its response
            outlet.wake = None
        await self.app.pump(session, None, outlet, token, receive, send, SSE_HEADERS, first)

    async def delete(self, session: Any) -> None:
        self.app.end_session(session)

    async def state_replayed(self, msg: dict[str, Any]) -> None:
        return None  # the server's own check (one process) is the whole of it

    async def shared_reply(self, msg: dict[str, Any]) -> None:
        return None  # one process: every request is its session's
