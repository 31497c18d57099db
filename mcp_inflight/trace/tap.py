"""Traces written in process: an ASGI wrapper that sees every exchange an app serves.

``Tap(app, sink)`` passes each HTTP exchange through to ``app`` unchanged and hands ``sink``
the events of :mod:`mcp_inflight.trace.format` as they happen: the exchange opened, each
JSON-RPC message of the request body, the status, each message of the response (SSE events
as they are sent, a JSON body whole), and the close (by the server when the response ends, by
the client when it goes away first).  It is what ``mcp-inflight serve --trace FILE`` and
``guard(app, trace=FILE)`` put around their app: the same events the recording proxy
(``mcp-inflight record``) writes, taken at the app's own door instead of a socket away.

A sink is any callable taking one event (a :class:`~mcp_inflight.trace.format.Writer`'s
``write``, the online check's ``feed``, or both through :func:`fan_out`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson

from ..impl import sse
from .format import C2S, MAX_RECORDED, S2C, Exchanges, Writer

Sink = Callable[[dict[str, Any]], None]


def fan_out(*sinks: Sink) -> Sink:
    """One sink that hands each event to every one of ``sinks``."""

    def sink(ev: dict[str, Any]) -> None:
        for s in sinks:
            s(ev)

    return sink


def _whole_events(chunk: bytes) -> list[bytes] | None:
    """The data of each event of ``chunk`` when it is whole events only, each with at most one
    ``data`` line (what ``impl/sse.py`` encodes: a priming event and the messages, with their
    ``id`` and ``retry`` lines), else None.  What the decoder would give for them (the events
    without data left out, each as bytes: see :meth:`Tap._messages`), without the decoder:
    only while every chunk before was such, so the decoder would hold nothing."""
    if not chunk.endswith(b"\n\n") or b"\r" in chunk:
        return None
    out = []
    for block in chunk[:-2].split(b"\n\n"):
        data = None
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                if data is not None:
                    return None  # several data lines: the decoder joins them
                data = line[6:] if line[5:6] == b" " else line[5:]
            elif not line or line == b"data":
                return None
        if data:  # no data, or empty data (a priming event): no message
            out.append(data)
    return out


class Tap:
    """The wrapper; see the module text."""

    def __init__(self, app: Any, sink: Sink, lean: Any = None) -> None:
        self.app = app
        self.sink = sink
        #: with no trace to write, only the online check's sink: the events it counts and
        #: skips (``open``, a status below 400) are not made, only counted in
        #: ``lean.skipped``
        self.lean = lean
        self.exchanges = Exchanges()
        self.trace_writer: Any = None
        self.monitor: Any = None
        #: called once the app's lifespan has shut down (the server is stopping)
        self.on_shutdown: Callable[[], None] | None = None

    def _messages(
        self, ex: int | str, d: str, session: str | None, raw: bytes | str, sse: bool = False
    ) -> None:
        """The events of the JSON-RPC messages of ``raw``; ``sse``: ``raw`` is an SSE event's
        data as bytes, read as the decoder reads it (UTF-8, an undecodable byte replaced)."""
        try:
            body = orjson.loads(raw)
        except ValueError:
            if not sse or type(raw) is not bytes:
                return
            try:  # orjson refused bytes that are not UTF-8: as the decoder would give them
                body = orjson.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                return
        now, sink = time.time(), self.sink
        for m in body if type(body) is list else (body,):
            if type(m) is dict:
                sink(
                    {
                        "t": now,
                        "session": session,
                        "exchange": ex,
                        "dir": d,
                        "kind": "message",
                        "message": m,
                    }
                )

    def __getattr__(self, name: str) -> Any:  # the wrapped app's own attributes
        if name == "app":
            raise AttributeError(name)
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan" and self.on_shutdown is not None:
            hook = self.on_shutdown

            async def lifespan_send(m: Any) -> None:
                if m.get("type") == "lifespan.shutdown.complete":
                    hook()
                await send(m)

            return await self.app(scope, receive, lifespan_send)
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        method = scope["method"]
        ex = self.exchanges.name(method)
        session: str | None = None
        for k, v in scope["headers"]:
            if k.lower() == b"mcp-session-id":
                session = v.decode("latin-1")
        sink, lean = self.sink, self.lean
        if lean is None:
            sink(
                {
                    "t": time.time(),
                    "session": session,
                    "exchange": ex,
                    "dir": C2S,
                    "kind": "open",
                    "method": method,
                }
            )
        else:
            lean.skipped += 1
        body: list[bytes] = []
        state = {"closed": False, "sse": False, "read": False}
        dec: sse.Decoder | None = None  # made at the first chunk the plain shape does not fit
        whole: list[bytes] | None = []  # a JSON body's chunks; None once past MAX_RECORDED
        kept = 0

        def close(by: str) -> None:
            if not state["closed"]:
                state["closed"] = True
                d = C2S if by == "client" else S2C
                sink(
                    {
                        "t": time.time(),
                        "session": session,
                        "exchange": ex,
                        "dir": d,
                        "kind": "close",
                        "by": by,
                    }
                )

        async def rx() -> Any:
            m = await receive()
            if m["type"] == "http.request" and not state["read"]:
                body.append(m.get("body", b""))
                if not m.get("more_body"):
                    state["read"] = True
                    if any(body):
                        self._messages(ex, C2S, session, b"".join(body))
            elif m["type"] == "http.disconnect":
                close("client")
            return m

        async def tx(m: Any) -> None:
            nonlocal session, dec, whole, kept
            if state["closed"]:
                return await send(m)
            if m["type"] == "http.response.start":
                for k, v in m.get("headers", ()):
                    k = k.lower()
                    if k == b"mcp-session-id":
                        session = v.decode("latin-1")
                    elif k == b"content-type":
                        state["sse"] = v.startswith(b"text/event-stream")
                if lean is None or m["status"] >= 400:
                    sink(
                        {
                            "t": time.time(),
                            "session": session,
                            "exchange": ex,
                            "dir": S2C,
                            "kind": "status",
                            "status": m["status"],
                        }
                    )
                else:
                    lean.skipped += 1
            elif m["type"] == "http.response.body":
                chunk = m.get("body", b"")
                if state["sse"]:
                    datas = _whole_events(chunk) if dec is None else None
                    if datas is not None:
                        for data in datas:
                            self._messages(ex, S2C, session, data, sse=True)
                    else:
                        dec = dec or sse.Decoder()
                        for e in dec.feed(chunk):
                            self._messages(ex, S2C, session, e.data)
                elif chunk and whole is not None:
                    whole.append(chunk)
                    kept += len(chunk)
                    if kept > MAX_RECORDED:
                        whole = None  # passed on whole, too large to trace as messages
            try:
                await send(m)
            except OSError:
                close("client")
                raise
            if m["type"] == "http.response.body" and not m.get("more_body"):
                if whole:
                    self._messages(ex, S2C, session, b"".join(whole))
                close("server")

        try:
            await self.app(scope, rx, tx)
        finally:
            close("server")  # the app ended without finishing its response


def online_check(online: Any) -> Any:
    """The sink of the online check that ``online`` asks for (None for False): True is a
    checker process beside this one, a mode name (``"process"``, ``"thread"``, ``"inline"``)
    that mode, a :class:`~mcp_inflight.trace.online.Monitor` that one, run by a thread beside
    the server (see :mod:`mcp_inflight.trace.checker`)."""
    if not online:
        return None
    from .checker import Beside
    from .online import Monitor

    if isinstance(online, Beside):
        return online
    if isinstance(online, Monitor):
        return Beside("thread", monitor=online)
    return Beside("process" if online is True else online)


def traced(app: Any, trace: Any = None, online: Any = False) -> Any:
    """``app`` wrapped in a :class:`Tap` that writes the trace to ``trace`` (a path, or an object
    with a ``write(event)`` method such as a :class:`~mcp_inflight.trace.format.Writer`) and,
    with ``online`` (see :func:`online_check`), checks it beside the server as it goes;
    ``app`` itself when neither is asked for.  The tap is at ``.trace_writer`` and ``.monitor``
    of the result (the :class:`~mcp_inflight.trace.checker.Beside`: ``drain()`` waits for the
    check to catch up and gives its counts)."""
    if trace is None and not online:
        return app
    sinks: list[Sink] = []
    writer = None
    if trace is not None:
        writer = trace if hasattr(trace, "write") else Writer(trace)
        sinks.append(writer.write)
    monitor = online_check(online)
    if monitor is not None:
        sinks.append(monitor.feed)
    lean = monitor if writer is None and hasattr(monitor, "skipped") else None
    tap = Tap(app, sinks[0] if len(sinks) == 1 else fan_out(*sinks), lean=lean)
    tap.trace_writer = writer
    tap.monitor = monitor
    return tap


class StdioTap:
    """The stdio counterpart of :class:`Tap`: the events of the one channel of a server on
    stdin/stdout, on exchange ``"stdio"`` (session ``"stdio"``).  :meth:`reader` wraps the
    server's input stream (each line the server reads is a client's message, seen as read, so
    before anything the server writes in answer) and :meth:`write` is put in front of its
    output (each line written a server's message).  The end of the input is the client's
    close (what the server writes after it is still recorded); :meth:`close` the server's,
    when it stops first."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._bufs = {C2S: bytearray(), S2C: bytearray()}
        self.closed = False
        self._event("open", C2S, method="stdio")

    def _event(self, kind: str, d: str, **extra: Any) -> None:
        ev = {"t": time.time(), "session": "stdio", "exchange": "stdio", "dir": d, "kind": kind}
        ev.update(extra)
        self.sink(ev)

    def message(self, d: str, message: dict[str, Any]) -> None:
        """One JSON-RPC message on the channel, already decoded (for a server whose transport
        decodes its lines itself, such as the official SDK's)."""
        self._event("message", d, message=message)

    def _feed(self, d: str, data: bytes) -> None:
        buf = self._bufs[d]
        buf += data
        end = buf.rfind(b"\n")
        if end < 0:
            return
        for line in bytes(buf[:end]).split(b"\n"):
            if not line.strip():
                continue
            try:
                m = orjson.loads(line)
            except ValueError:
                continue
            for msg in m if type(m) is list else (m,):
                if type(msg) is dict:
                    self._event("message", d, message=msg)
        del buf[: end + 1]

    def reader(self, inner: Any) -> Any:
        """``inner`` (an ``asyncio.StreamReader``) seen through the tap: ``read`` only."""
        tap = self

        class Reader:
            async def read(self, n: int = -1) -> bytes:
                chunk: bytes = await inner.read(n)
                if chunk:
                    tap._feed(C2S, chunk)
                else:
                    tap._feed(C2S, b"\n")  # a last line without its newline
                    tap.close("client")
                return chunk

        return Reader()

    def write(self, data: bytes) -> None:
        self._feed(S2C, data)  # after the client's close too: answers still in flight

    def close(self, by: str = "server") -> None:
        if not self.closed:
            self.closed = True
            self._event("close", C2S if by == "client" else S2C, by=by)
