"""The guard (``mcp_inflight.guard``) in front of the official SDK: over real HTTP and stdio
(the SDK's server in a real process), and in-process on the ASGI interface."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from mcp_inflight import probe as P
from mcp_inflight.impl import sse
from support import oracle
from support.servers import SDK_SERVER, sdk_server
from support.sessions import INITIALIZED, initialize

# --- the guard in front of the official SDK, over real HTTP --------------------------------------


def _raw_session(url):
    import httpx

    c = httpx.Client(timeout=20)
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = c.post(
        url,
        headers=h,
        json=initialize(version="0"),
    )
    h["Mcp-Session-Id"] = r.headers["mcp-session-id"]
    h["MCP-Protocol-Version"] = "2025-11-25"
    assert c.post(url, headers=h, json=INITIALIZED).status_code == 202
    return c, h


def _sse_messages(text):
    return sse.messages(text)


def test_guarded_sdk_reuses_ids_in_sequence_and_refuses_what_it_cannot_carry(sdk_guarded):
    c, h = _raw_session(sdk_guarded)
    echo = {"name": "echo", "arguments": {"text": "hi"}}
    for _ in range(5):  # one id, five times in a row
        r = c.post(
            sdk_guarded,
            headers=h,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": echo},
        )
        assert r.status_code == 200
        msgs = _sse_messages(r.text)
        assert msgs[-1]["id"] == 1 and msgs[-1]["result"]["content"][0]["text"] == "hi"
    for bad, why in (
        (1.5, "string or an integer"),
        (None, "string or an integer"),
        ("_GET_stream", "standalone stream"),
    ):
        r = c.post(
            sdk_guarded,
            headers=h,
            json={"jsonrpc": "2.0", "id": bad, "method": "tools/call", "params": echo},
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == -32600 and why in r.text
    r = c.post(
        sdk_guarded,
        headers=h,
        json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
    )
    assert r.status_code == 202  # a cancel for an unknown id is ignored
    c.close()


def test_official_client_works_through_the_guard(sdk_guarded):
    import anyio
    from mcp import Client
    from mcp_types import ElicitResult

    progress = []

    async def on_elicit(context, params):
        return ElicitResult(action="accept", content={"ok": True})

    async def main():
        async with Client(sdk_guarded, mode="legacy", elicitation_callback=on_elicit) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"slow", "ask", "echo"} <= names

            async def on_progress(p, total, message):
                progress.append(p)

            r = await client.call_tool(
                "slow", {"label": "x", "steps": 3, "delay": 0.05}, progress_callback=on_progress
            )
            assert r.content[0].text == "done:x"
            r = await client.call_tool("ask", {"label": "y", "delay": 0.05})
            assert r.content[0].text == "ask:y:accept"
            for n in range(3):
                r = await client.call_tool("echo", {"text": str(n)})
                assert r.content[0].text == str(n)

    anyio.run(main)
    assert progress == [1, 2, 3]


# --- stdio: the same model around the SDK's stdio streams (a real subprocess) -------------------


class _Stdio:
    def __init__(self, guarded):
        import queue
        import threading

        argv = [sys.executable, str(SDK_SERVER), "--stdio"] + (["--guard"] if guarded else [])
        o = None
        if guarded:  # the guard's wire trace, checked by the model (support/oracle.py)
            argv, o = oracle.traced_argv(argv, "guarded SDK on stdio")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        if o is not None:
            oracle.watch(o, self.proc)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def until(self, pred, timeout=10.0):
        import queue

        deadline = time.monotonic() + timeout
        while not any(pred(m) for m in self.seen):
            try:
                self.seen.append(self.lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                return False
        return True

    def handshake(self):
        """Initialize (id 0), wait for its answer, then send notifications/initialized."""
        self.send(initialize(version="0"))
        assert self.until(lambda m: m.get("id") == 0)
        self.send(INITIALIZED)

    def call_slow(self, rid, token, steps):
        """Call the ``slow`` tool under id ``rid`` with progress token ``token``."""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {
                    "name": "slow",
                    "arguments": {"label": token, "steps": steps, "delay": 0.2},
                    "_meta": {"progressToken": token},
                },
            }
        )

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


def _stdio_duplicate_then_cancel(guarded):
    s = _Stdio(guarded)
    try:
        s.handshake()

        def call(rid, token, steps=5):
            s.call_slow(rid, token, steps)

        def progress(token):
            return [m for m in s.seen if P.progress_token(m) == token]

        call(1, "a")
        assert s.until(lambda m: P.progress_token(m) == "a")
        call(1, "b")  # a duplicate of the in-flight id 1
        s.until(lambda m: P.progress_token(m) == "b" or (m.get("id", 0) is None), timeout=2)
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        # let both run on: until a result for id 1 comes, or long enough for "a" to have ended
        s.until(lambda m: m.get("id") == 1 and "result" in m, timeout=1.5)
        return s, progress("a"), progress("b")
    except BaseException:
        s.close()
        raise


def test_stdio_guard_refuses_the_duplicate_and_the_cancel_hits_the_first():
    s, a, b = _stdio_duplicate_then_cancel(guarded=True)
    try:
        refusals = [m for m in s.seen if "error" in m and m.get("id") is None]
        assert len(refusals) == 1 and refusals[0]["error"]["code"] == -32600
        assert refusals[0]["error"]["data"] == {"id": 1}
        assert b == []  # the duplicate never ran
        assert 1 <= len(a) < 5  # the cancel stopped the one it meant
        assert not any(m.get("id") == 1 and "result" in m for m in s.seen)
        s.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",  # id 1 is free again
                "params": {"name": "echo", "arguments": {"text": "again"}},
            }
        )
        assert s.until(lambda m: m.get("id") == 1 and "result" in m)
    finally:
        s.close()


def test_stdio_bare_sdk_lets_the_cancel_hit_the_duplicate():
    s, a, b = _stdio_duplicate_then_cancel(guarded=False)
    try:
        assert not any("error" in m and m.get("id") is None for m in s.seen)
        assert any(m.get("id") == 1 and "result" in m for m in s.seen)
        assert len(a) == 5  # the request the cancel meant ran to the end
        assert len(b) < 5  # the duplicate was cancelled instead
    finally:
        s.close()


def test_guard_keeps_an_id_in_flight_after_its_client_went_away(sdk_guarded):
    # 2025-11-25: a disconnect is not a cancel.  The handler runs on, so its id stays in flight
    # (a new request under it is refused) until the handler answers; then it is free again.
    import httpx

    c, h = _raw_session(sdk_guarded)
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {
            "name": "slow",
            "arguments": {"label": "gone", "steps": 4, "delay": 0.3},
            "_meta": {"progressToken": "gone"},
        },
    }
    t0 = time.monotonic()
    with httpx.Client(timeout=10) as one:
        with one.stream("POST", sdk_guarded, headers=h, json=call) as r:
            for line in r.iter_lines():
                if "notifications/progress" in line:
                    break  # first progress seen: go away
    time.sleep(0.1)
    r = c.post(
        sdk_guarded,
        headers=h,
        json=dict(call, params=dict(call["params"], _meta={"progressToken": "x"})),
    )
    assert r.status_code == 409 and r.json()["error"]["data"] == {"id": 5}
    while time.monotonic() - t0 < 1.2 + 0.5:  # the abandoned handler's 4 x 0.3 s
        time.sleep(0.1)
    deadline = time.monotonic() + 5
    while True:
        r = c.post(
            sdk_guarded,
            headers=h,
            json={
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "ok"}},
            },
        )
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert (
        r.status_code == 200 and _sse_messages(r.text)[-1]["result"]["content"][0]["text"] == "ok"
    )
    c.close()


def test_guard_in_json_response_mode():
    # The SDK answers each POST with one JSON body: the id is released as that body goes out.
    import threading

    import httpx

    proc, url = sdk_server("--guard", "--json-response")
    try:
        c, h = _raw_session(url)
        slow = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"label": "j", "steps": 10, "delay": 0.3}},
        }
        first = {}
        t = threading.Thread(
            target=lambda: first.update(r=httpx.post(url, headers=h, json=slow, timeout=30))
        )
        t.start()
        # a JSON-response server shows nothing while the call runs: the duplicate goes 1 s in,
        # well inside the first call's 3 s even on a loaded machine
        time.sleep(1.0)
        r = c.post(url, headers=h, json=slow)
        assert r.status_code == 409 and r.json()["error"]["code"] == -32600
        t.join()
        assert (
            first["r"].status_code == 200
            and first["r"].json()["result"]["content"][0]["text"] == "done:j"
        )
        for n in range(3):
            r = c.post(
                url,
                headers=h,
                json={
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": str(n)}},
                },
            )
            assert r.status_code == 200 and r.json()["id"] == 3
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)


# --- the guard in-process, in front of a stand-in for the SDK's app ----------------------------


class StandIn:
    """An ASGI app that, like the SDK, writes a request's response on its SSE stream and only
    then cleans up: each request stays inside the app until its gate opens."""

    def __init__(self, respond_first=True):
        import asyncio

        self.log = []
        self.gates = {n: asyncio.Event() for n in (1, 2)}
        self.respond_first = respond_first

    async def __call__(self, scope, receive, send):
        body = json.loads((await receive())["body"])
        n = body["params"]["n"]
        self.log.append(("enter", n))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        msg = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}
        event = b"event: message\r\ndata: " + json.dumps(msg).encode() + b"\r\n\r\n"
        if self.respond_first:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await self.gates[n].wait()
        if not self.respond_first:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        self.log.append(("leave", n))
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def asgi_post(app, n, sent, rid=9):
    """One POST through ``app`` in session s1, as a task; what it sends lands in ``sent``."""
    import asyncio

    body = json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"n": n}}
    ).encode()
    first = [True]

    async def receive():
        if first[0]:
            first[0] = False
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()

    async def send(m):
        sent.append(m)

    scope = {"type": "http", "method": "POST", "headers": [(b"mcp-session-id", b"s1")]}
    return asyncio.ensure_future(app(scope, receive, send))


async def settle():
    import asyncio

    for _ in range(30):
        await asyncio.sleep(0)


def test_guard_releases_on_the_response_and_holds_the_next_one_until_the_sdk_let_go():
    # The client may reuse the id as soon as it sees the response: that POST is admitted at once
    # (no 409) but enters the app only after the first has left it (the SDK cleans up by id).
    import asyncio

    from mcp_inflight.guard import guard

    async def main():
        inner = StandIn()
        g = guard(inner)
        first, second = [], []
        r1 = asgi_post(g, 1, first)
        while not any(b"data:" in m.get("body", b"") for m in first):
            await asyncio.sleep(0)  # the client has seen A's response
        r2 = asgi_post(g, 2, second)
        await settle()
        assert second == [] and inner.log == [("enter", 1)]  # admitted, waiting for the app
        inner.gates[1].set()
        await r1
        await settle()
        assert inner.log[:3] == [("enter", 1), ("leave", 1), ("enter", 2)]
        assert second[0]["status"] == 200
        inner.gates[2].set()
        await r2
        assert g.sessions == {} and g.in_sdk == {}

    asyncio.run(main())


@pytest.mark.parametrize("design", ["atomic", "unguarded"])
def test_guard_decisions_come_from_the_model(monkeypatch, design):
    # The same guard on the model's unguarded design lets the duplicate through: the refusal
    # is the model's atomic design speaking (through the runtime core), not a rule of the guard.
    import asyncio

    from mcp_inflight.impl import guard as G
    from mcp_inflight.model import DESIGNS

    monkeypatch.setattr(G, "DESIGN", DESIGNS[design])

    async def main():
        inner = StandIn(respond_first=False)
        g = G.guard(inner)
        first, second = [], []
        r1 = asgi_post(g, 1, first)
        await settle()
        r2 = asgi_post(g, 2, second, rid=9)  # same id, while the first is in flight
        await settle()
        inner.gates[1].set()
        inner.gates[2].set()
        await asyncio.wait_for(asyncio.gather(r1, r2), 5)
        return second

    second = asyncio.run(main())
    if design == "atomic":
        assert second[0]["status"] == 409
        body = json.loads(b"".join(m.get("body", b"") for m in second[1:]))
        assert (
            body["id"] is None
            and body["error"]["code"] == -32600
            and body["error"]["data"] == {"id": 9}
        )
    else:
        assert second[0]["status"] == 200
