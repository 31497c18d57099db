"""Raw JSON-RPC over real Streamable HTTP with httpx, for the tests that speak the wire protocol
themselves where the official client has no API for it (the task methods of both revisions).

One request per POST, numbered by the client; the answer is read whichever way the server chose
to send it: a JSON body, or an SSE stream whose last message is the response.  What each revision
adds (a session's headers, a request's ``_meta``, what counts as a good answer) stays with its
tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

from support.http_server import sse_messages

T = TypeVar("T")

MODERN = "2026-07-28"
#: the tasks extension's identifier (SEP-2663)
TASKS_EXT = "io.modelcontextprotocol/tasks"
#: the headers of a 2026-07-28 POST
MODERN_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": MODERN,
}


def modern_meta(extension: bool = True) -> dict[str, Any]:
    """The ``_meta`` every 2026-07-28 request carries (no session to remember it): protocol
    version, client info, client capabilities (elicitation and the tasks extension, or none)."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": (
            {"elicitation": {}, "extensions": {TASKS_EXT: {}}} if extension else {}
        ),
    }


def run(coro: Coroutine[Any, Any, T], within: float = 30) -> T:
    """``coro`` in a fresh event loop, failed after ``within`` seconds."""
    return asyncio.run(asyncio.wait_for(coro, within))


def messages(r: httpx.Response) -> list[dict]:
    """The JSON-RPC messages of a response: its SSE stream's, or its one JSON body."""
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        return sse_messages(r.content)
    return [r.json()]


class NumberedClient:
    """Requests to ``url`` by the httpx client ``c`` with ``headers``, numbered from
    ``first + 1`` (``n``: the id of the last one sent)."""

    def __init__(
        self, c: httpx.AsyncClient, url: str, headers: dict[str, str], first: int = 0
    ) -> None:
        self.c, self.url, self.h, self.n = c, url, headers, first

    async def post(self, method: str, params: dict | None = None) -> httpx.Response:
        """Send ``method`` (with ``params`` when given) under the next id."""
        self.n += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            body["params"] = params
        return await self.c.post(self.url, json=body, headers=self.h)
