"""Regressions of the explore page and ``replay`` (each failed before its fix): the page answers
only requests that name it (Host) and come from it (Origin), what changes its state needs the
page's token, a trace's check and an exploration run within a budget in a process that is
ended, the exploration queue is bounded, a silent connection is closed, and ``replay`` obeys a
budget and exits 2 on a line nested too deep.  Real server processes on loopback."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.parse

import pytest
from test_web import DESIGNS, DUPLICATE_ADMITTED, model_run, start_server, stop_server, token, wire


def _request(base: str, method: str, route: str, headers: dict, body: bytes | None = None):
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.putrequest(method, route, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        c.putheader(k, v)
    if body is not None:
        c.putheader("Content-Length", str(len(body)))
    c.endheaders(body)
    r = c.getresponse()
    out = r.status, r.read()
    c.close()
    return out


#: the servers' own configuration, explored as each starts: the smallest (no test here reads its
#: traces; the queue's test names every configuration it asks for; the trace budget's test
#: waits for its exploration to end)
SMALL = ("--ids", "1", "--requests", "1")


@pytest.fixture(scope="module")
def base():
    proc, url = start_server("--trace-budget", "60", *SMALL)
    yield url
    stop_server(proc)


def _host(base: str) -> str:
    return urllib.parse.urlsplit(base).netloc


def test_a_foreign_host_reads_nothing(base):
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends its own name."""
    port = urllib.parse.urlsplit(base).port
    for host in (f"evil.example:{port}", "127.0.0.1:1", "evil.example"):
        for route in ("/api/recorded", "/api/meta", "/"):
            status, body = _request(base, "GET", route, {"Host": host})
            assert status == 403, (host, route, status)
    assert _request(base, "GET", "/api/meta", {"Host": _host(base)})[0] == 200
    port = urllib.parse.urlsplit(base).port
    assert _request(base, "GET", "/api/meta", {"Host": f"localhost:{port}"})[0] == 200


def test_another_page_changes_nothing(base):
    """A form or fetch from another origin, or without the page's token, cannot open a trace
    or queue an exploration."""
    body = wire(model_run(DESIGNS["atomic"], DUPLICATE_ADMITTED[:3]))
    h = {"Host": _host(base), "Content-Type": "text/plain"}
    t = token(base)
    cases = [
        {**h, "Origin": "http://evil.example"},
        {**h, "Origin": "http://evil.example", "X-Explore-Token": t},
        h,  # no token
        {**h, "X-Explore-Token": "guess"},
    ]
    for headers in cases:
        status, answer = _request(base, "POST", "/api/recorded?name=x.jsonl", headers, body)
        assert status == 403, (headers, status, answer[:200])
        status, _ = _request(base, "GET", "/api/traces?design=atomic&ids=1", headers)
        assert status == 403
    listed = json.loads(_request(base, "GET", "/api/recorded", h)[1])["traces"]
    assert listed == []
    ok = {**h, "Origin": base.rstrip("/"), "X-Explore-Token": t}
    status, answer = _request(base, "POST", "/api/recorded?name=x.jsonl", ok, body)
    assert status == 200, answer[:300]


def test_the_exploration_queue_is_bounded():
    """A server of its own, stopped (its queue dropped, its running exploration ended) once the
    answers are in: what it queued is not explored for the rest of the module."""
    from mcp_inflight.web.jobs import MAX_QUEUED

    proc, base = start_server(*SMALL)
    try:
        h = {"Host": _host(base), "X-Explore-Token": token(base)}
        statuses = []
        designs = ["atomic", "unguarded", "check_then_claim"]
        for ids in (1, 2, 3):
            for requests in (2, 3, 4):
                for design in designs:
                    q = urllib.parse.urlencode(
                        {"design": design, "ids": ids, "requests": requests, "transport": "http"}
                    )
                    statuses.append(_request(base, "GET", "/api/traces?" + q, h)[0])
    finally:
        stop_server(proc)
    assert statuses.count(503) >= len(statuses) - MAX_QUEUED - 2, statuses
    assert set(statuses) <= {200, 503}


def test_a_silent_connection_is_closed():
    proc, url = start_server("--socket-timeout", "1", *SMALL)
    try:
        u = urllib.parse.urlsplit(url)
        s = socket.create_connection((u.hostname, u.port))
        s.sendall(b"GET /api/meta HTTP/1.1\r\nHost: ")  # and nothing more
        s.settimeout(10)
        t0 = time.monotonic()
        assert s.recv(100) == b""  # closed by the server
        assert time.monotonic() - t0 < 5
        s.close()
    finally:
        stop_server(proc)


def test_a_trace_check_over_its_budget_is_ended():
    """A budget shorter than any check (1 ms, less than a process takes to start): the upload
    is refused when the budget is spent and the checking process is gone (before: the check ran
    in a thread, for as long as it took)."""
    from support import procs

    proc, url = start_server("--trace-budget", "0.001", *SMALL)
    try:
        body = wire(model_run(DESIGNS["unguarded"], DUPLICATE_ADMITTED))
        h = {"Host": _host(url), "X-Explore-Token": token(url)}
        deadline = time.monotonic() + 60  # the start's exploration (a small one) is over first
        while time.monotonic() < deadline:
            status, answer = _request(url, "GET", "/api/traces", h)
            if json.loads(answer)["status"] not in ("queued", "exploring"):
                break
            time.sleep(0.1)
        time.sleep(0.5)
        before = set(procs.children(proc.pid))
        t0 = time.monotonic()
        status, answer = _request(url, "POST", "/api/recorded?name=slow.jsonl", h, body)
        took = time.monotonic() - t0
        assert status == 400 and b"budget" in answer, (status, answer[:200])
        assert took < 5

        def cmdline(pid: int) -> str:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    return f.read().replace(b"\0", b" ").decode()
            except OSError:
                return ""

        def left() -> set:
            kids = {c for c in procs.children(proc.pid) if procs.alive(c)} - before
            # multiprocessing's resource tracker lives as long as the server, and explores none
            return {(c, cmdline(c)) for c in kids if "resource_tracker" not in cmdline(c)}

        deadline = time.monotonic() + 5
        while left() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left() == set()
    finally:
        stop_server(proc)


# --- replay on the command line -----------------------------------------------------------------


def _replay(path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "replay", str(path), *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_replay_exits_2_on_a_line_nested_too_deep(tmp_path):
    bad = tmp_path / "deep.jsonl"
    bad.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    r = _replay(bad)
    assert r.returncode == 2 and "line 1" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_replay_obeys_its_budget(tmp_path):
    trace = tmp_path / "t.jsonl"
    events = b"".join(
        wire(model_run(DESIGNS["unguarded"], DUPLICATE_ADMITTED)) for _ in range(1)
    ).decode()
    trace.write_text(events * 200)
    r = _replay(trace, "--budget", "0.001")
    assert r.returncode == 2 and "budget" in r.stderr and "Traceback" not in r.stderr, r.stderr
    # no budget: the whole check, to its verdict (the run is unguarded's: a defect, exit 1)
    short = tmp_path / "short.jsonl"
    short.write_text(events * 2)
    r = _replay(short, "--budget", "0")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
