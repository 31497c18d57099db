"""An MCP server on the official Python SDK (``mcp`` 2.x) with the probe's fixture contract
(:mod:`mcp_inflight.fixtures.contract`, its last section): ``slow`` records what became of each
call, ``probe_outcome {label}`` tells it.  Nothing here works around the SDK.

Run it: ``python tests/support/sdk_contract_server.py [--port 0] [--guard] [--stdio]``; on HTTP
it prints ``listening on URL`` once it accepts connections.  The SDK's app serves 2025-11-25
sessions and 2026-07-28 POSTs on one endpoint.
"""

from __future__ import annotations

import argparse
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

from mcp_inflight.fixtures.contract import CallLedger


def build_server() -> MCPServer:
    server = MCPServer("sdk-contract-target")
    ledger = CallLedger()

    @server.tool()
    async def slow(label: str, steps: int = 5, delay: float = 0.2, ctx: Context = None) -> str:
        """Report progress on each step; stop when cancelled; answer done:<label>."""

        async def report(k, n):
            await ctx.report_progress(k, n, f"{label} step {k}/{n}")

        return await ledger.run_slow(label, steps, delay, report)

    @server.tool()
    async def probe_outcome(label: str) -> str:
        """What became of the slow call with this label (JSON)."""
        return ledger.outcome_text(label)

    return server


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--guard", action="store_true", help="wrap the app in mcp_inflight.guard")
    p.add_argument("--stdio", action="store_true")
    args = p.parse_args(argv)
    server = build_server()
    if args.stdio:
        anyio.run(server.run_stdio_async)
        return 0
    import socket

    import uvicorn

    app = server.streamable_http_app()
    if args.guard:
        from mcp_inflight.guard import guard

        app = guard(app)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)

    async def serve():
        import asyncio

        task = asyncio.create_task(userver.serve(sockets=[sock]))
        while not userver.started:
            if task.done():
                return await task
            await asyncio.sleep(0.02)
        print(f"listening on http://{args.host}:{port}/mcp", flush=True)
        await task

    import asyncio

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
