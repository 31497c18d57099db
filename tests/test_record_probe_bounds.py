"""Regressions of the recording proxy and the probe (each failed before its fix): the proxy
checks Host and Origin as a loopback server must (it forwards with the upstream's Host), bounds
a body in size and time, closes a connection whose headers are slow, forwards JSON nested too
deep to read (the upstream answers it); the probe bounds what it reads from a target.  Real
servers on loopback."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest

from mcp_inflight.probe import recording
from mcp_inflight.trace.format import Writer, read
from mcp_inflight.trace.record import Recorder
from support import http_server
from support.sessions import initialize

H = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = initialize()


@pytest.fixture(scope="module")
def upstream():
    srv = http_server.start()
    yield srv
    srv.stop()


def _proxy(upstream, tmp_path, **options):
    path = tmp_path / "t.jsonl"
    w = Writer(path)
    return http_server.Running(Recorder(upstream.url, w, **options)), w, path


def test_the_proxy_refuses_a_foreign_host_and_origin(upstream, tmp_path):
    """Before: the proxy put the upstream's Host on every request, so a DNS-rebinding page
    reached the upstream through it."""
    proxy, w, path = _proxy(upstream, tmp_path)
    try:
        port = proxy.port
        with httpx.Client(timeout=10) as c:
            r = c.post(proxy.url, headers={**H, "Host": f"evil.example:{port}"}, json=INIT)
            assert r.status_code == 421
            r = c.post(proxy.url, headers={**H, "Origin": "http://evil.example"}, json=INIT)
            assert r.status_code == 403
            r = c.post(proxy.url, headers=H, json=INIT)
            assert r.status_code == 200
    finally:
        proxy.stop()
        w.close()
    opened = [e for e in read(path) if e["kind"] == "open"]
    assert len(opened) == 1  # only the allowed one reached the upstream


def test_the_proxy_bounds_a_body_in_size(upstream, tmp_path):
    proxy, w, _ = _proxy(upstream, tmp_path, max_body=64 * 1024)
    try:
        big = json.dumps({**INIT, "params": {**INIT["params"], "pad": "x" * 100_000}})
        with httpx.Client(timeout=10) as c:
            assert c.post(proxy.url, headers=H, content=big).status_code == 413

            def chunks():  # no Content-Length: refused while it streams
                for _ in range(100):
                    yield b" " * 4096

            assert c.post(proxy.url, headers=H, content=chunks()).status_code == 413
    finally:
        proxy.stop()
        w.close()


def test_the_proxy_bounds_a_body_in_time(upstream, tmp_path):
    proxy, w, _ = _proxy(upstream, tmp_path, body_timeout=0.5)
    try:
        s = socket.create_connection(("127.0.0.1", proxy.port))
        s.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        s.settimeout(10)
        assert b" 408 " in s.recv(200).split(b"\r\n", 1)[0] + b" "
        s.close()
    finally:
        proxy.stop()
        w.close()


def test_the_proxy_forwards_json_nested_too_deep_to_read(upstream, tmp_path):
    """Before: the proxy's own reading raised and it answered 500 without forwarding."""
    proxy, w, _ = _proxy(upstream, tmp_path)
    try:
        with httpx.Client(timeout=10) as c:
            r = c.post(proxy.url, headers=H, json=INIT)
            h = {**H, "Mcp-Session-Id": r.headers["mcp-session-id"]}
            deep = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + "[" * 5000
            deep += "]" * 5000 + "}}"
            r = c.post(proxy.url, headers=h, content=deep)
            assert r.status_code == 400 and r.json()["error"]["code"] in (-32700, -32600)
    finally:
        proxy.stop()
        w.close()


def test_the_record_command_closes_a_connection_with_slow_headers(upstream, tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcp_inflight",
            "record",
            "--upstream",
            upstream.url,
            "--listen",
            "0",
            "--out",
            str(tmp_path / "r.jsonl"),
            "--header-timeout",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        port = int(re.search(r":(\d+)/mcp", line).group(1))
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1")  # and nothing more
        s.settimeout(10)
        t0 = time.monotonic()
        got = s.recv(100)
        assert time.monotonic() - t0 < 6
        assert got == b"" or b"408" in got
        s.close()
    finally:
        proc.terminate()
        proc.wait(10)


# --- the probe's reads --------------------------------------------------------------------------


async def _until_gone(receive, send, start, chunk):
    """Send ``start``, then ``chunk`` after ``chunk`` until the client goes away (a server whose
    ``send`` does not block on a gone client would otherwise spin on, in the test's process)."""
    gone = asyncio.Event()

    async def watch():
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.create_task(watch())
    await send(start)
    try:
        while not gone.is_set():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)
    finally:
        watcher.cancel()


async def _endless(scope, receive, send):
    """A hostile target: an SSE stream that never ends, as fast as it can be read."""
    if scope["type"] != "http":
        return
    start = {
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"text/event-stream")],
    }
    event = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n' * 100
    await _until_gone(receive, send, start, event)


async def _huge(scope, receive, send):
    """A hostile target: a JSON error body that never ends."""
    if scope["type"] != "http":
        return
    start = {
        "type": "http.response.start",
        "status": 400,
        "headers": [(b"content-type", b"application/json")],
    }
    await _until_gone(receive, send, start, b" " * 65536)


@pytest.mark.parametrize("target", [_endless, _huge])
def test_the_probe_bounds_what_it_reads_from_a_target(target, monkeypatch):
    monkeypatch.setattr(recording, "MAX_READ", 2 * 1024 * 1024)
    srv = http_server.Running(target)
    try:

        async def go():
            got: list = []
            async with httpx.AsyncClient(timeout=30) as c:
                async with c.stream("GET", srv.url) as r:
                    with pytest.raises(recording.ReadBound):
                        if target is _endless:
                            await recording.read_sse(r, got.append)
                        else:
                            await recording.read_body(r)
            return got

        got = asyncio.run(asyncio.wait_for(go(), 60))
        assert len(got) <= recording.MAX_EVENTS
    finally:
        srv.stop()
