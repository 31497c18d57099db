"""stdio traces (``serve --transport stdio --trace``, ``record --stdio``) replayed on the model's
2025-11-25 stdio profile: our server and the guarded official SDK clean under a duplicate id,
the bare SDK flagged where both requests under one id run; and traces of no session
(2026-07-28 Streamable HTTP) checked POST by POST."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcp_inflight.model.observe import abstract
from mcp_inflight.model.observe_check import check, explains
from mcp_inflight.trace import replay
from mcp_inflight.trace.format import C2S, S2C, event, read
from mcp_inflight.trace.online import Monitor

SDK = str(Path(__file__).parent / "support" / "sdk_server.py")


def _call(label: str, delay: float) -> dict:
    args = {"label": label, "steps": 2, "delay": delay}
    params = {"name": "slow", "arguments": args, "_meta": {"progressToken": label}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def duplicate_id(proc: subprocess.Popen) -> list[dict]:
    """initialize, then call A under id 1 and, once A has reported its first progress (so it
    runs, with one more step of 0.5 s to go), call B under id 1 too; the input is closed once
    both calls have been answered or refused.  The server's messages, in order."""

    def send(m: dict) -> None:
        proc.stdin.write(json.dumps(m) + "\n")
        proc.stdin.flush()

    def read_until(done) -> None:
        while not done():
            line = proc.stdout.readline()
            assert line, f"the server closed its output early; read so far: {out}"
            out.append(json.loads(line))

    def ends() -> int:  # responses under id 1 and refusals (id null)
        return sum(
            1
            for m in out
            if ("result" in m or "error" in m) and m.get("id") in (1, None) and "method" not in m
        )

    watchdog = threading.Timer(60, proc.kill)  # a hung server fails the test, not the run
    watchdog.start()
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        init["clientInfo"] = {"name": "t", "version": "0"}
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        out: list[dict] = [json.loads(proc.stdout.readline())]
        assert "result" in out[0]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(_call("a", 0.5))
        read_until(
            lambda: any(
                m.get("method") == "notifications/progress"
                and m["params"].get("progressToken") == "a"
                for m in out
            )
        )
        send(_call("b", 0.05))
        read_until(lambda: ends() >= 2)
        proc.stdin.close()
        out += [json.loads(line) for line in proc.stdout]
        proc.wait(30)
    finally:
        watchdog.cancel()
    return out


def _run(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _unguarded(events: list[dict]) -> list[dict]:
    """Our stdio trace as the bare SDK's would be: B's refusal gone, B run beside A (its
    progress while A still runs)."""
    out = [e for e in events if not (e["dir"] == S2C and e.get("message", {}).get("id", 0) is None)]
    at = next(
        n for n, e in enumerate(out) if e["dir"] == S2C and e.get("message", {}).get("method")
    )
    prog = {"jsonrpc": "2.0", "method": "notifications/progress"}
    prog["params"] = {"progressToken": "b", "progress": 1}
    return out[:at] + [event("message", "stdio", S2C, "stdio", message=prog)] + out[at:]


def test_stdio_mapping_flags_two_requests_under_one_id(tmp_path):
    """The check fails on a server that runs a duplicate: the same trace without the refusal,
    with the duplicate's progress while the first runs."""
    sid = "stdio"
    call_a, call_b = _call("a", 0.3), _call("b", 0.1)
    a_prog = {"jsonrpc": "2.0", "method": "notifications/progress"}
    a_prog["params"] = {"progressToken": "a", "progress": 1}
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "in flight"}}
    refusal["error"]["data"] = {"id": 1}
    evs = [
        event("open", sid, C2S, sid, method="stdio"),
        event("message", sid, C2S, sid, message=call_a),
        event("message", sid, C2S, sid, message=call_b),
        event("message", sid, S2C, sid, message=refusal),
        event("message", sid, S2C, sid, message=a_prog),
        event("message", sid, S2C, sid, message={"jsonrpc": "2.0", "id": 1, "result": {}}),
        event("close", sid, C2S, sid, by="client"),
    ]
    assert check(abstract(evs)).clean
    bad = _unguarded(evs)
    ab = abstract(bad)
    v = check(ab)
    assert not v.explained and v.failed is not None and v.failed.kind == "emit"
    assert "unguarded" in [o.cfg.design.name for o in explains(ab)]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in bad))
    assert replay.run([str(path)]) == 1
    for trace, count in ((evs, 0), (bad, 1)):  # the online check agrees, event by event
        m = Monitor()
        for e in trace:
            m.feed(e)
        assert m.violations == count and m.unchecked == 0, m.summary()


def test_online_stdio_part_restarts_after_a_violation():
    """On stdio the online check starts an id's part afresh once every call under the id has
    ended (as many responses and refusals as calls) after a violation: the bare SDK's duplicate
    run twice is counted twice, and a clean run after it is checked (and stays clean)."""
    sid = "stdio"
    a_prog = {"jsonrpc": "2.0", "method": "notifications/progress"}
    a_prog["params"] = {"progressToken": "a", "progress": 1}
    done = {"jsonrpc": "2.0", "id": 1, "result": {}}
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "in flight"}}
    refusal["error"]["data"] = {"id": 1}
    clean = [
        event("message", sid, C2S, sid, message=_call("a", 0.3)),
        event("message", sid, C2S, sid, message=_call("b", 0.1)),
        event("message", sid, S2C, sid, message=refusal),
        event("message", sid, S2C, sid, message=a_prog),
        event("message", sid, S2C, sid, message=done),
    ]
    both = _unguarded(clean) + [event("message", sid, S2C, sid, message=done)]  # B answered too
    opened = [event("open", sid, C2S, sid, method="stdio")]
    for runs, violations, steps in (([both, both], 2, 0), ([both, clean], 1, 4)):
        m = Monitor()
        for e in opened + [e for run in runs for e in run]:
            m.feed(e)
        s = m.summary()
        assert s["violations"] == violations and s["restarts"] == violations, s
        assert s["steps"] >= steps and s["unchecked_parts"] == 0, s


@pytest.mark.slow  # three server processes (the official SDK takes seconds to import), side by side
def test_stdio_traces_of_real_servers(tmp_path, capsys):
    """``serve --transport stdio --trace`` and ``record --stdio`` in front of the official SDK,
    bare and guarded, each driven through a duplicate id: ours and the guarded SDK replay clean
    on the stdio profile, the bare SDK is flagged and behaves like ``unguarded``."""
    paths = {k: tmp_path / f"{k}.jsonl" for k in ("ours", "bare", "guarded", "in-guard")}
    me = [sys.executable, "-m", "mcp_inflight"]
    sdk = [sys.executable, SDK, "--stdio"]
    procs = {
        "ours": _run(me + ["serve", "--transport", "stdio", "--trace", str(paths["ours"])]),
        "bare": _run(me + ["record", "--out", str(paths["bare"]), "--stdio"] + sdk),
        "guarded": _run(
            me + ["record", "--out", str(paths["guarded"]), "--stdio"] + sdk + ["--guard"]
        ),
        # the guard's own trace and online check (guard_stdio(trace=..., online=...))
        "in-guard": subprocess.Popen(
            sdk + ["--guard", "--trace", str(paths["in-guard"]), "--online-check"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ),
    }
    out = {k: duplicate_id(p) for k, p in procs.items()}
    # the guard's trace is the channel's: every message the client sent and the server wrote,
    # in order, as record --stdio sees them from outside; it replays clean; the check beside
    # the guard counted no violation and checked every step
    inside, outside = read(paths["in-guard"]), read(paths["guarded"])
    assert [e["kind"] for e in inside] == [e["kind"] for e in outside]
    assert [e["message"] for e in inside if e["kind"] == "message" and e["dir"] == C2S] == [
        e["message"] for e in outside if e["kind"] == "message" and e["dir"] == C2S
    ]
    assert [e["message"] for e in inside if e["kind"] == "message" and e["dir"] == S2C] == (
        out["in-guard"]
    )
    assert any(m.get("id") is None and "error" in m for m in out["in-guard"])  # B refused
    assert replay.run([str(paths["in-guard"])]) == 0
    capsys.readouterr()
    err = procs["in-guard"].stderr.read()
    counts = json.loads(err.split("online check: ", 1)[1].splitlines()[0])
    assert counts["violations"] == 0 and counts["steps"] >= 4, counts
    assert counts["events"] == len(inside) and counts["dropped_events"] == 0, counts
    assert any(m.get("id") is None and "error" in m for m in out["ours"])  # B refused
    events = read(paths["ours"])
    assert {e["exchange"] for e in events} == {"stdio"} and events[0]["kind"] == "open"
    sent = [e["message"] for e in events if e["kind"] == "message" and e["dir"] == S2C]
    assert sent == out["ours"]  # every line the server wrote, in order
    assert replay.run([str(paths["ours"]), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["clean"] and rep["profile"] == "2025-11-25 stdio" and rep["observed"] >= 6
    assert replay.run([str(paths["guarded"])]) == 0
    assert replay.run([str(paths["bare"])]) == 1
    text = capsys.readouterr().out
    assert "no move of atomic explains" in text and "behaves like the unguarded design" in text
    assert check(abstract(read(paths["bare"]))).failed.kind in ("emit", "respond")
    for k, count in (("ours", 0), ("guarded", 0), ("bare", 1)):  # the online check agrees
        m = Monitor()
        for e in read(paths[k]):
            m.feed(e)
        assert m.violations == count and m.unchecked == 0, (k, m.summary())


MODERN = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
MODERN["MCP-Protocol-Version"] = "2026-07-28"


def _modern_call(label: str, steps: int, delay: float) -> dict:
    call = _call(label, delay)
    call["params"]["arguments"]["steps"] = steps
    call["params"]["_meta"] |= {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return call


def test_sessionless_trace_is_checked_post_by_post_on_2026_07_28(tmp_path, capsys):
    """Ours on 2026-07-28 over loopback: two POSTs under one id at once and a third closed by
    its client (a cancel) replay clean; the same trace with one POST's response moved onto
    another POST is flagged."""

    import httpx

    from mcp_inflight.impl.http import LOOPBACK, create_app
    from mcp_inflight.serve import demo_server
    from mcp_inflight.trace.tap import traced
    from support import http_server

    path = tmp_path / "modern.jsonl"
    app = traced(
        create_app(demo_server(), "/mcp", allowed_hosts=set(LOOPBACK)), trace=str(path), online=True
    )
    srv = http_server.Running(app)
    try:
        codes = []

        def post(label: str) -> None:
            with httpx.Client(timeout=10) as c:
                codes.append(c.post(srv.url, headers=MODERN, json=_modern_call(label, 2, 0.05)))

        both = [threading.Thread(target=post, args=(k,)) for k in "ab"]
        for t in both:
            t.start()
        with httpx.Client(timeout=10) as c:
            with c.stream("POST", srv.url, headers=MODERN, json=_modern_call("c", 3, 0.05)) as r:
                for line in r.iter_lines():
                    if "progress" in line:
                        break  # closed before its answer: the 2026-07-28 cancel
        for t in both:
            t.join()
        time.sleep(0.3)
    finally:
        srv.stop()
    assert [r.status_code for r in codes] == [200, 200]
    events = read(path)
    assert {e["session"] for e in events} == {None}
    assert any(e["kind"] == "close" and e["by"] == "client" for e in events)
    assert replay.run([str(path), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["clean"] and rep["design"] == "atomic" and "2026-07-28 http" == rep["profile"]
    # a's response written on b's POST instead, before b's POST closes: it answers its id twice
    a_post = next(
        e["exchange"]
        for e in events
        if e["kind"] == "message"
        and e["message"].get("params", {}).get("_meta", {}).get("progressToken") == "a"
    )
    b_post = next(
        e["exchange"]
        for e in events
        if e["kind"] == "message"
        and e["message"].get("params", {}).get("_meta", {}).get("progressToken") == "b"
    )
    resp = next(
        e
        for e in events
        if e["exchange"] == a_post and e["kind"] == "message" and "result" in e["message"]
    )
    bad = [e for e in events if e is not resp]
    b_close = next(n for n, e in enumerate(bad) if e["exchange"] == b_post and e["kind"] == "close")
    bad.insert(b_close, dict(resp, exchange=b_post))  # while b's POST is still open
    moved = tmp_path / "moved.jsonl"
    moved.write_text("".join(json.dumps(e) + "\n" for e in bad))
    assert replay.run([str(moved)]) == 1
    assert "VIOLATION" in capsys.readouterr().out
    # the online check, POST by POST as each closes: quiet on ours, the moved response counted
    counts = app.monitor.close()
    assert counts["violations"] == 0 and counts["steps"] >= 7 and counts["events"] == len(events)
    m = Monitor()
    for e in bad:
        m.feed(e)
    assert m.violations == 1 and m.recent[0].event["exchange"] == b_post
