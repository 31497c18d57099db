"""A real uvicorn server on a loopback port running the Streamable HTTP app, for the tests."""

import asyncio

from mcp_inflight.impl import sse
from mcp_inflight.impl.http import create_app
from mcp_inflight.serve import demo_server
from support import oracle
from support.raw_asgi import Served


def build_server():
    """The demo tools plus ``hold`` (waits until released or cancelled, recording which),
    ``stubborn`` (goes on after a cancellation until released) and ``release``."""
    server = demo_server()
    server.events = []
    server.release = {}

    @server.tool()
    async def hold(ctx, label: str, timeout: float = 5.0) -> str:
        ev = server.release.setdefault(label, asyncio.Event())
        try:
            await ctx.progress(0, None, f"{label}: holding")
            await asyncio.wait_for(ev.wait(), timeout)
        except asyncio.CancelledError:
            server.events.append(("cancelled", label))
            raise
        server.events.append(("done", label))
        return f"held:{label}"

    @server.tool()
    async def stubborn(ctx, label: str, timeout: float = 5.0) -> str:
        """Like hold, but goes on after one cancellation (a handler that does not stop at
        once) until released."""
        ev = server.release.setdefault(label, asyncio.Event())
        await ctx.progress(0, None, f"{label}: holding")
        try:
            await asyncio.wait_for(ev.wait(), timeout)
        except asyncio.CancelledError:
            server.events.append(("ignored-cancel", label))
            await asyncio.wait_for(ev.wait(), timeout)
        server.events.append(("done", label))
        return f"held:{label}"

    @server.tool()
    async def release(ctx, label: str) -> str:
        server.release.setdefault(label, asyncio.Event()).set()
        return f"released:{label}"

    return server


class Running(Served):
    """``app`` served by uvicorn on a loopback port, behind the trace tap: its wire trace is
    checked by the model after each test (``support/oracle.py``)."""

    def __init__(self, app):
        self.app = app
        self.tapped = oracle.tapped(app, "in-process HTTP server")
        self.oracle = self.tapped.oracle
        super().__init__(self.tapped)

    def stop(self):
        super().stop()
        # a server left running (an app that never yields) would go on in this test process
        assert not self.thread.is_alive(), "uvicorn did not stop within 10 s"
        self.oracle.retire()


def start(server=None, **options):
    server = server or build_server()
    app = create_app(server, "/mcp", **options)
    return Running(app)


def serving(server=None, **options):
    """:func:`start` for a fixture (``yield from serving(...)``): the server, stopped after."""
    s = start(server, **options)
    try:
        yield s
    finally:
        s.stop()


def sse_messages(body: str | bytes) -> list:
    """The JSON messages of a whole SSE body (the project's one SSE decoder)."""
    return sse.messages(body)


async def sse_stream(resp):
    """The JSON messages of a streamed httpx response, as each event completes."""
    decoder = sse.Decoder()
    async for chunk in resp.aiter_bytes():
        for event in decoder.feed(chunk):
            if event.data:
                yield event.json()
