"""Regressions of the runtime adapters found by hostile input (each failed before its fix):
deep or surrogate JSON, a custom method's odd ``_meta``, scopes left behind, over-long stdio
lines, a failed ``initialize``, Host and Origin parsing, Accept and Content-Type, the resource
bounds, and response headers at admission."""

from __future__ import annotations

import asyncio
import json

from mcp_inflight.impl import jsonio
from mcp_inflight.impl.http import create_app
from mcp_inflight.impl.server import Server, Session
from mcp_inflight.impl.stdio import LINE_LIMIT, serve_stdio
from support.asgi import HEADERS, Exchange, open_session, request
from support.sessions import initialize, spawn_stdio_server

DEEP = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + b"[" * 2000 + b"]" * 2000 + b"}}"
SURROGATE_ID = b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'
SURROGATE_METHOD = b'{"jsonrpc":"2.0","id":2,"method":"\\ud800"}'


def build() -> Server:
    server = Server("hardening")
    server.gate = asyncio.Event()

    @server.tool()
    async def lone(ctx) -> str:
        return "bad \ud800 text"

    @server.tool()
    async def deep(ctx) -> dict:
        v: list = []
        for _ in range(5000):
            v = [v]
        return {"content": [{"type": "text", "text": "deep"}], "nested": v}

    @server.tool()
    async def wait(ctx) -> str:
        await server.gate.wait()
        return "waited"

    @server.tool()
    async def mark(ctx) -> str:
        server.marks += 1
        return "marked"

    server.marks = 0

    @server.method("x/echo")
    async def echo(ctx, params):
        return {"echo": True}

    return server


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def call(rid, name):
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}},
    }


def test_jsonio_reads_bounded_and_strict():
    for bad in (DEEP, SURROGATE_ID, b'"\xed\xa0\x80"', b"NaN", b"[1e400]"):
        try:
            jsonio.loads(bad)
        except ValueError:
            continue
        raise AssertionError(bad[:40])
    big = jsonio.loads(b'{"id": 123456789012345678901234567890}')
    assert big["id"] == 123456789012345678901234567890 and type(big["id"]) is int
    assert jsonio.dumps({"t": "a\ud800b"}) == '{"t":"a\ufffdb"}'.encode()
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    out = jsonio.encode_message({"jsonrpc": "2.0", "id": 3, "result": {"v": nested}})
    assert json.loads(out)["error"]["code"] == -32603 and json.loads(out)["id"] == 3
    assert jsonio.encode_message({"jsonrpc": "2.0", "method": "x", "params": {"v": nested}}) is None


def test_http_deep_and_surrogate_json_answered_and_server_healthy():
    async def go():
        app = create_app(build())
        h = await open_session(app)
        for body in (DEEP, SURROGATE_ID, SURROGATE_METHOD):
            r = await request(app, body=body, headers=h)
            assert r.status == 400 and json.loads(r.body)["error"]["code"] == -32700, (
                r.status,
                r.body,
            )
        r = await request(app, msg=call(5, "lone"), headers=h)
        assert r.status == 200
        assert r.messages()[-1]["result"]["content"][0]["text"] == "bad \ufffd text"
        r = await request(app, msg=call(6, "deep"), headers=h)
        assert r.messages()[-1]["error"]["code"] == -32603 and r.messages()[-1]["id"] == 6
        assert app.live_requests() == 0

    run(go())


class Pipe:
    def __init__(self, server: Server) -> None:
        self.reader = asyncio.StreamReader(limit=LINE_LIMIT)
        self.raw: list[bytes] = []
        self.session = Session(server, "stdio")
        self.task = asyncio.get_running_loop().create_task(
            serve_stdio(server, self.reader, self.raw.append, self.session)
        )

    def out(self) -> list[dict]:
        return [json.loads(x) for chunk in self.raw for x in chunk.splitlines()]

    async def until(self, n: int) -> list[dict]:
        for _ in range(2000):
            if len(self.out()) >= n:
                return self.out()
            await asyncio.sleep(0)
        raise AssertionError(self.out())


def test_stdio_deep_surrogate_and_bad_results_keep_the_server_up():
    async def go():
        p = Pipe(build())
        p.reader.feed_data(DEEP + b"\n" + SURROGATE_ID + b"\n" + SURROGATE_METHOD + b"\n")
        p.reader.feed_data(json.dumps(call(5, "lone")).encode() + b"\n")
        p.reader.feed_data(json.dumps(call(6, "deep")).encode() + b"\n")
        p.reader.feed_data(b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
        out = await p.until(6)
        assert [m["error"]["code"] for m in out[:3]] == [-32700, -32700, -32700]
        by_id = {m["id"]: m for m in out[3:]}
        assert by_id[5]["result"]["content"][0]["text"] == "bad \ufffd text"
        assert by_id[6]["error"]["code"] == -32603 and by_id[7]["result"] == {}
        p.reader.feed_eof()
        await p.task

    run(go())


def test_stdio_process_survives_deep_json():
    async def go():
        proc = await spawn_stdio_server()
        proc.stdin.write(
            DEEP + b"\n" + SURROGATE_ID + b"\n" + b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'
        )
        await proc.stdin.drain()
        lines = [json.loads(await asyncio.wait_for(proc.stdout.readline(), 10)) for _ in range(3)]
        assert [m.get("id") for m in lines] == [None, None, 9] and lines[2]["result"] == {}
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 10) == 0

    run(go())


def test_stdio_process_call_and_cancel_in_one_write_frees_the_id():
    """A real ``serve --transport stdio``: a call and its cancel in one write (the handler is
    cancelled before its first step), then the same id again: served, not refused."""

    def line(msg) -> bytes:
        return json.dumps(msg).encode() + b"\n"

    async def go():
        proc = await spawn_stdio_server()
        proc.stdin.write(line(initialize()))
        await proc.stdin.drain()
        assert json.loads(await asyncio.wait_for(proc.stdout.readline(), 10))["id"] == 0
        slow = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"label": "x", "steps": 1, "delay": 0}},
        }
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 1},
        }
        echo = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "again"}},
        }
        proc.stdin.write(line(slow) + line(cancel))
        await proc.stdin.drain()
        await asyncio.sleep(0.5)  # the cancelled call has long ended
        proc.stdin.write(line(echo))
        await proc.stdin.drain()
        while True:
            m = json.loads(await asyncio.wait_for(proc.stdout.readline(), 10))
            if "method" not in m:
                break
        assert m.get("id") == 1 and m["result"]["content"][0]["text"] == "again", m
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 10) == 0

    run(go())


def test_custom_method_with_odd_meta_answers_and_frees_the_id():
    async def go():
        app = create_app(build())
        h = await open_session(app)
        for rid, meta in ((1, "x"), (2, 5), (3, [1])):
            msg = {"jsonrpc": "2.0", "id": rid, "method": "x/echo", "params": {"_meta": meta}}
            r = await request(app, msg=msg, headers=h)
            assert r.status == 200, (r.status, r.body)
            assert r.messages()[-1] == {"jsonrpc": "2.0", "id": rid, "result": {"echo": True}}
            r = await request(app, msg={"jsonrpc": "2.0", "id": rid, "method": "ping"}, headers=h)
            assert r.status == 200, (r.status, r.body)  # the id is free again
        assert app.live_requests() == 0

    run(go())


def test_a_request_whose_handler_cannot_start_is_answered_and_frees_its_id(monkeypatch):
    """The general defence behind the one above: whatever fails between admission and the
    handler's task (here the context itself), the admitted request is answered and its id
    freed, never left in flight."""
    import mcp_inflight.impl.server as srv

    async def go():
        app = create_app(build())
        h = await open_session(app)
        with monkeypatch.context() as m:
            m.setattr(srv, "Context", lambda *a: 1 / 0)
            r = await request(app, msg=call(1, "lone"), headers=h)
        assert r.status == 200 and r.messages()[-1]["error"]["code"] == -32603, r.body
        r = await request(app, msg=call(1, "lone"), headers=h)  # the id is free
        assert r.messages()[-1]["result"]["content"][0]["text"] == "bad \ufffd text"
        assert app.live_requests() == 0

    run(go())


def test_left_scopes_are_pruned_without_being_asked():
    """Scopes of deleted sessions and of 2026-07-28 POSTs whose handler outlived the POST were
    pruned only inside live_requests(), which nothing calls."""

    async def go():
        server = build()
        app = create_app(server)
        for _ in range(20):
            h = await open_session(app)
            ex = Exchange(
                app, "POST", {**HEADERS, **h}, json.dumps(call(1, "wait")).encode()
            ).start()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            await request(app, "DELETE", headers=h)
            await ex.done()
        modern = {"mcp-protocol-version": "2026-07-28"}
        for k in range(20):
            ex = Exchange(
                app, "POST", {**HEADERS, **modern}, json.dumps(call(k, "lone")).encode()
            ).start()
            await ex.done()
        for _ in range(50):
            await asyncio.sleep(0)
        assert not app._left and not app.sessions  # no call of live_requests() before
        assert app.live_requests() == 0

    run(go())


def test_stdio_line_over_the_limit_is_skipped_whole():
    async def go():
        p = Pipe(build())
        hidden = b'{"jsonrpc":"2.0","id":66,"method":"ping"}'
        spaces = b" " * (1 << 16)
        for _ in range(LINE_LIMIT // len(spaces) + 1):  # as a pipe delivers it: in chunks
            p.reader.feed_data(spaces)
            await asyncio.sleep(0)
        p.reader.feed_data(hidden + b"\n")
        p.reader.feed_data(b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
        out = await p.until(2)
        assert out[0]["id"] is None and out[0]["error"]["code"] == -32600
        assert out[1]["id"] == 7 and len(out) == 2  # the request after the limit never ran
        p.reader.feed_eof()
        await p.task

    run(go())


def test_failed_initialize_creates_no_session():
    async def go():
        app = create_app(build())
        msg = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 5}}
        r = await request(app, msg=msg)
        assert json.loads(r.body)["error"]["code"] == -32602
        assert "mcp-session-id" not in r.headers and not app.sessions

    run(go())


def test_host_and_origin_parsing():
    async def go():
        app = create_app(build())
        init = initialize()
        cases = [
            ({"host": "LOCALHOST:8000"}, 200),
            ({"host": "LocalHost"}, 200),
            ({"host": "127.0.0.1:8000"}, 200),
            ({"host": "[::1]:8000"}, 200),
            ({"host": "127.0.0.1:9999"}, 421),
            ({"host": "evil.example:8000"}, 421),
            ({"host": "127.0.0.1:x"}, 421),
            ({"origin": "http://localhost:8000"}, 200),
            ({"origin": "http://LOCALHOST:8000"}, 200),
            ({"origin": "http://localhost:3000"}, 403),
            ({"origin": "file://localhost"}, 403),
            ({"origin": "file://localhost:8000"}, 403),
            ({"origin": "ws://localhost:8000"}, 403),
            ({"origin": "null"}, 403),
            ({"origin": "http://evil.example:8000"}, 403),
        ]
        for headers, status in cases:
            r = await request(app, msg=init, headers=headers)
            assert r.status == status, (headers, r.status, r.body)
        twice = [
            (b"host", b"127.0.0.1:8000"),
            (b"host", b"evil.example"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
        ]
        ex = Exchange(app, "POST", {}, json.dumps(init).encode(), raw_headers=twice).start()
        await ex.done()
        assert ex.status == 400

    run(go())


def test_accept_and_content_type_as_the_sdk():
    async def go():
        app = create_app(build())
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        r = await request(app, msg=ping, headers={"accept": "application/json"})
        assert r.status == 406
        r = await request(app, msg=ping, headers={"accept": "*/*"})
        assert r.status != 406
        r = await request(app, msg=ping, headers={"content-type": "text/plain"})
        assert r.status == 415
        h = await open_session(app)
        r = await request(app, "GET", headers={**h, "accept": "application/json"})
        assert r.status == 406

    run(go())


def test_session_cap_in_flight_cap_and_idle_expiry():
    async def go():
        server = build()
        app = create_app(server, max_sessions=2, max_in_flight=1, session_idle_timeout=0.05)
        h1 = await open_session(app)
        await open_session(app)
        init = initialize()
        r = await request(app, msg=init)
        assert r.status == 503 and r.headers.get("retry-after")
        ex = Exchange(app, "POST", {**HEADERS, **h1}, json.dumps(call(1, "wait")).encode()).start()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        r = await request(app, msg=call(2, "lone"), headers=h1)
        assert r.status == 429 and json.loads(r.body)["id"] == 2
        server.gate.set()
        await ex.done()
        await asyncio.sleep(0.2)  # past the idle expiry (a bound, not a speed claim)
        r = await request(app, msg={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=h1)
        assert r.status == 404
        r = await request(app, msg=init)  # the expired sessions no longer count
        assert r.status == 200 and len(app.sessions) == 1

    run(go())


def test_body_timeout_and_incomplete_body():
    async def go():
        app = create_app(build(), body_timeout=0.05)
        h = await open_session(app)
        stuck = Exchange(app, "POST", {**HEADERS, **h}, [b'{"jsonrpc":']).start()
        stuck.parts = []
        stuck.queue.put_nowait({"type": "http.request", "body": b'{"jsonrpc":', "more_body": True})
        await stuck.done()
        assert stuck.status == 408
        gone = Exchange(app, "POST", {**HEADERS, **h}, [b""]).start()
        gone.parts = []
        gone.queue.put_nowait(
            {
                "type": "http.request",
                "body": json.dumps(call(4, "lone")).encode()[:10],
                "more_body": True,
            }
        )
        gone.disconnect()
        await gone.done()
        assert gone.status == 400 and app.live_requests() == 0
        # a first part that is a whole message, then the client leaves before the body's end:
        # nothing of it is served
        cut = Exchange(app, "POST", {**HEADERS, **h}, [b""]).start()
        cut.parts = []
        whole = json.dumps(call(5, "mark")).encode()
        cut.queue.put_nowait({"type": "http.request", "body": whole, "more_body": True})
        cut.disconnect()
        await cut.done()
        for _ in range(5):
            await asyncio.sleep(0)
        assert app.server.marks == 0 and app.live_requests() == 0

    run(go())


def test_headers_sent_at_admission():
    async def go():
        server = build()
        app = create_app(server)
        h = await open_session(app)
        ex = Exchange(app, "POST", {**HEADERS, **h}, json.dumps(call(1, "wait")).encode()).start()
        for _ in range(5):
            await asyncio.sleep(0)
        assert ex.status == 200 and ex.headers["content-type"] == "text/event-stream"
        assert not ex.complete  # the silent handler still runs
        server.gate.set()
        await ex.done()
        assert ex.messages()[-1]["result"]["content"][0]["text"] == "waited"

    run(go())
