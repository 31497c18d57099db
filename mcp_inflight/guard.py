"""The guard for servers built on the official Python SDK, as documented in the README::

    from mcp_inflight.guard import guard
    app = guard(server.streamable_http_app())

It lives beside the other adapters of the runtime, in :mod:`mcp_inflight.impl.guard`; this
module re-exports its public names, and adds to :func:`guard` the two options that need the
applications' trace package: ``trace=FILE`` writes every exchange the guarded app serves as a
wire trace (``mcp-inflight replay FILE`` checks it), ``online=True`` checks them against the
model as they happen (counting and logging violations; the counts are at ``app.monitor``).
:func:`guard_stdio` and :func:`serve_stdio` take the same two options on stdio: the trace is
the one channel's, as ``mcp-inflight record --stdio`` writes it from outside the process.
"""

import sys
import types
from typing import Any

from mcp_inflight.impl.guard import (
    DESIGN,
    MAX_BODY,
    REVISION,
    SDK_STANDALONE_SLOT,
    SESSION_HEADER,
    Guard,
    new_core,
)
from mcp_inflight.impl.guard_stdio import guard_stdio as _guard_stdio

__all__ = [
    "DESIGN",
    "REVISION",
    "SDK_STANDALONE_SLOT",
    "SESSION_HEADER",
    "Guard",
    "guard",
    "guard_stdio",
    "new_core",
    "serve_stdio",
]


def guard(
    app: Any,
    max_body: int = MAX_BODY,
    trace: Any = None,
    online: Any = False,
    observer: Any = None,
) -> Any:
    """Wrap an official-SDK Streamable HTTP ASGI app (``server.streamable_http_app()``);
    ``max_body`` should match the SDK's ``max_request_body_size`` when that was changed.
    ``trace``: a path (or a :class:`mcp_inflight.trace.format.Writer`) to write the wire trace
    to; ``online``: True (or a :class:`mcp_inflight.trace.online.Monitor`) to check it online;
    ``observer``: the lifecycle observer (:class:`mcp_inflight.otel.LifecycleTelemetry`: each
    transition as an OpenTelemetry span event, and its metrics).  Without ``trace`` and
    ``online``, the :class:`Guard` itself."""
    from mcp_inflight.impl.guard import guard as _guard

    g = _guard(app, max_body, observer)
    if trace is None and not online:
        return g
    from mcp_inflight.trace.tap import traced

    return traced(g, trace=trace, online=online)


def guard_stdio(
    read_stream: Any,
    write_stream: Any,
    trace: Any = None,
    online: Any = False,
    observer: Any = None,
) -> Any:
    """:func:`mcp_inflight.impl.guard.guard_stdio` (the SDK's ``stdio_server()`` streams,
    guarded), with ``trace``, ``online`` and ``observer`` as for :func:`guard`.  The events are taken where
    the guard meets the SDK's stdio transport, outside the guard: each message the transport
    read from stdin (as it parsed it) before the guard decides on it, each message handed to
    the transport to write to stdout (the guard's refusals too), the end of the input as the
    client's close; so the trace is the channel's, as ``mcp-inflight record --stdio`` writes it
    from outside the process.  The two streams returned carry ``trace_writer`` and ``monitor``
    (None when not asked for); :func:`serve_stdio` closes them at the end."""
    if trace is None and not online:
        return _guard_stdio(read_stream, write_stream, observer)
    from mcp_inflight.trace.format import Writer
    from mcp_inflight.trace.tap import StdioTap, fan_out, online_check

    writer = None if trace is None else trace if hasattr(trace, "write") else Writer(trace)
    monitor = online_check(online)
    sinks: list[Any] = [
        s for s in (writer and writer.write, monitor and monitor.feed) if s is not None
    ]
    tap = StdioTap(sinks[0] if len(sinks) == 1 else fan_out(*sinks))
    read, write = _guard_stdio(_TapRead(read_stream, tap), _TapWrite(write_stream, tap), observer)
    for stream in (read, write):
        stream.trace_writer, stream.monitor, stream.tap = writer, monitor, tap
    return read, write


def _dump(item: Any) -> Any:
    """The JSON-RPC message of a ``SessionMessage`` as the SDK's stdio transport writes it."""
    msg = getattr(item, "message", None)
    if msg is None:
        return None
    return msg.model_dump(mode="json", by_alias=True, exclude_unset=True)


class _TapRead:
    """The transport's read stream, seen through a :class:`~mcp_inflight.trace.tap.StdioTap`."""

    def __init__(self, inner: Any, tap: Any) -> None:
        self.inner, self.tap = inner, tap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self.inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self.tap.close("client")
            raise
        m = _dump(item)
        if m is not None:
            self.tap.message("client->server", m)
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TapWrite:
    """The transport's write stream, seen through a :class:`~mcp_inflight.trace.tap.StdioTap`."""

    def __init__(self, inner: Any, tap: Any) -> None:
        self.inner, self.tap = inner, tap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def send(self, item: Any) -> None:
        m = _dump(item)
        if m is not None:
            self.tap.message("server->client", m)
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def serve_stdio(
    server: Any, trace: Any = None, online: Any = False, observer: Any = None
) -> Any:
    """Serve an official-SDK server on stdin/stdout behind :func:`guard_stdio`
    (:func:`mcp_inflight.impl.guard.serve_stdio`), with ``trace``, ``online`` and ``observer`` as there;
    with ``online``, the online check's final counts."""
    if trace is None and not online:
        from mcp_inflight.impl.guard_stdio import serve_stdio as _serve_stdio

        return await _serve_stdio(server, observer)
    from mcp.server.stdio import stdio_server

    low = getattr(server, "_lowlevel_server", server)
    if not hasattr(low, "create_initialization_options"):
        raise TypeError(f"not an official-SDK server: {type(server).__name__}")
    counts = None
    async with stdio_server() as (read, write):
        read, write = guard_stdio(read, write, trace=trace, online=online, observer=observer)
        try:
            await low.run(read, write, low.create_initialization_options())
        finally:
            read.tap.close()  # the server stopped (after the client's close, a no-op)
            if read.trace_writer is not None and read.trace_writer is not trace:
                read.trace_writer.close()
            if read.monitor is not None:
                counts = read.monitor.close()
    return counts


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`guard`: ``from mcp_inflight import guard`` names the module
    (the import system binds a submodule on its package), and ``guard(app)`` must still guard."""

    def __call__(
        self,
        app: Any,
        max_body: int = MAX_BODY,
        trace: Any = None,
        online: Any = False,
        observer: Any = None,
    ) -> Any:
        return guard(app, max_body, trace, online, observer)


sys.modules[__name__].__class__ = _CallableModule
