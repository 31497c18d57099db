"""How the Streamable HTTP app writes a request's stream to the connection that owns it.

:class:`StreamWriting` is the half of :class:`.http.App` that writes: an admitted request's POST
stream (one body when the handler answers in its first step, else SSE as the handler writes), a
session's standalone GET stream, and what happens when the connection writing either goes away
or reads too slowly (the stream is broken, or detached and kept for a resume; a detached handler
is bounded in number and in time).  The app's request path (:mod:`.http`: routing, checks,
sessions, status codes) decides *whether* a stream is written; this module is *how*, from the
first headers to the last byte.  The session stores write through it too (a ``Last-Event-ID``
resume takes a kept stream over with :meth:`StreamWriting.pump`).

Also here: the 2026-07-28 HTTP status of a request whose whole reply is a JSON-RPC error
(:data:`MODERN_ERROR_STATUS`), which both the request path and the stream's first body read.
"""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import Generator
from typing import Any

from . import sse
from .asgi_types import Receive, Send
from .messages import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .streams import (
    SSE_HEADERS,
    StreamOutlet,
    error_response,
    json_body,
    reply,
    sse_event,
)

#: the app's logger (a stream cut off for a slow reader is reported there)
log = logging.getLogger("mcp_inflight.http")

__all__ = ["MODERN_ERROR_STATUS", "StreamWriting", "error_status"]


#: 2026-07-28: the HTTP status of a request answered by a JSON-RPC error alone (other codes: 200).
#: The transport spec (basic/transports/streamable-http): -32601 is 404; -32020, -32022 and
#: -32021 are 400.  The conformance suite (SEP-2575 checks): a request whose ``_meta`` the
#: schema rejects (-32602) is 400.  The official ``mcp`` 2.3.0 server uses the same table.
MODERN_ERROR_STATUS: dict[Any, int] = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def error_status(msg: dict[str, Any]) -> int | None:
    """The 2026-07-28 HTTP status of ``msg`` if it is a JSON-RPC error with a mapped code."""
    err = msg.get("error") if "result" not in msg else None
    if isinstance(err, dict):
        return MODERN_ERROR_STATUS.get(err.get("code"))
    return None


@types.coroutine
def _one_step() -> Generator[None, None, None]:
    """One turn of the event loop (``asyncio.sleep(0)`` without its call and delay test)."""
    yield


class StreamWriting:
    """The stream writing of :class:`.http.App` (a base class of the app, not used alone).

    It reads the app's options and counters declared below, which the app's constructor sets.
    """

    retry_ms: int
    max_stream_buffer: int | None
    slow_readers_cut: int
    max_detached: int | None
    detached_timeout: float | None
    detached: dict
    detached_cancelled: int

    _reply = staticmethod(reply)
    _error = staticmethod(error_response)

    async def start_stream(
        self,
        session: Any,
        handle: Any,
        outlet: StreamOutlet,
        receive: Receive,
        send: Send,
        extra: Any = (),
    ) -> Any:
        """An admitted request's POST stream, owned by this connection: one body when the
        handler answers in its first step, else SSE as the handler writes."""
        modern = session.revision == MODERN
        token = outlet.owner = object()  # this connection, as the stream's owner
        if outlet.keep is not None:  # kept: a priming event, and resumable until its end
            outlet.prime(self.retry_ms)
            session.live[outlet.stream] = outlet
        try:
            await _one_step()  # let the handler take its first step
            if outlet.done:  # it has already answered: one body, no stream to watch
                items = outlet.items
                if outlet.keep is not None and not modern:  # kept: the items are events already
                    body = b"".join(items)
                else:
                    status = error_status(items[0]) if modern and len(items) == 1 else None
                    if status:
                        return await self._reply(send, status, json_body(items[0]), extra)
                    body = b"".join([sse_event(m) for m in items])
                return await self._reply(send, 200, body, extra, ctype=SSE_HEADERS)
        except (OSError, asyncio.CancelledError):  # the client went away, or the server stops
            self._dropped(session, handle, outlet, token)
            raise
        # the headers go now: a client waits for them with a read timeout, and a handler may
        # be silent for long before its first message
        await self.pump(session, handle, outlet, token, receive, send, SSE_HEADERS + list(extra))

    async def pump(
        self,
        session: Any,
        handle: Any,
        outlet: StreamOutlet,
        token: object,
        receive: Receive,
        send: Send,
        headers: list[tuple[bytes, bytes]],
        first: bytes = b"",
    ) -> Any:
        """Own ``outlet`` on this connection: send the headers (and ``first``, a replay), then
        each message as it comes, until the stream ends, the connection drops, or (a kept
        stream) another connection resumes the stream."""
        loop = asyncio.get_running_loop()
        watcher = loop.create_task(self._watch(session, handle, outlet, token, receive))
        writer = asyncio.current_task()
        assert writer is not None
        cut = False

        def cut_off() -> None:  # the reader is too slow: this connection ends as a closed stream
            nonlocal cut
            if outlet.owner is token or outlet.keep is None:
                cut = True
                self.slow_readers_cut += 1
                writer.cancel()

        outlet.limit = self.max_stream_buffer
        outlet.cut = cut_off
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            if first:
                await send({"type": "http.response.body", "body": first, "more_body": True})
            while True:
                if not outlet.items and not outlet.done and outlet.owner is token:
                    wake = outlet.wake = loop.create_future()
                    await wake
                    if outlet.wake is wake:
                        outlet.wake = None
                if outlet.broken:
                    return
                if outlet.owner is not token:  # detached, or resumed on another connection
                    try:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    except OSError:
                        pass
                    return
                items = outlet.take()
                last = outlet.done and not outlet.items
                chunk = b"".join(sse_event(m) for m in items)
                await send({"type": "http.response.body", "body": chunk, "more_body": not last})
                if last:
                    return
        except (OSError, asyncio.CancelledError):  # the client went away, or the server stops
            self._dropped(session, handle, outlet, token)
            if cut and writer.uncancel() == 0:
                # cut off: the response is left unfinished, so the server closes the connection
                log.warning(
                    "a stream's reader was too slow (over %d bytes queued): cut off",
                    self.max_stream_buffer,
                )
                return
            raise
        finally:
            if outlet.cut is cut_off:
                outlet.cut = None
            watcher.cancel()

    def _dropped(self, session: Any, handle: Any, outlet: StreamOutlet, token: object) -> None:
        """The connection ``token`` that wrote ``outlet`` went away before the stream's end.
        Without a store the stream is broken (the core's ``close``: its later messages are
        dropped).  With one, and on 2025-11-25, a disconnect is not a cancel and the stream is
        not lost: it is detached, its handler goes on, and what it sends is kept for a resume.
        A handler left running without its connection is *detached*: bounded in number and in
        time (:meth:`_detach`)."""
        if outlet.done:
            return
        if outlet.keep is not None:
            if outlet.owner is token:
                outlet.owner = None
                outlet.take()  # all of it is kept: a resume replays it from the store
                outlet.wake_writer()
                self._detach(session, outlet)
            return
        if not outlet.broken:
            outlet.broken = True
            outlet.wake_writer()
            session.closed(handle)
            self._detach(session, outlet)

    def _detach(self, session: Any, outlet: StreamOutlet) -> None:
        """``outlet``'s handler runs on with no connection.  Once ``max_detached`` handlers are
        detached in this process, the next one is cancelled at once; a detached handler still
        running ``detached_timeout`` seconds later is cancelled then.  Either way the request
        ends as a cancelled handler does (the core's ``finish``), and its id is free again."""
        handle = next((h for h in session.tasks if h.data is outlet), None)
        if handle is None or outlet.on_close is not None:
            return  # no handler runs (or it is already counted)
        _, ctx = session.tasks[handle]
        if ctx.was_cancelled:
            return  # cancelled by the closed stream (2026-07-28): it ends on its own
        detached = self.detached
        if self.max_detached is not None and len(detached) >= self.max_detached:
            self.detached_cancelled += 1
            session._cancel_handler(handle)
            return
        timer = None
        if self.detached_timeout is not None:
            timer = asyncio.get_running_loop().call_later(
                self.detached_timeout, self._expire_detached, session, handle, outlet
            )
        detached[outlet] = timer

        def released(o: Any) -> None:
            t = detached.pop(o, None)
            if t is not None:
                t.cancel()

        outlet.on_close = released

    def _expire_detached(self, session: Any, handle: Any, outlet: StreamOutlet) -> None:
        self.detached.pop(outlet, None)
        outlet.on_close = None
        if handle in session.tasks:
            self.detached_cancelled += 1
            session._cancel_handler(handle)

    async def _watch(
        self, session: Any, handle: Any, outlet: StreamOutlet, token: object, receive: Receive
    ) -> None:
        while True:
            m = await receive()
            if m["type"] == "http.disconnect":
                self._dropped(session, handle, outlet, token)
                return

    async def standalone_stream(
        self, session: Any, receive: Receive, send: Send, first: bytes = b"", name: Any = None
    ) -> Any:
        if session.standalone is not None:
            return await self._error(
                send, 409, -32600, "Conflict: this session already has a standalone stream"
            )
        loop = asyncio.get_running_loop()
        closer = session.standalone = loop.create_future()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            if not closer.done():
                closer.set_result(None)

        watcher = loop.create_task(watch())
        try:
            await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
            if session.store is not None and name is None:  # a new stream: its priming event
                eid = session.keep(session.standalone_name(), b"")
                first = sse.encode(b"", id=eid, retry=self.retry_ms)
            await send(
                {
                    "type": "http.response.body",
                    "body": first or b": stream open\n\n",
                    "more_body": True,
                }
            )
            await closer
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                pass
        finally:
            watcher.cancel()
            if session.standalone is closer:
                session.standalone = None
            session.seen = loop.time()
