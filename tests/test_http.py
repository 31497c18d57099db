"""Streamable HTTP over real sockets: uvicorn on a loopback port, httpx as the client."""

import asyncio
import json
import time

import httpx
import pytest
from http_server import sse_messages, start

INIT = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test", "version": "1"}}
MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def srv():
    s = start()
    yield s
    s.stop()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def call(rid, name, args, token=None):
    params = {"name": name, "arguments": args}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def session(c, url):
    r = await c.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, headers=ACCEPT)
    assert r.status_code == 200
    sid = r.headers["mcp-session-id"]
    assert sid.isascii() and len(sid) >= 16 and all(33 <= ord(ch) <= 126 for ch in sid)
    h = {**ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
    r = await c.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
    assert r.status_code == 202
    return h


class Stream:
    """A POST whose SSE response is read message by message."""

    def __init__(self, c, url, body, headers):
        self.cm = c.stream("POST", url, json=body, headers=headers)
        self.msgs = []

    async def __aenter__(self):
        self.resp = await self.cm.__aenter__()
        self.lines = self.resp.aiter_lines()
        return self

    async def next(self):
        async for line in self.lines:
            if line.startswith("data:"):
                m = json.loads(line[5:].strip())
                self.msgs.append(m)
                return m
        return None

    async def rest(self):
        while (await self.next()) is not None:
            pass
        return self.msgs

    async def __aexit__(self, *exc):
        await self.cm.__aexit__(*exc)


def wait_idle(srv, timeout=5.0):
    """Every session's core is empty (no registry leaks) once the handlers have ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(s.idle() for s in list(srv.app.sessions.values())):
            return True
        time.sleep(0.02)
    return False


def test_duplicate_gets_409_and_original_keeps_its_stream(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            async with Stream(c, srv.url, call(5, "slow", {"label": "A", "steps": 4, "delay": 0.05}, "tA"), h) as a:
                first = await a.next()
                assert first["method"] == "notifications/progress"
                dup = await c.post(srv.url, json=call(5, "slow", {"label": "B", "steps": 1, "delay": 0}, "tB"),
                                   headers=h)
                assert dup.status_code == 409
                body = dup.json()
                assert body["id"] is None and body["error"]["code"] == -32600
                assert body["error"]["data"] == {"id": 5}
                msgs = await a.rest()
            progress = [m for m in msgs if m.get("method") == "notifications/progress"]
            assert [m["params"]["progress"] for m in progress] == [1, 2, 3, 4]
            assert all("A" in m["params"]["message"] and m["params"]["progressToken"] == "tA" for m in progress)
            logs = [m for m in msgs if m.get("method") == "notifications/message"]
            assert len(logs) == 4 and all("A:" in m["params"]["data"] for m in logs)
            final = msgs[-1]
            assert final["id"] == 5 and final["result"]["content"][0]["text"] == "done:A"
            # the id is free again once its response is sent
            again = await c.post(srv.url, json=call(5, "echo", {"text": "again"}), headers=h)
            assert again.status_code == 200
            assert list(sse_messages(again.text.splitlines()))[-1]["result"]["content"][0]["text"] == "again"
    run(go())
    assert wait_idle(srv)


def test_ids_keep_their_json_type_and_cancel_reaches_the_right_request(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            async with Stream(c, srv.url, call(7, "hold", {"label": "int7"}, 1), h) as a, \
                    Stream(c, srv.url, call("7", "hold", {"label": "str7"}, 2), h) as b:
                await a.next()
                await b.next()
                r = await c.post(srv.url, json={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                "params": {"requestId": "7"}}, headers=h)
                assert r.status_code == 202
                assert await b.rest() == b.msgs and all("id" not in m for m in b.msgs)   # no response
                r = await c.post(srv.url, json=call(8, "release", {"label": "int7"}), headers=h)
                assert r.status_code == 200
                msgs = await a.rest()
                assert msgs[-1]["id"] == 7 and msgs[-1]["result"]["content"][0]["text"] == "held:int7"
            # a cancel for an unknown or finished id is ignored
            r = await c.post(srv.url, json={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                            "params": {"requestId": 7}}, headers=h)
            assert r.status_code == 202
    run(go())
    assert ("cancelled", "str7") in srv.app.server.events and ("done", "int7") in srv.app.server.events
    assert wait_idle(srv)


def test_aborting_one_post_leaves_another_alone(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            async with Stream(c, srv.url, call(1, "slow", {"label": "keep", "steps": 5, "delay": 0.05}, "k"), h) as keep:
                async with Stream(c, srv.url, call(2, "slow", {"label": "gone", "steps": 5, "delay": 0.05}, "g"), h) as gone:
                    await gone.next()
                # gone's connection is closed; its handler goes on (2025-11-25), id 2 still in flight
                await asyncio.sleep(0.05)
                dup = await c.post(srv.url, json=call(2, "echo", {"text": "x"}), headers=h)
                assert dup.status_code == 409
                msgs = await keep.rest()
            assert [m["params"]["progress"] for m in msgs if m.get("method") == "notifications/progress"] == [1, 2, 3, 4, 5]
            assert all("keep" in json.dumps(m) for m in msgs)
            assert msgs[-1]["id"] == 1 and msgs[-1]["result"]["content"][0]["text"] == "done:keep"
            await asyncio.sleep(0.3)      # gone's handler ends: its messages were dropped, id 2 free
            r = await c.post(srv.url, json=call(2, "echo", {"text": "y"}), headers=h)
            assert r.status_code == 200
    run(go())
    assert wait_idle(srv)
    assert sum(s.core.dropped for s in srv.app.sessions.values()) >= 1


def test_delete_releases_pending_elicitation(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            async with Stream(c, srv.url, call(3, "ask", {"label": "Q", "delay": 0}), h) as a:
                req = await a.next()
                assert req["method"] == "elicitation/create" and "Q" in req["params"]["message"]
                sess = [s for s in srv.app.sessions.values() if s.pending]
                assert sess
                r = await c.delete(srv.url, headers=h)
                assert r.status_code == 200
                rest = await a.rest()
                assert all("result" not in m for m in rest)
            r = await c.post(srv.url, json=call(4, "echo", {"text": "x"}), headers=h)
            assert r.status_code == 404
            return sess[0]
    s = run(go())
    deadline = time.monotonic() + 5
    while not s.idle() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert s.idle() and s.ended


def test_elicitation_answered_on_its_own_stream(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            async with Stream(c, srv.url, call(3, "ask", {"label": "Z", "delay": 0}), h) as a:
                req = await a.next()
                r = await c.post(srv.url, json={"jsonrpc": "2.0", "id": req["id"],
                                                "result": {"action": "decline"}}, headers=h)
                assert r.status_code == 202
                msgs = await a.rest()
            assert msgs[-1]["id"] == 3 and msgs[-1]["result"]["content"][0]["text"] == "ask:Z:decline"
            # a response to nothing is accepted and ignored
            r = await c.post(srv.url, json={"jsonrpc": "2.0", "id": 999, "result": {}}, headers=h)
            assert r.status_code == 202
    run(go())
    assert wait_idle(srv)


def test_modern_closed_stream_is_cancellation(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = {**ACCEPT, "mcp-protocol-version": MODERN}
            body = call(1, "hold", {"label": "modern-close"}, "m")
            body["params"]["_meta"].update(MODERN_META)
            async with Stream(c, srv.url, body, h) as a:
                first = await a.next()
                assert first["method"] == "notifications/progress"
            await asyncio.sleep(0.2)
    run(go())
    assert ("cancelled", "modern-close") in srv.app.server.events


def test_modern_discover_and_call(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = {**ACCEPT, "mcp-protocol-version": MODERN}
            r = await c.post(srv.url, json={"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                            "params": {"_meta": MODERN_META}}, headers=h)
            assert r.status_code == 200 and MODERN in r.json()["result"]["supportedVersions"]
            body = call(1, "echo", {"text": "m"})
            body["params"]["_meta"] = MODERN_META
            r = await c.post(srv.url, json=body, headers=h)
            msg = list(sse_messages(r.text.splitlines()))[-1]
            assert msg["result"]["content"][0]["text"] == "m" and msg["result"]["resultType"] == "complete"
            body["params"]["_meta"] = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
            r = await c.post(srv.url, json=body, headers=h)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32020
            for verb in ("GET", "DELETE"):
                r = await c.request(verb, srv.url, headers=h)
                assert r.status_code == 405
    run(go())


def test_status_codes(srv):
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = await session(c, srv.url)
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            r = await c.post(srv.url, json=ping, headers=ACCEPT)
            assert r.status_code == 400                                     # no session
            r = await c.post(srv.url, json=ping, headers={**ACCEPT, "mcp-session-id": "nope"})
            assert r.status_code == 404                                     # unknown session
            r = await c.post(srv.url, json=ping, headers=h)
            assert r.status_code == 200 and r.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
            r = await c.post(srv.url, content=json.dumps([ping]), headers=h)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32600
            r = await c.post(srv.url, content=b"{" + b" " * (5 * 1024 * 1024) + b"}", headers=h)
            assert r.status_code == 413
            r = await c.post(srv.url, json=ping, headers={**h, "origin": "http://evil.example"})
            assert r.status_code == 403
            r = await c.post(srv.url, json=ping, headers={**h, "origin": f"http://localhost:{srv.port}"})
            assert r.status_code == 200
            r = await c.post(srv.url, json=ping, headers={**h, "host": "evil.example"})
            assert r.status_code == 421
            r = await c.post(srv.url, json=ping, headers={**h, "mcp-protocol-version": "1999-01-01"})
            assert r.status_code == 400
            r = await c.put(srv.url, json=ping, headers=h)
            assert r.status_code == 405
            r = await c.post(srv.url.replace("/mcp", "/other"), json=ping, headers=h)
            assert r.status_code == 404
            r = await c.post(srv.url, json={"jsonrpc": "2.0", "id": None, "method": "ping"}, headers=h)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32600
            # one standalone GET stream per session, in a slot no request id can name
            async with c.stream("GET", srv.url, headers=h) as g:
                assert g.status_code == 200
                r = await c.get(srv.url, headers=h)
                assert r.status_code == 409
                r = await c.post(srv.url, json=call("_GET_stream", "echo", {"text": "slot"}), headers=h)
                assert r.status_code == 200
            r = await c.delete(srv.url, headers={**ACCEPT})
            assert r.status_code == 400
            r = await c.delete(srv.url, headers=h)
            assert r.status_code == 200
            r = await c.delete(srv.url, headers=h)
            assert r.status_code == 404
    run(go())


def test_modern_posts_are_separate_scopes(srv):
    """2026-07-28 has no session, so two clients cannot be told apart: the same id on two
    concurrent POSTs is two requests, each answered on its own stream."""
    async def go():
        async with httpx.AsyncClient(timeout=10) as c:
            h = {**ACCEPT, "mcp-protocol-version": MODERN}
            bodies = []
            for label in ("one", "two"):
                b = call(1, "slow", {"label": label, "steps": 3, "delay": 0.03}, label)
                b["params"]["_meta"].update(MODERN_META)
                bodies.append(b)
            async with Stream(c, srv.url, bodies[0], h) as a, Stream(c, srv.url, bodies[1], h) as b:
                ma, mb = await asyncio.gather(a.rest(), b.rest())
            for msgs, label in ((ma, "one"), (mb, "two")):
                assert [m["params"]["progressToken"] for m in msgs if "method" in m] == [label] * 3
                assert msgs[-1]["result"]["content"][0]["text"] == f"done:{label}"
    run(go())
