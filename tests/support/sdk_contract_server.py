"""An MCP server on the official Python SDK (``mcp`` 2.x) with the probe's fixture contract
(:mod:`mcp_inflight.fixtures.contract`, its last section): ``slow`` records what became of each
call, ``probe_outcome {label}`` tells it.  Nothing here works around the SDK.

Run it: ``python tests/support/sdk_contract_server.py [--port 0] [--guard] [--stdio]``; on HTTP
it prints ``listening on URL`` once it accepts connections.  The SDK's app serves 2025-11-25
sessions and 2026-07-28 POSTs on one endpoint.
"""

from __future__ import annotations

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
    import loopback  # run as a script: this folder is on the path

    server = build_server()
    return loopback.main(
        __doc__.splitlines()[0],
        server.streamable_http_app,
        lambda: anyio.run(server.run_stdio_async),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
