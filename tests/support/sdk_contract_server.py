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
    app = server.streamable_http_app()
    if args.guard:
        from mcp_inflight.guard import guard

        app = guard(app)
    from loopback import bind, serve  # run as a script: this folder is on the path

    sock, port = bind(args.host, args.port)
    return serve(app, sock, f"http://{args.host}:{port}/mcp")


if __name__ == "__main__":
    sys.exit(main())
