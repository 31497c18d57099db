"""An MCP server on FastMCP (the ``fastmcp`` package, when installed), for the probe's table.

The tools the probe's defaults expect (``slow``, ``ask``) and its fixture contract
(``probe_outcome``; :mod:`mcp_inflight.fixtures.contract`).  Nothing here works around FastMCP;
with ``--guard`` its ASGI app is wrapped by :func:`mcp_inflight.guard.guard`.

    python tests/support/fastmcp_server.py [--port 0] [--guard] [--stdio]

On HTTP it prints ``listening on URL`` once it accepts connections.
"""

from __future__ import annotations

import asyncio
import sys

from fastmcp import Context, FastMCP
from pydantic import BaseModel

from mcp_inflight.fixtures.contract import CallLedger


class Answer(BaseModel):
    ok: bool = True


def build() -> FastMCP:
    server = FastMCP("fastmcp-probe-target")
    ledger = CallLedger()

    @server.tool
    async def slow(label: str, ctx: Context, steps: int = 5, delay: float = 0.2) -> str:
        """Report progress on each step; stop when cancelled; answer done:<label>."""

        async def report(k, n):
            await ctx.report_progress(k, n, f"{label} step {k}/{n}")

        return await ledger.run_slow(label, steps, delay, report)

    @server.tool
    async def ask(label: str, ctx: Context, delay: float = 0.5) -> str:
        """Wait, then elicit; answer with the action the client chose."""
        await asyncio.sleep(delay)
        result = await ctx.elicit(f"{label}: go on?", Answer)
        return f"ask:{label}:{result.action}"

    @server.tool
    async def probe_outcome(label: str) -> str:
        """What became of the slow call with this label (JSON)."""
        return ledger.outcome_text(label)

    return server


def main(argv=None) -> int:
    import loopback  # run as a script: this folder is on the path

    server = build()
    return loopback.main(
        __doc__.splitlines()[0],
        lambda: server.http_app(path="/mcp"),
        lambda: asyncio.run(server.run_stdio_async(show_banner=False)),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
