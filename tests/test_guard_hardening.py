"""Regressions of the guard found by hostile input (each failed before its fix): bodies too large
or incomplete, deep JSON, 2026-07-28 POSTs keyed as the SDK keys them, the SDK's session expiry,
typed ids on stdio, cancels for requests waiting at the guard; and hypothesis over raw bytes."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_guard import _raw_session, _Stdio

from mcp_inflight import probe as P
from mcp_inflight.guard import guard
from mcp_inflight.impl import sse
from support.servers import sdk_server, stop


class Inner:
    """A stand-in for the SDK's app: records what reached it; a request whose ``params.gate``
    names a gate stays inside until it opens, then answers on its SSE stream."""

    def __init__(self) -> None:
        self.seen: list = []
        self.inside = 0
        self.most_inside = 0
        self.gates: dict = {}

    async def __call__(self, scope, receive, send):
        m = await receive()
        body = m.get("body", b"")
        self.seen.append(body)
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            msg = None
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        try:
            gate = msg.get("params", {}).get("gate") if isinstance(msg, dict) else None
            if gate is not None:
                await self.gates.setdefault(gate, asyncio.Event()).wait()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            if isinstance(msg, dict) and "id" in msg:
                out = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
                await send(
                    {
                        "type": "http.response.body",
                        "body": sse.encode(json.dumps(out).encode()),
                        "more_body": True,
                    }
                )
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.inside -= 1


class Post:
    def __init__(
        self, app, parts: list[bytes], headers: dict, then_disconnect: bool = False
    ) -> None:
        self.parts = list(parts)
        self.taken = 0
        self.sent: list = []
        self.then_disconnect = then_disconnect
        hdrs = [(k.encode(), v.encode()) for k, v in headers.items()]
        self.task = asyncio.ensure_future(
            app({"type": "http", "method": "POST", "headers": hdrs}, self.receive, self.send)
        )

    async def receive(self):
        if self.parts:
            self.taken += 1
            body = self.parts.pop(0)
            return {
                "type": "http.request",
                "body": body,
                "more_body": bool(self.parts) or self.then_disconnect,
            }
        if self.then_disconnect:
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()

    async def send(self, m):
        self.sent.append(m)

    @property
    def status(self):
        return self.sent[0]["status"] if self.sent else None

    def messages(self):
        return sse.messages(b"".join(m.get("body", b"") for m in self.sent[1:]))


S1 = {"mcp-session-id": "s1"}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def req(rid, gate=None) -> bytes:
    params = {} if gate is None else {"gate": gate}
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    ).encode()


def test_body_limit_refuses_while_streaming_and_large_content_length_unread():
    async def go():
        inner = Inner()
        g = guard(inner, max_body=1 << 20)
        chunk = b" " * (64 * 1024)
        p = Post(g, [chunk] * 100, S1)  # 6.4 MiB, no Content-Length
        await p.task
        assert p.status == 413 and p.taken <= 17 and inner.seen == []  # stopped at the limit
        q = Post(g, [chunk] * 100, {**S1, "content-length": str(200 * 1024 * 1024)})
        await q.task
        assert q.status == 413 and q.taken == 0 and inner.seen == []  # refused unread

    run(go())


def test_incomplete_body_is_not_forwarded():
    async def go():
        inner = Inner()
        g = guard(inner)
        p = Post(g, [req(1)[:10]], S1, then_disconnect=True)
        await p.task
        assert inner.seen == [] and g.sessions == {}

    run(go())


def test_deep_json_is_answered_as_the_sdk_would_never_forwarded():
    async def go():
        inner = Inner()
        g = guard(inner)
        deep = (
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 2000 + b"]" * 2000 + b"}"
        )
        p = Post(g, [deep], S1)
        await p.task
        assert inner.seen == [] and p.status == 400
        assert p.messages() == [] and b"-32700" in p.sent[1]["body"]

    run(go())


def test_modern_posts_pass_through_whatever_their_session_header():
    async def go():
        inner = Inner()
        g = guard(inner)
        h = {**S1, "mcp-protocol-version": "2026-07-28"}
        a = Post(g, [req(9, gate="a")], h)
        b = Post(g, [req(9, gate="b")], h)
        for _ in range(20):
            await asyncio.sleep(0)
        assert inner.most_inside == 2 and g.sessions == {}  # both served, as by the SDK
        inner.gates["a"] = inner.gates.get("a") or asyncio.Event()
        for k in ("a", "b"):
            inner.gates.setdefault(k, asyncio.Event()).set()
        await asyncio.gather(a.task, b.task)
        assert a.status == b.status == 200

    run(go())


def test_cancel_for_a_request_waiting_at_the_guard_is_not_held():
    async def go():
        inner = Inner()
        g = guard(inner)
        first = Post(g, [req(7, gate="seven")], S1)
        for _ in range(10):
            await asyncio.sleep(0)
        waiting = Post(g, [req("07")], S1)  # admitted, waits for the SDK's slot of 7
        for _ in range(10):
            await asyncio.sleep(0)
        assert len(inner.seen) == 1
        cancel = json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "07"}}
        ).encode()
        c = Post(g, [cancel], S1)
        await asyncio.wait_for(c.task, 2)  # answered at once, while 7 still runs
        assert c.status == 202
        await asyncio.wait_for(waiting.task, 2)
        assert waiting.messages() == [
            {
                "jsonrpc": "2.0",
                "id": "07",
                "error": {"code": -32800, "message": "Request cancelled"},
            }
        ]
        assert len(inner.seen) == 1  # "07" never reached the SDK
        inner.gates["seven"].set()
        await first.task
        assert g.sessions == {} and g.in_sdk == {}

    run(go())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
            max_leaves=10,
        ).map(lambda v: json.dumps(v).encode()),
        st.builds(
            lambda rid, method: json.dumps(
                {"jsonrpc": "2.0", "id": rid, "method": method}
            ).encode(),
            st.one_of(st.integers(), st.text(max_size=4), st.none(), st.floats(allow_nan=False)),
            st.sampled_from(["ping", "tools/call", "notifications/cancelled"]),
        ),
    )
)
def test_guard_never_raises_and_stays_healthy(body):
    async def go():
        inner = Inner()
        g = guard(inner)
        p = Post(g, [body], S1)
        await asyncio.wait_for(p.task, 5)
        assert p.status in (200, 202, 400, 409, 413), p.sent
        ok = Post(g, [req(123456)], S1)  # a healthy guard afterwards
        await asyncio.wait_for(ok.task, 5)
        assert ok.status == 200 and ok.messages()[-1]["id"] == 123456
        assert g.sessions == {} and g.in_sdk == {}

    run(go())


# --- against the official SDK in real processes -----------------------------------------------


def _ask_then_leave(url) -> tuple[httpx.Client, dict]:
    c, h = _raw_session(url)
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"label": "gone", "delay": 0.0}},
    }
    with httpx.Client(timeout=10) as one:
        with one.stream("POST", url, headers=h, json=call) as r:
            d = sse.Decoder()
            for chunk in r.iter_bytes():
                if any(e.data and "elicitation/create" in e.data for e in d.feed(chunk)):
                    break  # the elicitation came: the client goes away
    return c, h


def _expires(url, timeout: float) -> bool:
    c, h = _ask_then_leave(url)
    try:
        for _ in range(3):  # each ping restarts the SDK's idle countdown: wait past it
            time.sleep(timeout + 1.5)
            r = c.post(url, headers=h, json={"jsonrpc": "2.0", "id": 9, "method": "ping"})
            if r.status_code == 404:
                return True
        return False
    finally:
        c.close()


@pytest.mark.slow  # several seconds of real time; CI runs it with the slow tests
def test_the_sdks_session_expiry_still_works_behind_the_guard():
    for flags in ((), ("--guard",)):
        proc, url = sdk_server("--idle-timeout", "1", *flags)
        try:
            assert _expires(url, 1.0), flags
        finally:
            stop(proc)


def test_guarded_sdk_deep_json_is_400_as_bare(sdk_guarded, sdk_bare):
    deep = '{"jsonrpc":"2.0","id":1,"method":"ping","params":' + "[" * 2000 + "]" * 2000 + "}"
    for url in (sdk_bare, sdk_guarded):
        c, h = _raw_session(url)
        r = c.post(url, headers=h, content=deep)
        assert r.status_code == 400, (url, r.status_code, r.text[:200])
        c.close()


def test_stdio_guard_serialises_typed_ids_the_sdk_conflates():
    """A 7 and B "7", then a cancel for 7: A is cancelled, B answered (before: neither was)."""
    s = _Stdio(guarded=True)
    try:
        s.handshake()
        for rid, token in ((7, "a"), ("7", "b")):
            s.call_slow(rid, token, 3)
        assert s.until(lambda m: P.progress_token(m) == "a")
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
        assert s.until(lambda m: m.get("id") == "7" and "result" in m, timeout=10), s.seen
        assert not any(m.get("id") == 7 and "result" in m for m in s.seen)
        assert [m for m in s.seen if P.progress_token(m) == "b"]  # B ran, after A left
        s.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",  # 7 is free again
                "params": {"name": "echo", "arguments": {"text": "again"}},
            }
        )
        assert s.until(lambda m: m.get("id") == 7 and "result" in m)
    finally:
        s.close()


def test_stdio_guard_drops_a_cancelled_request_still_waiting_for_its_slot():
    """7 runs; "07" (the same SDK slot) waits at the guard; a cancel for "07" drops it there: it
    never runs, 7 is not touched (the SDK would read the cancel's "07" as 7), "07" is free."""
    s = _Stdio(guarded=True)
    try:
        s.handshake()
        s.call_slow(7, "a", 4)
        assert s.until(lambda m: P.progress_token(m) == "a")
        s.call_slow("07", "b", 1)
        s.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "07"}}
        )
        assert s.until(lambda m: m.get("id") == 7 and "result" in m), s.seen
        s.send(
            {
                "jsonrpc": "2.0",
                "id": "07",
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "again"}},
            }
        )
        assert s.until(lambda m: m.get("id") == "07" and "result" in m), s.seen
        assert not [m for m in s.seen if P.progress_token(m) == "b"]  # the dropped one never ran
        assert [m["result"]["content"][0]["text"] for m in s.seen if m.get("id") == "07"] == [
            "again"
        ]
    finally:
        s.close()
