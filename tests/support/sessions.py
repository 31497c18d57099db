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


def initialize(
    rid: Any = 0, name: str = "t", version: str = "1", capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A complete ``initialize`` request with id ``rid`` (client capabilities empty unless
    given)."""
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "initialize",
        "params": init_params(name, version, capabilities),
    }


async def spawn_stdio_server(**kwargs: Any) -> asyncio.subprocess.Process:
    """``python -m mcp_inflight serve --transport stdio`` as a real subprocess with piped stdin
    and stdout; ``kwargs`` go to :func:`asyncio.create_subprocess_exec` (e.g. ``limit``).  Its
    wire trace is checked by the model after each test (``support/oracle.py``)."""
    from support import oracle

    argv, o = oracle.traced_argv(
        [sys.executable, "-m", "mcp_inflight", "serve", "--transport", "stdio"], "stdio server"
    )
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        **kwargs,
    )
    return oracle.watch(o, proc)


def tool_call(rid: Any, name: str, args: dict[str, Any], token: Any = None) -> dict[str, Any]:
    """A ``tools/call`` request; ``token`` (when given) is its ``_meta.progressToken``."""
    params: dict[str, Any] = {"name": name, "arguments": args}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


#: The headers of a POST that accepts either a JSON body or an SSE stream.
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def http_session(client: Any, url: str) -> dict[str, str]:
    """Open a 2025-11-25 session over Streamable HTTP with ``client`` (an ``httpx.AsyncClient``):
    initialize (with the elicitation capability), check the session id's form, send
    ``notifications/initialized``; return the headers of the session's later POSTs."""
    body = {**initialize(0), "params": init_params("test", capabilities={"elicitation": {}})}
    r = await client.post(url, json=body, headers=ACCEPT)
    assert r.status_code == 200
    sid = r.headers["mcp-session-id"]
    assert sid.isascii() and len(sid) >= 16 and all(33 <= ord(ch) <= 126 for ch in sid)
    h = {**ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": PROTOCOL}
    r = await client.post(url, json=INITIALIZED, headers=h)
    assert r.status_code == 202
    return h
