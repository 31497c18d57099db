"""Regressions of the second hardening round (each failed before its fix): what a client can
make a single server process keep is bounded.  Real uvicorn servers on loopback ports."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import httpx
import pytest

from support.http_server import build_server, start
from support.sessions import INITIALIZED, init_params

MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _initialize(url: str, capabilities: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params()}
    body["params"]["capabilities"] = capabilities
    return httpx.post(url, headers=ACCEPT, content=json.dumps(body), timeout=30)


def _session(url: str) -> dict:
    r = _initialize(url, {})
    h = {
        **ACCEPT,
        "Mcp-Session-Id": r.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    assert httpx.post(url, headers=h, json=INITIALIZED).status_code == 202
    return h


# --- item 3: what initialize keeps ------------------------------------------------------------


def test_initialize_capabilities_are_bounded_and_kept_compact():
    """A ``capabilities`` of many small objects (about 24 times its size once parsed) is refused
    over the bound; one under it is kept as its compact JSON text."""
    srv = start(event_store=None)
    try:
        many = {"experimental": {"x": {"items": [{} for _ in range(60_000)]}}}  # ~180 KB
        r = _initialize(srv.url, many)
        assert r.status_code == 200 and "mcp-session-id" not in r.headers
        assert (
            r.json()["error"]["code"] == -32602 and "capabilities" in r.json()["error"]["message"]
        )
        assert srv.app.sessions == {}
        small = {"elicitation": {"form": {}}, "roots": {"listChanged": True}}
        r = _initialize(srv.url, small)
        sid = r.headers["mcp-session-id"]
        session = srv.app.sessions[sid]
        assert session.client_capabilities == small
        assert isinstance(session._client_capabilities, bytes)
    finally:
        srv.stop()


def test_initialize_capabilities_bound_is_configurable():
    server = build_server()
    server.max_client_capabilities = 64
    srv = start(server, event_store=None)
    try:
        r = _initialize(srv.url, {"experimental": {"x": {"text": "y" * 100}}})
        assert r.json()["error"]["code"] == -32602
        assert "mcp-session-id" in _initialize(srv.url, {}).headers
    finally:
        srv.stop()


# --- item 4: a client that does not read its stream ---------------------------------------------


def _flood_server():
    server = build_server()
    server.flood_state = {"sent": 0, "done": False, "cancelled": False}

    @server.tool()
    async def flood(ctx, count: int = 20_000, size: int = 1000) -> str:
        state = server.flood_state
        try:
            for n in range(count):
                await ctx.progress(n, count, "x" * size)
                state["sent"] += size
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        finally:
            state["done"] = True
        return "flooded"

    return server


def _post_without_reading(url: str, headers: dict, body: dict) -> socket.socket:
    """A POST on a raw socket with a small receive buffer, whose response is not read."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    s.connect((host, int(port)))
    data = json.dumps(body).encode()
    head = f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {len(data)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    s.sendall(head.encode() + data)
    return s


def _read_to_end(s: socket.socket, timeout: float) -> tuple[int, bool]:
    """(bytes read, whether the server closed the connection) within ``timeout``."""
    s.settimeout(0.5)
    total, deadline = 0, time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(1 << 20)
        except TimeoutError:
            continue
        if not chunk:
            return total, True
        total += len(chunk)
    return total, False


@pytest.mark.parametrize("revision", ["2025-11-25", MODERN])
def test_a_slow_reader_is_cut_off_at_the_stream_buffer(revision):
    """20 MB of progress for a client that reads nothing: the server keeps at most the stream's
    buffer, then closes the connection (2026-07-28: the request is cancelled, as on a closed
    stream).  Before: every message was queued, and all of it was delivered later."""
    server = _flood_server()
    srv = start(server, event_store=None, max_stream_buffer=256 * 1024)
    try:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "flood", "arguments": {}, "_meta": {"progressToken": "f"}},
        }
        if revision == MODERN:
            headers = {**ACCEPT, "MCP-Protocol-Version": MODERN}
            body["params"]["_meta"].update(MODERN_META)
        else:
            headers = _session(srv.url)
        s = _post_without_reading(srv.url, headers, body)
        deadline = time.monotonic() + 60
        while not server.flood_state["done"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.flood_state["done"]
        got, closed = _read_to_end(s, 20)
        s.close()
        assert closed, "the server never closed the slow reader's connection"
        assert got < 8 * 1024 * 1024, got  # kernel buffers + the stream's buffer, not 20 MB
        assert srv.app.slow_readers_cut == 1
        if revision == MODERN:
            assert server.flood_state["cancelled"]
        else:  # 2025-11-25: a closed stream is not a cancel; the handler ran to its end
            assert server.flood_state["sent"] == 20_000 * 1000
        deadline = time.monotonic() + 10
        while srv.app.live_requests() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.app.live_requests() == 0
    finally:
        srv.stop()


def test_a_reader_that_keeps_up_is_never_cut_off():
    server = _flood_server()
    srv = start(server, event_store=None, max_stream_buffer=64 * 1024)
    try:
        h = _session(srv.url)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "flood",
                "arguments": {"count": 2000, "size": 100},
                "_meta": {"progressToken": "f"},
            },
        }
        with httpx.Client(timeout=30) as c:
            r = c.post(srv.url, headers=h, json=body)
        assert r.status_code == 200 and "flooded" in r.text
        assert r.text.count("notifications/progress") == 2000
        assert srv.app.slow_readers_cut == 0
    finally:
        srv.stop()


# --- item 5: handlers left running after their connection went away ---------------------------


def _hold_then_leave(url: str, headers: dict, rid: int, label: str) -> None:
    """A ``hold`` call whose client goes away after its first progress."""
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {
            "name": "hold",
            "arguments": {"label": label, "timeout": 60},
            "_meta": {"progressToken": label},
        },
    }
    with httpx.Client(timeout=10) as c:
        with c.stream("POST", url, headers=headers, json=body) as r:
            for line in r.iter_lines():
                if "notifications/progress" in line:
                    break


@pytest.mark.parametrize("store", [None, "memory"])
def test_detached_handlers_are_bounded_in_number_and_time(store):
    """2025-11-25: a disconnect is not a cancel, so a handler runs on without its client.  At
    most ``max_detached`` do so at once (the next is cancelled at once), each for at most
    ``detached_timeout`` seconds.  Before: all three held for their full minute."""
    server = build_server()
    srv = start(server, event_store=store, max_detached=2, detached_timeout=1.0)
    try:
        h = _session(srv.url)
        t0 = time.monotonic()
        for n, label in enumerate(("d1", "d2", "d3"), start=1):
            _hold_then_leave(srv.url, h, n, label)
            if n == 2:
                deadline = time.monotonic() + 5
                while len(srv.app.detached) < 2 and time.monotonic() < deadline:
                    time.sleep(0.02)
        deadline = time.monotonic() + 5
        while ("cancelled", "d3") not in server.events and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ("cancelled", "d3") in server.events  # over the number: cancelled at once
        assert ("cancelled", "d1") not in server.events or time.monotonic() - t0 >= 1.0
        deadline = time.monotonic() + 10
        while len(server.events) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(server.events) == [("cancelled", x) for x in ("d1", "d2", "d3")]
        assert srv.app.detached == {} and srv.app.detached_cancelled == 3
        deadline = time.monotonic() + 5
        while srv.app.live_requests() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.app.live_requests() == 0
        # the id is free again
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert httpx.post(srv.url, headers=h, json=body, timeout=10).status_code == 200
    finally:
        srv.stop()


def test_a_handler_that_finishes_leaves_the_detached_record():
    server = build_server()
    srv = start(server, event_store=None, max_detached=1, detached_timeout=30.0)
    try:
        h = _session(srv.url)
        _hold_then_leave(srv.url, h, 1, "e1")
        deadline = time.monotonic() + 5
        while len(srv.app.detached) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(srv.app.detached) == 1
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "release", "arguments": {"label": "e1"}},
        }
        assert httpx.post(srv.url, headers=h, json=body, timeout=10).status_code == 200
        deadline = time.monotonic() + 5
        while srv.app.detached and time.monotonic() < deadline:
            time.sleep(0.02)
        assert srv.app.detached == {} and ("done", "e1") in server.events
        assert srv.app.detached_cancelled == 0
    finally:
        srv.stop()


# --- item 6: one client's share of the used-requestState record -------------------------------


def _ask_round(c: httpx.Client, url: str, rid: int, label: str) -> dict:
    """A 2026-07-28 ``ask`` call, then its retry with the state and the answer: the retry's
    JSON-RPC reply."""
    meta = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    headers = {**ACCEPT, "MCP-Protocol-Version": MODERN}
    params: dict = {"name": "ask", "arguments": {"label": label}, "_meta": meta}
    first = c.post(
        url,
        headers=headers,
        json={"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params},
    )
    result = _last(first)["result"]
    assert result["resultType"] == "input_required", result
    (key,) = result["inputRequests"]
    params = {
        **params,
        "requestState": result["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
    }
    retry = c.post(
        url,
        headers=headers,
        json={"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params},
    )
    return _last(retry)


def _last(r: httpx.Response) -> dict:
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        from mcp_inflight.impl import sse

        return sse.messages(r.text)[-1]
    return r.json()


def test_one_client_cannot_fill_the_used_state_record_for_everyone():
    """A record of 20 used states, a share of 5 per client: the greedy client (127.0.0.1) is
    refused ``capacity`` after its 5th retry, and another client (127.0.0.2) still completes its
    rounds.  Before: the greedy client filled all 20 and everyone's retries were refused."""
    from mcp_inflight.impl.request_state import RequestStates

    server = build_server()
    server.request_states = RequestStates(max_live=20, max_live_per_client=5)
    srv = start(server, event_store=None)
    greedy = httpx.Client(timeout=10, transport=httpx.HTTPTransport(local_address="127.0.0.1"))
    other = httpx.Client(timeout=10, transport=httpx.HTTPTransport(local_address="127.0.0.2"))
    try:
        refused = 0
        for n in range(25):
            reply = _ask_round(greedy, srv.url, n, f"g{n}")
            if "error" in reply:
                assert reply["error"]["data"] == {"reason": "capacity"}
                refused += 1
            else:
                assert "ask:g" in json.dumps(reply["result"])
        assert refused == 20
        for n in range(5):
            reply = _ask_round(other, srv.url, 100 + n, f"o{n}")
            assert "ask:o" in json.dumps(reply.get("result")), reply
    finally:
        greedy.close()
        other.close()
        srv.stop()


# --- log lines: values from the wire escaped and bounded -----------------------------------------


def test_online_check_log_lines_escape_and_bound_wire_values(caplog):
    """A session id from the wire with a line break and 5,000 characters: one log line, under
    a few hundred characters (before: the id went into the line as it came)."""
    import logging

    from mcp_inflight.trace.online import Monitor

    forged = "s\nmcp-inflight serve: FORGED LINE " + "x" * 5000
    with caplog.at_level(logging.WARNING, logger="mcp_inflight.trace"):
        Monitor().gap(sessions=[forged], events=1)
    (record,) = [r for r in caplog.records if r.name == "mcp_inflight.trace"]
    line = record.getMessage()
    assert "\n" not in line and len(line) < 300 and "FORGED" in line
