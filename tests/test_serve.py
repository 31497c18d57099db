"""``mcp-inflight serve`` as a real process: its option checks, the resource bounds it passes to
the app, and the header deadline of its HTTP server."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import httpx
import pytest

from support import oracle
from support.sessions import initialize

LISTEN = re.compile(r"listening on (http://\S+)")
INIT = initialize()
H = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def serve(*flags: str, preexec_fn=None):
    """``mcp-inflight serve`` on a free port: (process, URL); its wire trace is checked by the
    model after each test (``support/oracle.py``)."""
    argv, o = oracle.traced_argv(
        [sys.executable, "-m", "mcp_inflight", "serve", "--port", "0", *flags], "serve"
    )
    proc = oracle.watch(
        o,
        subprocess.Popen(
            argv,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            preexec_fn=preexec_fn,
        ),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        m = LISTEN.search(line)
        if m:
            return proc, m.group(1)
        if not line:
            break
    proc.kill()
    raise RuntimeError("serve did not start")


def stop(proc) -> None:
    proc.terminate()
    proc.wait(10)


def test_out_of_range_port_is_refused():
    for bad in ("99999", "-1", "http"):
        r = subprocess.run(
            [sys.executable, "-m", "mcp_inflight", "serve", "--port", bad],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 2 and "--port" in r.stderr, (bad, r.stderr)


def test_slow_headers_are_cut_off_and_normal_requests_served():
    proc, url = serve("--header-timeout", "0.5")
    try:
        port = int(url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1")  # and never the rest
            s.settimeout(10)
            assert s.recv(100) == b""  # closed by the server
        with httpx.Client(timeout=10) as c:  # others are served
            r = c.post(url, json=INIT, headers=H)
            assert r.status_code == 200
            r = c.post(url, json=INIT, headers=H)  # on the kept-alive connection
            assert r.status_code == 200
    finally:
        stop(proc)


def _slow_clients_then_one_call(header_timeout: str, slow: int = 300) -> bool:
    """``serve`` limited to 256 file descriptors; ``slow`` connections that send part of their
    headers and nothing more; then whether a normal call is answered in one of 5 tries a second
    apart.  (While the server is out of descriptors, its event loop, libuv, accepts and closes
    what waits in the backlog, so a try then ends without an answer.)"""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    proc, url = serve("--header-timeout", header_timeout, preexec_fn=limit)
    socks = []
    try:
        port = int(url.split(":")[2].split("/")[0])
        for _ in range(slow):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1")
            socks.append(s)
        for _ in range(5):
            time.sleep(1)
            try:
                with httpx.Client(timeout=10) as c:
                    if c.post(url, json=INIT, headers=H).status_code == 200:
                        return True
            except httpx.TransportError:
                pass
        return False
    finally:
        for s in socks:
            s.close()
        stop(proc)


@pytest.mark.slow
def test_slow_clients_beyond_the_descriptor_limit_do_not_lock_others_out():
    """300 connections that never finish their headers, against a server allowed 256 file
    descriptors: with the header deadline they are cut off and a normal call is served; without
    it (0 turns it off) they hold every descriptor and the call is never answered."""
    assert _slow_clients_then_one_call("1")
    assert not _slow_clients_then_one_call("0")


def test_bounds_reach_the_app():
    proc, url = serve("--max-sessions", "1")
    try:
        with httpx.Client(timeout=10) as c:
            assert c.post(url, json=INIT, headers=H).status_code == 200
            r = c.post(url, json=INIT, headers=H)
            assert r.status_code == 503 and r.json()["error"]["code"] == -32000
    finally:
        stop(proc)


def test_bound_options_read_zero_as_off_and_refuse_negatives(capsys):
    from mcp_inflight.serve import _parser

    args = _parser().parse_args(["--max-body", "0", "--max-sessions", "0", "--body-timeout", "0"])
    assert args.max_body is args.max_sessions is args.body_timeout is None
    args = _parser().parse_args([])
    assert args.max_body == 4 * 1024 * 1024 and args.max_in_flight == 256
    for flag in ("--max-body", "--max-in-flight", "--header-timeout"):
        with pytest.raises(SystemExit) as e:
            _parser().parse_args([flag, "-1"])
        err = capsys.readouterr().err
        assert e.value.code == 2 and flag in err, (flag, err)


def test_every_bound_option_reaches_create_app(monkeypatch):
    import asyncio

    import mcp_inflight.impl.http as http
    from mcp_inflight import serve as S

    seen: dict = {}

    class Built(Exception):
        pass

    def fake(server, path, **options):
        seen.update(options)
        raise Built

    monkeypatch.setattr(http, "create_app", fake)
    argv = ["--max-body", "5", "--max-sessions", "6", "--session-idle-timeout", "7"]
    argv += ["--max-in-flight", "8", "--body-timeout", "9"]
    try:
        asyncio.run(S._serve_http(S.demo_server(), S._parser().parse_args(argv)))
    except Built:
        pass
    assert {k: seen[k] for k in ("max_body", "max_sessions", "max_in_flight")} == {
        "max_body": 5,
        "max_sessions": 6,
        "max_in_flight": 8,
    }
    assert seen["session_idle_timeout"] == 7.0 and seen["body_timeout"] == 9.0
