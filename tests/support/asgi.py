"""An in-process ASGI client: calls an ASGI app on the test's own event loop, no socket, so a test
can place events (a cancel, a DELETE, a disconnect) at an exact await of a request's path."""

from __future__ import annotations

import asyncio
import json

from mcp_inflight.impl import sse

PORT = 8000
HEADERS = {
    "host": f"127.0.0.1:{PORT}",
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}


class Exchange:
    """One HTTP request to the app: its body is given at once (or in parts); the client can
    disconnect at any time; what the app sends is recorded."""

    def __init__(
        self,
        app,
        method: str,
        headers: dict,
        body: bytes | list[bytes] = b"",
        raw_headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self.app = app
        self.parts = [body] if isinstance(body, bytes) else list(body)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.complete = False
        hdrs = (
            raw_headers
            if raw_headers is not None
            else [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        )
        self.scope = {
            "type": "http",
            "method": method,
            "path": "/mcp",
            "headers": hdrs,
            "server": ("127.0.0.1", PORT),
            "client": ("127.0.0.1", 50000),
            "scheme": "http",
            "http_version": "1.1",
            "query_string": b"",
            "root_path": "",
            "raw_path": b"/mcp",
            "asgi": {"version": "3.0"},
        }
        self.task: asyncio.Task | None = None

    async def _receive(self):
        if self.parts:
            body = self.parts.pop(0)
            return {"type": "http.request", "body": body, "more_body": bool(self.parts)}
        return await self.queue.get()

    async def _send(self, message):
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", ())}
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                self.complete = True

    def start(self) -> Exchange:
        self.task = asyncio.get_running_loop().create_task(
            self.app(self.scope, self._receive, self._send)
        )
        return self

    def disconnect(self) -> None:
        self.queue.put_nowait({"type": "http.disconnect"})

    async def done(self, timeout: float = 5.0) -> Exchange:
        assert self.task is not None
        await asyncio.wait_for(asyncio.shield(self.task), timeout)
        return self

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def messages(self) -> list:
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            return sse.messages(self.body)
        return [json.loads(self.body)] if self.body else []


async def request(
    app,
    method: str = "POST",
    msg=None,
    headers: dict | None = None,
    body: bytes | None = None,
    timeout: float = 5.0,
) -> Exchange:
    data = body if body is not None else (json.dumps(msg).encode() if msg is not None else b"")
    ex = Exchange(app, method, {**HEADERS, **(headers or {})}, data).start()
    return await ex.done(timeout)


INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "t", "version": "1"},
}


async def open_session(app) -> dict:
    """initialize + initialized; the headers of the session's later requests."""
    r = await request(app, msg={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    assert r.status == 200, r.body
    h = {"mcp-session-id": r.headers["mcp-session-id"]}
    r = await request(app, msg={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
    assert r.status == 202
    return h


def other_tasks() -> set:
    """Tasks of the loop that are not done, besides the caller's."""
    me = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not me and not t.done()}
