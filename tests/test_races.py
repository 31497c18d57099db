"""A cancel, a DELETE, a disconnect or the server's own cancellation placed at every await of a
request's path, in-process and deterministic (HTTP through the ASGI app on the test's loop, stdio
through ``serve_stdio`` on an in-memory reader).

After each: the request's POST has ended (no hung response), ``live_requests()`` is 0, the id
is free again in its session, and no task is left behind.  The handler used has several awaits
of its own (progress, then yields), so the injection points cover the adapter's awaits, the
handler's first step (a task cancelled before it never runs its body: the bug this guards
against) and every later step.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from mcp_inflight.impl.http import create_app
from mcp_inflight.impl.server import Server, Session
from mcp_inflight.impl.stdio import serve_stdio
from support.asgi import HEADERS as H
from support.asgi import Exchange, open_session, other_tasks, request
from support.sessions import INITIALIZED, initialize

STEPS = 3
POINTS = range(0, 4 * STEPS + 6)  # past the handler's last step


def build() -> Server:
    server = Server("races")

    @server.tool()
    async def steps(ctx, n: int = STEPS) -> str:
        for k in range(n):
            await ctx.progress(k + 1, n)
            await asyncio.sleep(0)
        return "stepped"

    return server


def call(rid=1) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "steps", "arguments": {}, "_meta": {"progressToken": "t"}},
    }


def cancel(rid=1) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}


def run(coro):
    async def bounded():
        async with asyncio.timeout(60):  # no wrapper task: other_tasks() sees only the app's
            return await coro

    return asyncio.run(bounded())


async def settle(rounds: int = 200) -> None:
    for _ in range(rounds):
        if not other_tasks():
            return
        await asyncio.sleep(0)


async def _http_case(kind: str, k: int, modern: bool) -> None:
    app = create_app(build())
    h = {"mcp-protocol-version": "2026-07-28"} if modern else await open_session(app)
    ex = Exchange(app, "POST", {**H, **h}, json.dumps(call()).encode()).start()
    for _ in range(k):
        await asyncio.sleep(0)
    if kind == "cancel":
        r = await request(app, msg=cancel(), headers=h)
        assert r.status == 202
    elif kind == "delete":
        r = await request(app, "DELETE", headers=h)
        assert r.status == 200
    elif kind == "disconnect":
        ex.disconnect()
    elif kind == "abort":  # the server cancels the request's ASGI task
        assert ex.task is not None
        ex.task.cancel()
    try:
        await ex.done()
    except asyncio.CancelledError:
        assert kind == "abort"
    await settle()
    assert not other_tasks(), (kind, k, other_tasks())
    assert app.live_requests() == 0, (kind, k)
    assert not app._left, (kind, k)
    if ex.status == 200 and ex.complete and kind not in ("disconnect", "abort"):
        msgs = ex.messages()
        assert all(m.get("id") == 1 for m in msgs if "method" not in m)
    if kind != "delete" and not modern:
        r = await request(app, msg={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=h)
        assert r.status == 200 and json.loads(r.body)["result"] == {}, (kind, k, r.status, r.body)
    if kind == "delete":
        r = await request(app, msg={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=h)
        assert r.status == 404


@pytest.mark.parametrize("kind", ["cancel", "delete", "disconnect", "abort"])
def test_http_injection_at_every_await(kind):
    async def go():
        for k in POINTS:
            await _http_case(kind, k, modern=False)

    run(go())


@pytest.mark.parametrize("kind", ["disconnect", "abort"])
def test_http_modern_injection_at_every_await(kind):
    async def go():
        for k in POINTS:
            await _http_case(kind, k, modern=True)

    run(go())


def test_http_call_and_cancel_in_one_loop_turn():
    """Issue: the POST never got its response and the id stayed 409 (live_requests() 1)."""

    async def go():
        app = create_app(build())
        h = await open_session(app)
        a = Exchange(app, "POST", {**H, **h}, json.dumps(call()).encode())
        b = Exchange(app, "POST", {**H, **h}, json.dumps(cancel()).encode())
        a.start()
        b.start()  # both bodies at hand: the cancel is read in the same turn
        await a.done()
        await b.done()
        assert a.complete and b.status == 202
        await settle()
        assert app.live_requests() == 0 and not other_tasks()
        r = await request(app, msg=call(), headers=h)
        assert r.status == 200 and r.messages()[-1]["result"]["content"][0]["text"] == "stepped"

    run(go())


# --- stdio ---------------------------------------------------------------------------------


class Pipe:
    def __init__(self) -> None:
        self.reader = asyncio.StreamReader()
        self.out: list[dict] = []
        self.session = Session(build(), "stdio")
        self.task = asyncio.get_running_loop().create_task(
            serve_stdio(self.session.server, self.reader, self._write, self.session)
        )

    def _write(self, data: bytes) -> None:
        for line in data.splitlines():
            self.out.append(json.loads(line))

    def send(self, *msgs: dict) -> None:
        self.reader.feed_data(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))

    async def answer(self, rid, rounds: int = 500) -> dict:
        for _ in range(rounds):
            for m in self.out:
                if "method" not in m and m.get("id") == rid:
                    return m
            await asyncio.sleep(0)
        raise AssertionError(f"no answer to {rid!r}: {self.out}")

    async def close(self) -> None:
        self.reader.feed_eof()
        await asyncio.wait_for(self.task, 5)


async def _stdio_case(kind: str, k: int) -> None:
    p = Pipe()
    p.send(
        initialize(),
        INITIALIZED,
    )
    await p.answer(0)
    p.send(call())
    for _ in range(k):
        await asyncio.sleep(0)
    if kind == "cancel":
        p.send(cancel())
        await settle()
        assert p.session.idle(), (kind, k)
        p.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        await settle()
        pong = [m for m in p.out if m.get("id") == 1 and m.get("result") == {}]
        assert pong, (kind, k, p.out)
        await p.close()
    else:  # end of input: the session ends
        await p.close()
    await settle()
    assert p.session.idle() and not p.session.tasks, (kind, k)
    assert not other_tasks(), (kind, k, other_tasks())


@pytest.mark.parametrize("kind", ["cancel", "eof"])
def test_stdio_injection_at_every_await(kind):
    async def go():
        for k in POINTS:
            await _stdio_case(kind, k)

    run(go())


def test_stdio_call_and_cancel_in_one_write():
    """Issue: both lines in one write left the id in flight for good (the next use of it 409)."""

    async def go():
        p = Pipe()
        p.send(initialize())
        await p.answer(0)
        p.send(call(), cancel())
        await settle()
        p.send(call())
        reply = await p.answer(1)
        assert reply.get("result", {}).get("content", [{}])[0].get("text") == "stepped", p.out
        await p.close()
        assert p.session.idle()

    run(go())
