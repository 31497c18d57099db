"""The streams of Streamable HTTP: what an app and its session store both write to.

:class:`StreamOutlet` is one POST's response stream (a queue that the connection owning the
stream writes as SSE; kept with event ids when the session has an event store), and
:class:`HttpSession` a 2025-11-25 session as the app keeps it (its standalone stream's slot, its
kept streams).  The app (:mod:`.http`, which writes them with :mod:`.http_writer`) and the
session stores (:mod:`.memory_sessions`, :mod:`.redis_http`) read this module; it reads
neither.  Also here: the few bytes of an HTTP
reply that both write (:func:`reply`, :func:`error_response`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from . import sse
from .asgi_types import Send
from .messages import LEGACY, dumps, encode_message, error, error_reply
from .server import Session

__all__ = [
    "JSON_HEADERS",
    "MAX_STREAM_BUFFER",
    "MEASURE_AFTER",
    "SERVER_BUSY",
    "SSE_HEADERS",
    "HttpSession",
    "StreamOutlet",
    "attached",
    "error_response",
    "json_body",
    "reply",
    "sse_event",
]

#: response headers
HeaderList = list[tuple[bytes, bytes]]

JSON_HEADERS: HeaderList = [(b"content-type", b"application/json")]
SSE_HEADERS: HeaderList = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
#: JSON-RPC code of a request refused for a resource bound (too many sessions or requests); the
#: implementation-defined server-error range of JSON-RPC 2.0.
SERVER_BUSY = -32000
#: the message of a request refused because its session has ``max_in_flight`` requests running
TOO_MANY_IN_FLIGHT = "Too Many Requests: too many requests in flight in this session"
#: the default bound on the bytes queued for one stream's writer (a reader that slow is cut off)
MAX_STREAM_BUFFER = 1024 * 1024
#: how many queued messages are left uncounted (a writer that keeps up never pays for counting)
MEASURE_AFTER = 8


def sse_event(msg: Any) -> bytes:
    """``msg`` as one SSE event (a kept stream's items are events already)."""
    if type(msg) is bytes:  # already an event (a kept stream's)
        return msg
    data = encode_message(msg)
    return b"" if data is None else sse.encode(data)


def json_body(msg: Any) -> bytes:
    data = encode_message(msg)
    return b"" if data is None else data


class StreamOutlet:
    """One POST's response stream: messages queue here and the connection that owns the stream
    writes them as SSE.

    Without an event store, ``items`` holds messages and a dropped connection breaks the stream.
    With one (``keep``: the session's :meth:`HttpSession.keep`), each message is kept first and
    ``items`` holds it encoded with its event id; a dropped connection only detaches the stream
    (``owner`` None): what comes meanwhile is kept, not queued, and a resume attaches a new
    connection as ``owner``.

    The queue is bounded (``limit`` bytes, :data:`MAX_STREAM_BUFFER` by default): once more than
    :data:`MEASURE_AFTER` messages wait for the writer, they are encoded and counted; when they
    take more than ``limit`` the reader is too slow and is cut off (``cut`` is called: the
    writing connection ends as a closed stream)."""

    __slots__ = (
        "items",
        "wake",
        "done",
        "broken",
        "keep",
        "stream",
        "owner",
        "live",
        "limit",
        "size",
        "counted",
        "cut",
        "on_close",
    )

    def __init__(
        self,
        keep: Any = None,
        stream: Any = None,
        live: dict[str, StreamOutlet] | None = None,
        limit: Any = None,
    ) -> None:
        self.items: list[Any] = []
        self.wake: asyncio.Future[None] | None = None
        self.done = False
        self.broken = False
        self.keep = keep
        self.stream = stream
        self.owner: object | None = None  # the writing connection's token (with a store)
        self.live = live  # the session's kept streams not yet ended (this one leaves on close)
        self.limit = limit  # bytes queued for a writer, at most
        self.size = 0  # bytes of the items counted so far
        self.counted = 0  # how many of ``items`` are encoded and counted
        self.cut: Callable[[], None] | None = (
            None  # called when the queue goes over ``limit`` (set by the writer)
        )
        self.on_close: Callable[[StreamOutlet], None] | None = (
            None  # called with the outlet when it closes (a detached handler's)
        )

    def send(self, msg: Any) -> None:
        if self.broken or self.done:
            return
        keep = self.keep
        if keep is not None:
            data = encode_message(msg)
            if data is None:
                return
            eid = keep(self.stream, data)
            if self.owner is None:  # detached: kept for a resume, written by nobody now
                return
            msg = sse.encode(data, id=eid)
        items = self.items
        items.append(msg)
        if len(items) > MEASURE_AFTER and self.limit is not None:
            self.measure()
        self.wake_writer()

    def measure(self) -> None:
        items = self.items
        for i in range(self.counted, len(items)):
            data = items[i] = sse_event(items[i])
            self.size += len(data)
        self.counted = len(items)
        if self.size > self.limit and self.cut is not None:
            cut, self.cut = self.cut, None
            cut()

    def take(self) -> Any:
        """The queued items, for the writer (the queue starts again empty)."""
        items, self.items = self.items, []
        self.size = self.counted = 0
        return items

    def prime(self, retry_ms: Any) -> None:
        """The priming event (an id and empty data, with ``retry``) that starts a kept stream."""
        eid = self.keep(self.stream, b"")
        self.items.insert(0, sse.encode(b"", id=eid, retry=retry_ms))
        self.counted = 0
        self.size = 0

    def wake_writer(self) -> None:
        w = self.wake
        if w is not None and not w.done():
            w.set_result(None)

    def close(self) -> None:
        self.done = True
        if self.live is not None:
            self.live.pop(self.stream, None)
        if self.on_close is not None:
            on_close, self.on_close = self.on_close, None
            on_close(self)
        self.wake_writer()


def attached(outlet: StreamOutlet) -> None:
    """A connection writes ``outlet`` again (a resume): its handler is no longer detached."""
    if outlet.on_close is not None:
        on_close, outlet.on_close = outlet.on_close, None
        on_close(outlet)


class HttpSession(Session):
    def __init__(self, server: Any, sid: Any, store: Any = None) -> None:
        super().__init__(server, "http", LEGACY)
        self.sid = sid
        self.standalone = None  # the GET stream's closer (a future), in a slot of its own
        self.seen = 0.0  # the loop's clock when a request of the session last came
        self.store = store  # the app's event store, or None (streams not resumable)
        self.live: dict[str, StreamOutlet] = {}  # kept POST streams not yet ended, by stream name
        self._streams = 0
        self._keeper: Callable[[str, bytes], str] | None = None  # what outlets keep events with

    def keep(self, stream: str, data: bytes) -> str:
        return self.store.append(self.sid, stream, data)

    def outlet(self) -> StreamOutlet:
        """A new POST stream: kept (with an event id per event) when there is a store."""
        if self.store is None:
            return StreamOutlet()
        self._streams += 1
        keep = self._keeper
        if keep is None:
            # the store's append bound to this session (one call per event, not two), unless a
            # subclass keeps events its own way
            keep = self._keeper = (
                partial(self.store.append, self.sid)
                if type(self).keep is HttpSession.keep
                else self.keep
            )
        return StreamOutlet(keep, f"p{self._streams}", self.live)

    def standalone_name(self) -> str:
        self._streams += 1
        return f"g{self._streams}"


async def reply(
    send: Send,
    status: int,
    body: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = (),
    ctype: HeaderList = JSON_HEADERS,
) -> None:
    """A whole HTTP response: ``status``, ``body`` (typed ``ctype`` when not empty)."""
    length = (b"content-length", b"%d" % len(body))
    h = [*ctype, length, *headers] if body else [length, *headers]
    await send({"type": "http.response.start", "status": status, "headers": h})
    await send({"type": "http.response.body", "body": body})


async def error_response(
    send: Send,
    status: int,
    code: int,
    message: str,
    rid: Any = None,
    data: Any = None,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    """An HTTP response whose body is a JSON-RPC error."""
    await reply(send, status, dumps(error_reply(rid, error(code, message, data))), headers)


async def busy_response(send: Send, rid: Any, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """429: the request ``rid`` refused, its session having its bound of requests in flight."""
    await error_response(send, 429, SERVER_BUSY, TOO_MANY_IN_FLIGHT, rid, headers=headers)
