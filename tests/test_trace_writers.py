"""Traces written by the servers themselves (``serve --trace``, ``guard(app, trace=...)``, the
tap around the bare SDK) replay as the recording proxy's do: ours and the guarded SDK clean, the
bare SDK flagged where it misroutes; and the online check inside them counts what the replay
finds: zero violations on the clean runs, the misrouting on the bare SDK, an injected one."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from test_trace_record import duplicate_id, post_of

from mcp_inflight.model.observe import abstract
from mcp_inflight.model.observe_check import check, check_trace, explains
from mcp_inflight.trace.format import S2C, event, read
from mcp_inflight.trace.online import Monitor
from mcp_inflight.trace.tap import traced
from support import http_server
from support.sdk_server import build_server


def _run(app) -> None:
    srv = http_server.Running(app)
    try:
        duplicate_id(srv.url)
    finally:
        srv.stop()


def _replay(path) -> int:
    r = subprocess.run(
        [sys.executable, "-m", "mcp_inflight", "replay", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.returncode


def test_serve_trace_replays_clean_and_the_online_check_is_quiet(tmp_path):
    path = tmp_path / "serve.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_inflight", "serve", "--port", "0"]
        + ["--trace", str(path), "--online-check"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "listening on" in line, line
        duplicate_id(line.split()[-1])
    finally:
        proc.terminate()
        rest = proc.stderr.read()
        proc.wait(10)
    events = read(path)
    assert any(e["kind"] == "status" and e["status"] == 409 for e in events)
    v = check(abstract(events))
    assert v.clean, (v.failed, v.broken)
    assert _replay(path) == 0
    assert "no move of the atomic design" not in rest


def test_guard_writes_a_clean_trace_and_its_online_check_counts_none(tmp_path):
    from mcp_inflight.guard import guard

    path = tmp_path / "guarded.jsonl"
    app = guard(build_server().streamable_http_app(), trace=str(path), online=True)
    _run(app)
    events = read(path)
    v = check(abstract(events))
    assert v.clean, (v.failed, v.broken)
    assert _replay(path) == 0
    m = app.monitor.close()  # the check runs beside the server: wait for it to catch up
    assert m["violations"] == 0 and m["steps"] >= 5 and m["events"] == len(events), m
    assert m["dropped_events"] == 0 and m["unchecked_parts"] == 0, m
    # the check alone (no trace: the tap makes only the events the check looks at, and counts
    # the others): the same counts on the same scenario
    lean = guard(build_server().streamable_http_app(), online=True)
    _run(lean)
    got = lean.monitor.close()
    assert lean.lean is lean.monitor and lean.monitor.skipped > 0
    assert {k: got[k] for k in ("violations", "steps", "unchecked_parts", "dropped_events")} == {
        k: m[k] for k in ("violations", "steps", "unchecked_parts", "dropped_events")
    }, (got, m)


@pytest.mark.oracle_expects_violation  # the bare SDK misroutes: the test oracle sees it too
def test_bare_sdk_trace_is_flagged_and_its_online_check_counts_it(tmp_path, caplog):
    path = tmp_path / "bare.jsonl"
    app = traced(build_server().streamable_http_app(), trace=str(path), online=True)
    with caplog.at_level(logging.WARNING, logger="mcp_inflight.trace"):
        _run(app)
    events = read(path)
    ab = abstract(events)
    v = check(ab)
    assert not v.explained and v.failed is not None and v.failed.kind in ("emit", "respond")
    b_post = post_of(events, "b")
    assert events[v.failed.at]["exchange"] == b_post  # A's message on B's POST
    assert "unguarded" in [o.cfg.design.name for o in explains(ab)]
    assert _replay(path) == 1
    with caplog.at_level(logging.WARNING, logger="mcp_inflight.trace"):
        app.monitor.close()  # the check runs beside the server (a process): wait for it
    assert app.monitor.violations >= 1
    first = app.monitor.recent[0]
    assert first.event["exchange"] == b_post and first.step.kind in ("emit", "respond")
    assert "no move of the atomic design explains" in caplog.text


_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "a"}},
}


def _clean_session(sid: str) -> list[dict]:
    """A tool call with progress and its response, and a duplicate refused meanwhile."""
    call = _CALL
    dup = dict(call, params={"name": "slow", "arguments": {}, "_meta": {"progressToken": "b"}})
    prog = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "a"}}
    return [
        event("open", 1, "client->server", sid, method="POST"),
        event("message", 1, "client->server", sid, message=call),
        event("status", 1, S2C, sid, status=200),
        event("message", 1, S2C, sid, message=prog),
        event("open", 2, "client->server", sid, method="POST"),
        event("message", 2, "client->server", sid, message=dup),
        event("status", 2, S2C, sid, status=409),
        event("close", 2, S2C, sid, by="server"),
        event("message", 1, S2C, sid, message=prog),
        event("message", 1, S2C, sid, message={"jsonrpc": "2.0", "id": 1, "result": {}}),
        event("close", 1, S2C, sid, by="server"),
    ]


@pytest.mark.parametrize("inject", [False, True], ids=["clean", "injected"])
def test_online_check_counts_an_injected_violation(inject):
    evs = _clean_session("s1")
    if inject:  # A's second progress re-addressed to the refused duplicate's POST
        evs[8] = dict(evs[8], exchange=2)
    m = Monitor()
    for _ in range(3):  # the session settles after each round and is checked afresh
        for e in json.loads(json.dumps(evs)):
            m.feed(e)
    assert m.violations == (3 if inject else 0)
    assert m.steps >= 3 * 5 and m.unchecked == 0
    assert check(abstract(evs)).clean == (not inject)


def _calls_at_once(n: int, misroute: bool) -> list:
    """``n`` calls in flight at once under ids 0..n-1, each with one progress, then each answered
    (``misroute``: call 0's progress written on the POST of call n // 2)."""
    sid, evs = "s", []
    for k in range(n):
        call = dict(_CALL, id=k, params=dict(_CALL["params"], _meta={"progressToken": f"t{k}"}))
        evs += [
            event("open", k + 1, "client->server", sid, method="POST"),
            event("message", k + 1, "client->server", sid, message=call),
            event("status", k + 1, S2C, sid, status=200),
        ]
    for k in range(n):
        prog = {"jsonrpc": "2.0", "method": "notifications/progress"}
        prog["params"] = {"progressToken": f"t{k}", "progress": 1}
        evs.append(event("message", k + 1, S2C, sid, message=prog))
    for k in range(n):
        done = {"jsonrpc": "2.0", "id": k, "result": {}}
        evs += [
            event("message", k + 1, S2C, sid, message=done),
            event("close", k + 1, S2C, sid, by="server"),
        ]
    if misroute:
        i = next(i for i, e in enumerate(evs) if e["kind"] == "message" and e["dir"] == S2C)
        evs[i] = dict(evs[i], exchange=n // 2 + 1)
    return evs


@pytest.mark.parametrize("misroute", [False, True])
def test_online_check_follows_many_calls_at_once_by_id(misroute):
    """Ten calls in flight at once under ten ids: every step checked; A's progress written on
    another id's POST is a violation."""
    m = Monitor()
    for e in _calls_at_once(10, misroute):
        m.feed(e)
    assert m.unchecked == 0 and m.steps == 30 - misroute  # send, progress, response
    assert m.violations == int(misroute), m.summary()


@pytest.mark.parametrize("misroute", [False, True])
def test_online_and_offline_checks_agree_on_calls_at_once(misroute):
    """The offline replay (whose model grows with the calls at once: about a minute at ten) gives
    the same verdict at four."""
    evs = _calls_at_once(4, misroute)
    m = Monitor()
    for e in evs:
        m.feed(e)
    assert m.violations == int(misroute), m.summary()
    assert check_trace(evs)[1].clean != misroute


def test_tap_reads_sse_chunks_whole_or_split_as_the_decoder_does():
    import asyncio

    from mcp_inflight.impl import sse
    from mcp_inflight.trace.tap import Tap, _whole_events

    msgs = [
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"k": k}} for k in range(4)
    ]
    one = [sse.encode(json.dumps(m, separators=(",", ":")).encode()) for m in msgs]
    primed = sse.encode(b"", id="s.p1.1", retry=1000) + sse.encode(b'{"a":1}', id="s.p1.2")
    for whole in (one[0], one[0] + one[1], primed, b": note\nevent: x\ndata:{}\n\n"):
        decoded = [e.data.encode() for e in sse.Decoder().feed(whole) if e.data]
        assert _whole_events(whole) == decoded != []
    for other in (
        one[0][:10],
        one[0][:-1],
        one[0].replace(b"\n", b"\r\n"),
        b"data: [1,\ndata: 2]\n\n",  # one event of two data lines
        b"data\n\n",
        b"data: {}\n\n\ndata: {}\n\n",
    ):
        assert _whole_events(other) is None
    # whole (a priming event and a message), then split (the decoder takes over), then whole
    # again (still the decoder's)
    bad = b'data: {"a":"\xff"}\n\n'  # not UTF-8: the decoder's replacement character
    chunks = [bad + primed[: primed.index(b"\n\n") + 2] + one[0], one[1][:10]]
    chunks += [one[1][10:] + one[2], one[3]]

    async def app(scope, receive, send):
        await receive()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for c in chunks:
            await send({"type": "http.response.body", "body": c, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    seen: list[dict] = []

    async def go():
        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(m):
            pass

        scope = {"type": "http", "method": "POST", "headers": []}
        await Tap(app, seen.append)(scope, receive, send)

    asyncio.run(go())
    assert [e["message"] for e in seen if e["kind"] == "message"] == [{"a": "\ufffd"}, *msgs]


@pytest.mark.parametrize("size", ["small", "past the bound"])
def test_tap_holds_a_json_body_up_to_its_bound_and_passes_a_larger_one_on(size, monkeypatch):
    """A JSON response is read whole to trace its message, up to ``MAX_RECORDED``: a larger one
    is passed on byte for byte, its message not traced, and the tap does not hold it."""
    import asyncio

    from mcp_inflight.trace import tap

    monkeypatch.setattr(tap, "MAX_RECORDED", 1000)
    message = {"jsonrpc": "2.0", "id": 1, "result": {"pad": "x" * 200}}
    body = json.dumps(message).encode() + b" " * (2000 if size == "past the bound" else 0)
    chunks = [body[k : k + 100] for k in range(0, len(body), 100)]

    async def app(scope, receive, send):
        await receive()
        start = {"status": 200, "headers": [(b"content-type", b"application/json")]}
        await send({"type": "http.response.start", **start})
        for c in chunks:
            await send({"type": "http.response.body", "body": c, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    seen: list[dict] = []
    sent: list[bytes] = []

    async def go():
        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(m):
            sent.append(m.get("body", b""))

        scope = {"type": "http", "method": "POST", "headers": []}
        await tap.Tap(app, seen.append)(scope, receive, send)

    asyncio.run(go())
    assert b"".join(sent) == body
    traced_messages = [e["message"] for e in seen if e["kind"] == "message"]
    assert traced_messages == ([message] if size == "small" else [])
    assert [e["by"] for e in seen if e["kind"] == "close"] == ["server"]


class _Stalled(Monitor):
    """A checker that stops at its first event until let go: the queue in front of it fills."""

    def __init__(self) -> None:
        import threading

        super().__init__()
        self.holding, self.go = threading.Event(), threading.Event()

    def feed(self, ev: dict) -> None:
        if not self.holding.is_set():
            self.holding.set()
            self.go.wait(10)
        super().feed(ev)


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_the_check_beside_the_server_drops_when_full_and_never_calls_that_clean(mode):
    """The serving path only queues events; when the queue is full they are dropped and
    counted, and the sessions that lost events are counted as not checked (here s1's lost
    ``tools/call`` would make its answer look unexplained, a false violation, were the gap
    ignored; and a gap ignored on a clean run would call it clean) while the other sessions
    are still checked: a misrouted message after the gap is counted."""
    from mcp_inflight.trace.checker import Beside

    first, lost = _clean_session("s0"), _clean_session("s1")
    bad = _clean_session("s2")
    bad[8] = dict(bad[8], exchange=2)  # A's second progress on the refused duplicate's POST

    def queued(evs: list[dict]) -> int:  # opens and statuses but 409 are counted, not queued
        return sum(e["kind"] != "open" and e.get("status", 409) == 409 for e in evs)

    if mode == "thread":
        stalled = _Stalled()
        beside = Beside("thread", monitor=stalled, capacity=2)
        beside.feed(first[0])
        beside.feed(first[1])
        assert stalled.holding.wait(10)  # the checker holds s0's call
        for e in first[2:6] + lost[:2]:  # s0's progress and duplicate queued, s1's call dropped
            beside.feed(e)
        stalled.go.set()
        rest, dropped, cut = first[6:] + lost[2:], 1, 1
    else:  # a checker process behind a queue that takes nothing: every event dropped
        beside = Beside("process", capacity=0)
        for e in first + lost[:2]:
            beside.feed(e)
        rest, dropped, cut = lost[2:], queued(first + lost[:2]), 2
    counts = beside.drain()
    assert counts["dropped_events"] == dropped and counts["unchecked_parts"] == cut, counts
    beside.capacity = 1000
    for e in rest + bad:
        beside.feed(e)
    counts = beside.close()
    assert counts["dropped_events"] == dropped and counts["unchecked_parts"] == cut, counts
    assert counts["violations"] == 1 and beside.recent[0].session == "s2", counts


@pytest.mark.parametrize("swap", [False, True])
def test_online_check_of_plain_calls_agrees_with_the_model(swap):
    """Calls with no progress, each answered on its own POST and closed: the check remembers
    the model's verdict on such a part (checked by the model the first time); a response
    written on another call's POST is still counted, as the offline replay finds it."""
    sid, evs = "s", []
    for k in range(3):
        call = {"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {"name": "echo"}}
        evs += [
            event("open", k + 1, "client->server", sid, method="POST"),
            event("message", k + 1, "client->server", sid, message=call),
            event("status", k + 1, S2C, sid, status=200),
        ]
    for k in range(3):
        done = {"jsonrpc": "2.0", "id": k, "result": {}}
        evs.append(event("message", (2 - k if swap and k != 1 else k) + 1, S2C, sid, message=done))
    evs += [event("close", k + 1, S2C, sid, by="server") for k in range(3)]
    for rounds in (1, 2):  # the first round the model decides; the second uses what it said
        m = Monitor()
        for _ in range(rounds):
            for e in evs:
                m.feed(e)
        assert m.violations == (2 * rounds if swap else 0), m.summary()
        if not swap:
            assert m.steps == 6 * rounds and m.unchecked == 0, m.summary()
    assert check_trace(evs)[1].clean != swap
