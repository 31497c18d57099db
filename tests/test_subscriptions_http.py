"""``subscriptions/listen`` (2026-07-28) over Streamable HTTP on a loopback uvicorn, httpx as the
client: the POST's SSE stream stays open, acknowledged first, then only the notifications the
filter asks for, each with the subscription id in ``_meta``; two clients listening with the same
id each get only their own; a closed stream ends its subscription; the server's end answers the
listen request with its completion result."""

import asyncio
import time

import httpx
import pytest

from support.http_server import build_server, sse_stream, start
from support.sessions import ACCEPT

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
SUB = "io.modelcontextprotocol/subscriptionId"
H = {**ACCEPT, "mcp-protocol-version": MODERN}


def _server():
    """The test server plus tools that use the server author's subscription API."""
    server = build_server()

    @server.tool()
    async def changed(ctx, kind: str = "", uri: str = "", end: bool = False) -> str:
        if end:
            return f"ended:{server.end_subscriptions()}"
        n = server.resource_updated(uri) if uri else server.list_changed(kind)
        return f"told:{n}"

    return server


@pytest.fixture(scope="module")
def srv():
    s = start(_server())
    yield s
    s.stop()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def listen_body(rid, **notifications):
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "subscriptions/listen",
        "params": {"_meta": dict(META), "notifications": notifications},
    }


async def tool(c, url, **args):
    body = {
        "jsonrpc": "2.0",
        "id": 77,
        "method": "tools/call",
        "params": {"_meta": dict(META), "name": "changed", "arguments": args},
    }
    r = await c.post(url, json=body, headers=H)
    assert r.status_code == 200, r.text
    text = r.text
    return text[text.index('"text":"') + 8 :].split('"')[0]


class Listen:
    """One listen POST, its SSE messages read one by one."""

    def __init__(self, c, url, body):
        self.cm = c.stream("POST", url, json=body, headers=H)
        self.got = []

    async def __aenter__(self):
        self.resp = await self.cm.__aenter__()
        assert self.resp.status_code == 200
        assert self.resp.headers["content-type"].startswith("text/event-stream")
        self.stream = sse_stream(self.resp)
        return self

    async def next(self, timeout=5.0):
        m = await asyncio.wait_for(self.stream.__anext__(), timeout)
        self.got.append(m)
        return m

    async def __aexit__(self, *exc):
        return await self.cm.__aexit__(*exc)


async def until(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return pred()


def test_acknowledged_first_then_only_what_was_asked_with_its_id(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            body = listen_body(5, toolsListChanged=True, resourceSubscriptions=["file:///a"])
            async with Listen(c, srv.url, body) as s:
                ack = await s.next()
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                assert ack["params"]["_meta"] == {SUB: 5}
                assert ack["params"]["notifications"] == {
                    "toolsListChanged": True,
                    "resourceSubscriptions": ["file:///a"],
                }
                assert await tool(c, srv.url, kind="prompts") == "told:0"  # not asked for
                assert await tool(c, srv.url, uri="file:///b") == "told:0"
                assert await tool(c, srv.url, kind="tools") == "told:1"
                m = await s.next()
                assert m == {
                    "jsonrpc": "2.0",
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": {SUB: 5}},
                }
                assert await tool(c, srv.url, uri="file:///a") == "told:1"
                m = await s.next()
                assert m["method"] == "notifications/resources/updated"
                assert m["params"] == {"uri": "file:///a", "_meta": {SUB: 5}}
                assert await tool(c, srv.url, end=True) == "ended:1"
                m = await s.next()
                assert m == {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "result": {"resultType": "complete", "_meta": {SUB: 5}},
                }
                with pytest.raises(StopAsyncIteration):
                    await s.next()  # the stream closes after the answer

    run(go())


def test_two_clients_with_the_same_listen_id_get_only_their_own(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c1, httpx.AsyncClient(timeout=10) as c2:
            async with (
                Listen(c1, srv.url, listen_body(1, toolsListChanged=True)) as a,
                Listen(c2, srv.url, listen_body(1, promptsListChanged=True)) as b,
            ):
                await a.next()
                await b.next()
                assert await tool(c1, srv.url, kind="tools") == "told:1"
                assert await tool(c1, srv.url, kind="prompts") == "told:1"
                ma, mb = await a.next(), await b.next()
                assert ma["method"] == "notifications/tools/list_changed"
                assert mb["method"] == "notifications/prompts/list_changed"
                assert await tool(c1, srv.url, end=True) == "ended:2"
                ra, rb = await a.next(), await b.next()
                assert ra["id"] == rb["id"] == 1 and "result" in ra and "result" in rb
            assert a.got[:2] == [a.got[0], ma] and len(a.got) == 3
            assert len(b.got) == 3

    run(go())


def test_closing_the_stream_ends_the_subscription(srv):
    registry = srv.app.server.subscriptions

    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            async with Listen(c, srv.url, listen_body(3, toolsListChanged=True)) as s:
                await s.next()
                assert await tool(c, srv.url, kind="tools") == "told:1"
                await s.next()

            # the client closed its POST: the subscription ends, nothing more is written for it
            async def told() -> str:
                return await tool(c, srv.url, kind="tools")

            deadline = time.monotonic() + 5
            while (n := await told()) != "told:0" and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert n == "told:0"
            assert registry.live == set()

    run(go())


def test_the_official_client_listens_and_sees_a_graceful_close(srv):
    """The official ``mcp`` client's ``Client.listen`` (2026-07-28): acknowledged (its honoured
    subset), a typed event per notification, and the server's end closes its loop gracefully
    (an abrupt drop would raise ``SubscriptionLost``)."""
    from mcp.client import Client
    from mcp.shared.subscriptions import ToolsListChanged

    async def go():
        async with Client(srv.url) as client:
            assert client.session.protocol_version == MODERN
            async with client.listen(tools_list_changed=True) as sub:
                res = await client.call_tool("changed", {"kind": "tools"})
                assert res.content[0].text == "told:1"
                events = []
                async for event in sub:
                    events.append(event)
                    res = await client.call_tool("changed", {"end": True})
                    assert res.content[0].text == "ended:1"
            assert len(events) == 1 and isinstance(events[0], ToolsListChanged)

    run(go())


def test_stopping_mcp_inflight_serve_answers_an_open_listen():
    """``mcp-inflight serve`` told to stop (SIGTERM) ends each live subscription first: the
    listen gets its completion result and the process exits, instead of uvicorn waiting on a
    stream that never ends by itself."""
    import re
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_inflight", "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline:
            m = re.search(r"listening on (http://\S+)", proc.stderr.readline())
            url = m and m.group(1)
        assert url, "serve did not start"

        async def go():
            async with httpx.AsyncClient(timeout=10) as c:
                async with Listen(c, url, listen_body(1, toolsListChanged=True)) as ls:
                    ack = await ls.next()
                    assert ack["method"] == "notifications/subscriptions/acknowledged"
                    proc.send_signal(signal.SIGTERM)
                    end = await ls.next(timeout=10)
                    assert end["id"] == 1 and end["result"]["resultType"] == "complete"
                    assert end["result"]["_meta"][SUB] == 1

        run(go())
        assert proc.wait(10) in (0, -signal.SIGTERM)  # uvicorn raises the signal again on exit
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
