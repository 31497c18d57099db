"""The 2025-11-25 session handshake as raw JSON-RPC messages, for tests that speak the wire
protocol themselves (raw HTTP, stdio pipes, ASGI exchanges) rather than through the ``mcp``
client."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

PROTOCOL = "2025-11-25"
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def init_params(
    name: str = "t", version: str = "1", capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``params`` of an ``initialize`` request at protocol 2025-11-25."""
    return {
        "protocolVersion": PROTOCOL,
        "capabilities": {} if capabilities is None else capabilities,
        "clientInfo": {"name": name, "version": version},
    }


def initialize(rid: Any = 0, name: str = "t", version: str = "1") -> dict[str, Any]:
    """A complete ``initialize`` request with id ``rid`` and empty client capabilities."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": init_params(name, version),
    }


async def spawn_stdio_server(**kwargs: Any) -> asyncio.subprocess.Process:
    """``python -m mcp_inflight serve --transport stdio`` as a real subprocess with piped stdin
    and stdout; ``kwargs`` go to :func:`asyncio.create_subprocess_exec` (e.g. ``limit``)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcp_inflight",
        "serve",
        "--transport",
        "stdio",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        **kwargs,
    )
