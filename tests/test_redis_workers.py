"""Several worker processes sharing 2025-11-25 sessions through a real ``redis-server``: the
official ``mcp`` client with its calls spread over the workers (a round-robin balancer in the
client), a duplicate id refused across workers, sequential reuse, the probe against
``serve --workers``.  The faults and the load are in ``test_redis_faults.py``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from support.redis_workers import REDIS_SERVER, Pool, RoundRobin, Serve
from support.sessions import ACCEPT as H
from support.sessions import initialize

pytestmark = pytest.mark.skipif(
    not __import__("os").path.exists(REDIS_SERVER), reason="redis-server is not installed"
)

INIT = initialize(capabilities={"elicitation": {}})


@pytest.fixture(scope="module")
def workers(redis):
    """Three single-worker servers, one port each, on one Redis (so a test can pick the worker
    of each request)."""
    pool = Pool(3, "--redis", redis.url, "--lease-ms", "1500")
    try:
        yield pool
    finally:
        pool.stop()


def call(rid, name, args, token=None):
    params = {"name": name, "arguments": args}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def events(text):
    """The JSON-RPC messages of an SSE body (or a JSON one)."""
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [
        json.loads(line[5:])
        for line in text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


def session(client, url):
    r = client.post(url, headers=H, json=INIT)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    h = {**H, "mcp-session-id": sid}
    assert (
        client.post(
            url, headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        ).status_code
        == 202
    )
    return sid, h


def registry_keys(redis, sid=None):
    pattern = f"mcpi:{{{sid}}}:*" if sid else "mcpi:*"
    return sorted(k.decode() for k in redis.client().keys(pattern))


async def _official(urls, ports, redis):
    """The official client in legacy mode, each HTTP request sent to the next worker."""
    rr = RoundRobin(ports)
    http = httpx2.AsyncClient(transport=rr, timeout=httpx2.Timeout(30.0))
    progress, asked, logs = [], [], []

    async def on_progress(p, total, message):
        progress.append((p, message))

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def on_log(params):
        logs.append(params.data)

    client = Client(
        streamable_http_client(urls[0], http_client=http),
        mode="legacy",
        elicitation_callback=on_elicit,
        logging_callback=on_log,
    )
    async with client:
        sid = client.session._session_id if hasattr(client.session, "_session_id") else None
        tools = await client.list_tools()
        assert {"slow", "ask", "echo"} <= {t.name for t in tools.tools}
        res = await client.call_tool(
            "slow", {"label": "P", "steps": 3, "delay": 0.02}, progress_callback=on_progress
        )
        assert res.content[0].text == "done:P"
        assert [p for p, _ in progress] == [1, 2, 3] and all("P" in m for _, m in progress)
        for k in range(2):
            res = await client.call_tool("ask", {"label": f"Q{k}", "delay": 0.01})
            assert res.content[0].text == f"ask:Q{k}:accept"
        assert len(asked) == 2
        # a cancel: the call is cut short by the caller; the cancel goes to another worker
        with pytest.raises(Exception):  # noqa: B017 - the call is cancelled, how it ends is the client's
            await asyncio.wait_for(
                client.call_tool("slow", {"label": "C", "steps": 100, "delay": 0.05}), 0.6
            )
        # the owning worker cancelled it: its claim is released long before the 5 s it would run
        store = redis.client()
        for _ in range(100):
            if not store.keys("mcpi:*:inflight:*"):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the cancelled call still holds its claim")
        res = await client.call_tool("echo", {"text": "after"})
        assert res.content[0].text == "after"
    await http.aclose()
    return rr.served, sid


def test_official_client_spread_over_workers(redis, workers):
    urls = [w.url for w in workers]
    served, _ = asyncio.run(_official(urls, [w.port for w in workers], redis))
    by_worker = {w for _, w in served if w != "?"}
    assert len(by_worker) == 3, served
    # each elicitation's answer reached another worker than the call that asked
    calls = [(i, w) for i, (what, w) in enumerate(served) if what == "tools/call"]
    answers = [(i, w) for i, (what, w) in enumerate(served) if what == "answer"]
    assert len(answers) == 2
    for i, w in answers:
        asked_on = [cw for ci, cw in calls if ci < i][-1]
        assert asked_on != w, served
    # the cancel reached another worker than the call it cancels, and was routed to it
    k = next(i for i, (what, _) in enumerate(served) if what == "notifications/cancelled")
    call_worker = [w for what, w in served[:k] if what == "tools/call"][-1]
    assert served[k][1] != call_worker, served
    # the session ended on DELETE: nothing of it is left in Redis
    assert any(what == "DELETE" for what, _ in served), served
    assert registry_keys(redis) == []


@pytest.mark.slow
def test_duplicate_refused_across_workers_and_sequential_reuse(redis, workers):
    a, b, c = (w.url for w in workers)
    with httpx.Client(timeout=30) as client:
        sid, h = session(client, a)
        with client.stream(
            "POST",
            a,
            headers=h,
            json=call(7, "slow", {"label": "A", "steps": 6, "delay": 0.1}, "ta"),
        ) as first:
            assert first.status_code == 200
            owner = first.headers["mcp-inflight-worker"]
            dup = client.post(b, headers=h, json=call(7, "echo", {"text": "dup"}))
            assert dup.status_code == 409, dup.text
            body = dup.json()
            assert body["id"] is None and body["error"]["code"] == -32600
            assert body["error"]["data"] == {"id": 7}
            assert dup.headers["mcp-inflight-worker"] != owner
            typed = client.post(c, headers=h, json=call("7", "echo", {"text": "string id"}))
            assert typed.status_code == 200 and "string id" in typed.text
            ping = client.post(c, headers=h, json={"jsonrpc": "2.0", "id": 7, "method": "ping"})
            assert ping.status_code == 409
            msgs = events(first.read().decode())
        assert msgs[-1]["id"] == 7 and msgs[-1]["result"]["content"][0]["text"] == "done:A"
        assert {
            m["params"]["progressToken"]
            for m in msgs
            if m.get("method") == "notifications/progress"
        } == {"ta"}
        again = client.post(b, headers=h, json=call(7, "echo", {"text": "reused"}))
        assert (
            again.status_code == 200
            and events(again.text)[-1]["result"]["content"][0]["text"] == "reused"
        )
        assert [k for k in registry_keys(redis, sid) if ":inflight:" in k] == []
        assert client.delete(c, headers=h).status_code == 200
        for url in (a, b, c):
            gone = client.post(url, headers=h, json=call(8, "echo", {"text": "x"}))
            assert gone.status_code == 404
        assert registry_keys(redis, sid) == []


@pytest.mark.slow
def test_probe_against_serve_workers_is_clean(redis):
    server = Serve("--workers", "3", "--redis", redis.url, workers=3)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "mcp_inflight", "probe", server.url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert "CLEAN: no defect class found" in out.stdout, out.stdout
        # a worker killed is started again; the port is served all along
        first = next(iter(server.workers))
        os.kill(first, signal.SIGKILL)
        server.wait_for(rf"worker {first} ended")
        deadline = time.monotonic() + 10
        while len(server.workers) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.workers) == 4, server.text()
        with httpx.Client(timeout=10) as client:
            sid, h = session(client, server.url)
            assert client.delete(server.url, headers=h).status_code == 200
    finally:
        server.stop()
    assert server.proc.returncode == 0, server.text()
    assert [k for k in registry_keys(redis) if ":inflight:" in k or ":waiter:" in k] == []


def sse_events(lines):
    """(id, message) of each SSE event with data, as the lines come."""
    eid = None
    for line in lines:
        if line.startswith("id:"):
            eid = line[3:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
            yield eid, (json.loads(data) if data else None)


@pytest.mark.slow
def test_stream_resumed_on_another_worker(redis, workers):
    """A POST stream's connection drops; the client resumes it with ``Last-Event-ID`` on
    another worker (replayed from Redis, then its later events as they are kept) and on the
    worker that runs it (from memory): every event once, in order, the response at the end."""
    a, b, c = (w.url for w in workers)
    with httpx.Client(timeout=30) as client:
        sid, h = session(client, a)
        # after two progress events on another worker and on its own; after the priming
        # event alone (nothing kept yet) on a third
        for resume_on, after in ((b, 2), (a, 2), (c, 0)):
            body = call(11, "slow", {"label": "R", "steps": 8, "delay": 0.1}, "tr")
            seen = []
            with client.stream("POST", a, headers=h, json=body) as r:
                events_in = sse_events(r.iter_lines())
                for eid, msg in events_in:
                    seen.append((eid, msg))
                    if after == 0:
                        break
                    if msg and msg.get("method") == "notifications/progress":
                        if msg["params"]["progress"] == after:
                            break
            # the connection is gone; the handler goes on and its events are kept
            last = seen[-1][0]
            get_h = {**h, "last-event-id": last, "accept": "text/event-stream"}
            with client.stream("GET", resume_on, headers=get_h) as r:
                assert r.status_code == 200
                rest = list(sse_events(r.iter_lines()))
            ids = [e for e, _ in seen + rest]
            assert len(ids) == len(set(ids)), ids
            msgs = [m for _, m in seen + rest if m]
            progress = [
                m["params"]["progress"] for m in msgs if m.get("method") == "notifications/progress"
            ]
            assert progress == list(range(1, 9)), progress
            assert msgs[-1]["id"] == 11 and msgs[-1]["result"]["content"][0]["text"] == "done:R"
        bad = {**h, "last-event-id": "nosuch~p1.1", "accept": "text/event-stream"}
        assert client.get(b, headers=bad).status_code == 400
        assert client.delete(a, headers=h).status_code == 200
    assert registry_keys(redis, sid) == []
