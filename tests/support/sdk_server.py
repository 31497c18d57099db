"""An MCP server built on the official Python SDK (``mcp`` 2.x), for the probe's tests.

It has the tools the probe's defaults expect (the same names and arguments as
``mcp-inflight serve``): ``slow {label, steps, delay}`` reports progress on every step,
``ask {label, delay}`` elicits after the delay, ``echo {text}``.  Nothing here works around the
SDK; with ``--guard`` the SDK's ASGI app is wrapped by :func:`mcp_inflight.guard.guard`, the
two lines a server author would add.

Run it: ``python tests/support/sdk_server.py [--port 0] [--guard]``; it prints ``listening on URL``
once it accepts connections.  ``--stdio`` serves stdin/stdout instead (with ``--guard``: the
streams wrapped by :func:`mcp_inflight.guard.guard_stdio`).
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
import warnings
from collections import deque

import anyio
from mcp.server.streamable_http import EventMessage, EventStore
from pydantic import BaseModel

try:  # the SDK's high-level server: mcp.server.mcpserver on 2.x
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # mcp.server.fastmcp on 1.x (framework_servers.py's stdio backend)
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer


class Answer(BaseModel):
    ok: bool = True


def build_server() -> MCPServer:
    return add_tools(MCPServer("sdk-probe-target"))


def add_tools(server: MCPServer, log_steps: bool = True) -> MCPServer:
    """The probe's tools on ``server``; ``slow`` also logs each step unless not ``log_steps``."""

    @server.tool()
    async def slow(label: str, steps: int = 5, delay: float = 0.2, ctx: Context = None) -> str:
        """Report progress on each of ``steps`` steps, ``delay`` seconds apart, then answer."""
        for n in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(n, steps, f"{label} step {n}/{steps}")
            if log_steps:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await ctx.info(f"{label} step {n}")
        return f"done:{label}"

    @server.tool()
    async def ask(label: str, delay: float = 0.5, ctx: Context = None) -> str:
        """Wait ``delay`` seconds, elicit, and answer with the action the client chose."""
        await anyio.sleep(delay)
        result = await ctx.elicit(f"{label}: go on?", Answer)
        return f"ask:{label}:{result.action}"

    @server.tool()
    async def ask_twice(label: str, ctx: Context = None) -> str:
        """Elicit twice in one call; answer with both actions."""
        first = await ctx.elicit(f"{label}: first question?", Answer)
        second = await ctx.elicit(f"{label}: second question?", Answer)
        return f"ask_twice:{label}:{first.action}:{second.action}"

    @server.tool()
    def echo(text: str) -> str:
        """Answer with the text."""
        return text

    return server


class StreamIdEventStore(EventStore):
    """An event store on the SDK's ``EventStore`` interface, written the way the SDK's example
    store (``examples/servers/simple-streamablehttp``, ``InMemoryEventStore``) works; the
    installed ``mcp`` package ships no store.  Each event gets a fresh uuid4 as its id; events
    are kept per ``stream_id`` as the transport names it (a POST's request id as a string; the
    standalone stream's ``"_GET_stream"``), the last 100 per stream; a replay finds the event
    by id, then sends the events after it on that stream_id.  One store serves every session,
    as ``streamable_http_app(event_store=...)`` makes it."""

    def __init__(self, per_stream: int = 100):
        self.per_stream = per_stream
        self.streams: dict[str, deque] = {}
        self.where: dict[str, tuple[str, object]] = {}

    async def store_event(self, stream_id, message):
        eid = str(uuid.uuid4())
        kept = self.streams.setdefault(stream_id, deque(maxlen=self.per_stream))
        if len(kept) == kept.maxlen:
            self.where.pop(kept[0][0], None)
        kept.append((eid, message))
        self.where[eid] = (stream_id, message)
        return eid

    async def replay_events_after(self, last_event_id, send_callback):
        found = self.where.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for eid, message in list(self.streams.get(stream_id, ())):
            if after and message is not None:
                await send_callback(EventMessage(message, eid))
            after = after or eid == last_event_id
        return stream_id


def build_app(
    guarded: bool = False,
    json_response: bool = False,
    idle_timeout: float | None = None,
    event_store: bool = False,
    sdk_max_body: int | None = None,
    trace: str | None = None,
):
    """The SDK's Streamable HTTP ASGI app, wrapped by the guard if ``guarded`` (writing its
    wire trace to ``trace``); with ``event_store``, resumable (:class:`StreamIdEventStore`,
    ``retry_interval`` 100 ms)."""
    extra: dict = {} if idle_timeout is None else {"session_idle_timeout": idle_timeout}
    if event_store:
        extra.update(event_store=StreamIdEventStore(), retry_interval=100)
    if sdk_max_body is not None:
        extra.update(max_request_body_size=sdk_max_body)
    app = build_server().streamable_http_app(json_response=json_response, **extra)
    if guarded:
        from mcp_inflight.guard import guard

        app = guard(app, trace=trace)
    return app


async def serve_stdio(guarded: bool, trace: str | None = None, online: bool = False) -> None:
    server = build_server()
    if guarded:  # the public way: the guarded equivalent of run("stdio")
        from mcp_inflight.guard import serve_stdio as guarded_stdio

        counts = await guarded_stdio(server, trace=trace, online=online)
        if counts is not None:
            print(f"online check: {json.dumps(counts)}", file=sys.stderr, flush=True)
    else:
        await server.run_stdio_async()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    p.add_argument("--guard", action="store_true", help="wrap the SDK's app in mcp_inflight.guard")
    p.add_argument("--stdio", action="store_true", help="serve stdin/stdout instead of HTTP")
    p.add_argument("--trace", help="with --guard: the guard's wire trace, to this file")
    p.add_argument(
        "--online-check", action="store_true", help="with --stdio --guard: the online check"
    )
    p.add_argument("--json-response", action="store_true", help="answer POSTs with JSON, not SSE")
    p.add_argument(
        "--idle-timeout", type=float, default=None, help="the SDK's session_idle_timeout"
    )
    p.add_argument(
        "--event-store", action="store_true", help="resumable streams (an in-memory event store)"
    )
    p.add_argument("--sdk-max-body", type=int, default=None, help="the SDK's max_request_body_size")
    args = p.parse_args(argv)
    if args.stdio:
        anyio.run(serve_stdio, args.guard, args.trace, args.online_check)
        return 0

    import logging

    from loopback import bind, serve  # run as a script: this folder is on the path

    logging.getLogger("mcp").setLevel(logging.WARNING)
    sock, port = bind(args.host, args.port)
    app = build_app(
        args.guard,
        args.json_response,
        args.idle_timeout,
        args.event_store,
        args.sdk_max_body,
        args.trace,
    )
    return serve(app, sock, f"http://{args.host}:{port}/mcp")


if __name__ == "__main__":
    sys.exit(main())
