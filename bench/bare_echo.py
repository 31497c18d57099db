"""The ceiling for bench/runtime.py: a bare ASGI app that answers a JSON-RPC tools/call "echo"
with one SSE event, and nothing else of MCP.

It parses the body as JSON, answers ``initialize`` (with an ``Mcp-Session-Id`` header that it
never checks), 202 for notifications, and for any request writes one ``event: message`` whose
data is the JSON-RPC result: for ``tools/call`` the text of ``arguments.text``.  No sessions, no
id registry, no validation: what is left is uvicorn, JSON and the ASGI sends.
"""

from __future__ import annotations

import json
import secrets

_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
_JSON = [(b"content-type", b"application/json")]


def _dumps(msg) -> bytes:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode()


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif m["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": [(b"allow", b"POST")]})
        await send({"type": "http.response.body", "body": b""})
        return
    chunks = []
    while True:
        m = await receive()
        if m["type"] == "http.disconnect":
            return
        chunks.append(m.get("body", b""))
        if not m.get("more_body"):
            break
    try:
        msg = json.loads(b"".join(chunks))
    except ValueError:
        body = _dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        )
        await send({"type": "http.response.start", "status": 400, "headers": _JSON})
        await send({"type": "http.response.body", "body": body})
        return
    if "id" not in msg:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = list(_SSE)
    method = msg.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bare-echo", "version": "0"},
        }
        headers.append((b"mcp-session-id", secrets.token_urlsafe(24).encode()))
    elif method == "tools/call":
        text = msg["params"]["arguments"]["text"]
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        result = {}
    data = _dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"event: message\ndata: " + data + b"\n\n"})
