"""The request lifecycle in OpenTelemetry (``mcp_inflight.otel``), read back with the SDK's
in-memory exporter and reader, and matched against the model.

Each test runs a real server on a loopback port (the official SDK's app behind the guard, or the
runtime's own app), with the guard's wire trace recorded at the same time.  The wire trace is
mapped onto the model's moves (``model/observe.py``, what ``mcp-inflight replay`` checks); the
span events must read as that run does: per request, the same server actions with the same
lifecycle states before and after.  Actions the wire cannot show (a cancel taking effect, a
handler unwinding) come after the wire's run; each of them must be a move the model allows from
the state the run reached, taking the request between the states the event names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from importlib.metadata import version

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the test extra)")
if int(version("mcp").split(".")[0]) < 2:
    pytest.skip("the guarded server here is on mcp 2.x (the test extra)", allow_module_level=True)

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from mcp_inflight.model.lifecycle import Life  # noqa: E402
from mcp_inflight.model.observe import abstract  # noqa: E402
from mcp_inflight.model.observe_check import check, segments  # noqa: E402
from mcp_inflight.model.step import successors  # noqa: E402
from mcp_inflight.otel import LifecycleTelemetry  # noqa: E402
from mcp_inflight.trace.format import Writer, read  # noqa: E402
from mcp_inflight.trace.replay import sessions  # noqa: E402
from support.sessions import http_session as session  # noqa: E402
from support.sessions import init_params  # noqa: E402

#: The model's client-side moves and the messages written (not request transitions).
NOT_EVENTS = {"client_sends", "rogue_sends", "send_cancel", "close", "emit", "client_answers"}
#: The model's move whose effect the core reports under the name of that effect: the wire
#: delivers a cancel (``deliver_cancel``), the server's ``on_cancel`` picks its target.
MOVE = {"on_cancel": "deliver_cancel"}
EVENT = {v: k for k, v in MOVE.items()}
#: The model's moves of a whole session (no request of its own: no span event).
SESSION_MOVES = {"end_session"}


class Telemetry:
    """A :class:`LifecycleTelemetry` on its own providers, with what they recorded."""

    def __init__(self):
        self.exporter = InMemorySpanExporter()
        tp = TracerProvider()
        tp.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.observer = LifecycleTelemetry(tp, MeterProvider(metric_readers=[self.reader]))

    def spans(self):
        """The finished spans, in the order their requests arrived."""
        spans = self.exporter.get_finished_spans()
        return sorted(spans, key=lambda s: s.attributes["mcp_inflight.request.instance"])

    def events(self):
        """Per request (arrival order): ``(action, before, after)`` of each lifecycle event."""
        return [
            [
                (e.attributes["mcp_inflight.action"],)
                + (
                    e.attributes["mcp_inflight.state.before"],
                    e.attributes["mcp_inflight.state.after"],
                )
                for e in s.events
                if "mcp_inflight.action" in e.attributes
            ]
            for s in self.spans()
        ]

    def metrics(self):
        out = {}
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.data.data_points:
                        key = tuple(sorted((k, v) for k, v in p.attributes.items()))
                        out[(m.name, key)] = p.value
        return out


@contextlib.contextmanager
def serve(app):
    """``app`` served by uvicorn on a loopback port, in a thread of this process: its URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)


def call(rid, label, steps=3, delay=0.2):
    params = {"name": "slow", "arguments": {"label": label, "steps": steps, "delay": delay}}
    params["_meta"] = {"progressToken": label}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def duplicate(url):
    import httpx

    async with httpx.AsyncClient(timeout=30) as c:
        h = await session(c, url)
        a = asyncio.create_task(c.post(url, headers=h, json=call(5, "A")))
        await asyncio.sleep(0.3)
        b = await c.post(url, headers=h, json=call(5, "B"))
        a = await a
        await c.delete(url, headers=h)
    return a.status_code, b.status_code


async def cancel(url):
    import httpx

    async with httpx.AsyncClient(timeout=30) as c:
        h = await session(c, url)
        a = asyncio.create_task(c.post(url, headers=h, json=call(6, "A")))
        await asyncio.sleep(0.3)
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
        note["params"] = {"requestId": 6, "reason": "changed my mind"}
        await c.post(url, headers=h, json=note)
        await a
        await asyncio.sleep(0.2)
        await c.delete(url, headers=h)


async def broken(url):
    import httpx

    async with httpx.AsyncClient(timeout=30) as c:
        h = await session(c, url)
        async with httpx.AsyncClient(timeout=30) as other:
            async with other.stream("POST", url, headers=h, json=call(7, "A")) as resp:
                async for _ in resp.aiter_bytes():
                    break  # the first event is in: the client goes away
        await asyncio.sleep(1.0)  # the handler runs on to its end
        await c.delete(url, headers=h)


def run_guarded(tmp_path, client):
    """The SDK's app behind the guard with the telemetry and the wire trace: (telemetry, wire
    events, what ``client`` returned)."""
    from mcp_inflight.guard import guard
    from support.sdk_server import build_app

    tel = Telemetry()
    writer = Writer(tmp_path / "wire.jsonl")
    with serve(guard(build_app(), trace=writer, observer=tel.observer)) as url:
        got = asyncio.run(client(url))
    writer.close()
    return tel, read(tmp_path / "wire.jsonl"), got


def _label(v) -> str:
    return Life(int(v)).label


def _moved(t) -> list[int]:
    """The requests a transition is a step of: its own, or for a delivered cancel the one whose
    state it changed (the request the server cancelled)."""
    if t.move.action.name in MOVE.values():
        return [q for q in range(len(t.pre.life)) if t.pre.life[q] != t.post.life[q]]
    return [t.move.r]


def model_runs(events):
    """The model's run of each rest-to-rest part of the one session of ``events``:
    ``[(cfg, transitions)]``, each part's run checked clean on ``atomic``."""
    (sid,) = [s for s in sessions(events) if s is not None]
    own = [events[n] for n in sessions(events)[sid]]
    out = []
    for part in segments(own):
        v = check(abstract([own[n] for n in part], part))
        assert v.clean, v
        out.append((v.cfg, v.run))
    return out


def matches_model(per_request, events):
    """Assert that the span events of each request read as the model's run of the wire trace:
    the run's request transitions (per request, in arrival order) are the events' first ones,
    with the same states; every further event is a move the model allows from the state the
    run reached, between the states it names."""
    requests = []  # (cfg, final state, [(action, before, after)], r) per model instance
    for cfg, run in model_runs(events):
        order: list[int] = []
        steps: dict[int, list] = {}
        for t in run:
            name = EVENT.get(t.move.action.name, t.move.action.name)
            if name == "arrive":
                order.append(t.move.r)
            if name in NOT_EVENTS:
                continue
            for r in _moved(t):
                steps.setdefault(r, []).append(
                    (name, _label(t.pre.life[r]), _label(t.post.life[r]))
                )
        last = run[-1].post if run else None
        requests += [(cfg, last, steps.get(r, []), r) for r in order]
    assert len(requests) == len(per_request), (requests, per_request)
    for (cfg, state, seen, r), events_of in zip(requests, per_request, strict=True):
        assert events_of[: len(seen)] == seen, (events_of, seen)
        for action, before, after in events_of[len(seen) :]:
            assert _label(state.life[r]) == before, (action, before, state)
            # a session-level move (no request's, so no span's) may come first
            starts = [state] + [
                t.post for t in successors(cfg, state) if t.move.action.name in SESSION_MOVES
            ]
            nxt = [
                t
                for s0 in starts
                for t in successors(cfg, s0)
                if t.move.action.name == MOVE.get(action, action)
                and r in _moved(t)
                and _label(t.post.life[r]) == after
            ]
            assert nxt, f"the model allows no {action} of request {r} from {before} to {after}"
            state = nxt[0].post


# --- the guard in front of the official SDK --------------------------------------------------


def test_a_refused_duplicate_reads_as_the_models_trace(tmp_path):
    tel, events, (a, b) = run_guarded(tmp_path, duplicate)
    assert (a, b) == (200, 409)
    per_request = tel.events()
    assert per_request == [
        [
            ("arrive", "sent", "received"),
            ("admit", "received", "in_flight"),
            ("respond", "in_flight", "responded"),
        ],
        [("arrive", "sent", "received"), ("refuse", "received", "refused")],
    ]
    matches_model(per_request, events)
    a_span, b_span = tel.spans()
    for s in (a_span, b_span):
        assert s.name == "tools/call slow" and s.attributes["jsonrpc.request.id"] == "5"
        assert s.attributes["mcp.method.name"] == "tools/call"
        assert s.attributes["mcp_inflight.model.profile"] == "2025-11-25 http"
        assert s.attributes["gen_ai.tool.name"] == "slow"
        assert (
            s.attributes["mcp.session.id"] and s.attributes["mcp_inflight.request.id_type"] == "int"
        )
    (refusal,) = [e for e in b_span.events if e.name == "mcp_inflight.refuse"]
    assert refusal.attributes["mcp_inflight.reason"] == "id already in flight in this session"
    assert b_span.status.status_code.name == "ERROR"
    m = tel.metrics()
    assert m[("mcp_inflight.requests.in_flight", (("mcp.method.name", "tools/call"),))] == 0
    key = (("mcp.method.name", "tools/call"), ("mcp_inflight.reason", "duplicate"))
    assert m[("mcp_inflight.requests.refused", key)] == 1


def test_a_cancel_reads_as_the_models_trace(tmp_path):
    tel, events, _ = run_guarded(tmp_path, cancel)
    per_request = tel.events()
    assert per_request == [
        [
            ("arrive", "sent", "received"),
            ("admit", "received", "in_flight"),
            ("on_cancel", "in_flight", "cancelled"),
            ("unwind", "cancelled", "cancelled"),
        ]
    ]
    matches_model(per_request, events)
    (span,) = tel.spans()
    (ev,) = [e for e in span.events if e.name == "mcp_inflight.on_cancel"]
    assert ev.attributes["mcp_inflight.cancelled_by"] == "client"
    key = (("mcp.method.name", "tools/call"), ("mcp_inflight.cancelled_by", "client"))
    assert tel.metrics()[("mcp_inflight.requests.cancelled", key)] == 1


def test_a_broken_stream_reads_as_the_models_trace(tmp_path):
    tel, events, _ = run_guarded(tmp_path, broken)
    per_request = tel.events()
    assert per_request == [
        [
            ("arrive", "sent", "received"),
            ("admit", "received", "in_flight"),
            ("break_stream", "in_flight", "stream_broken"),
            ("respond", "stream_broken", "responded"),
        ]
    ]
    matches_model(per_request, events)
    (span,) = tel.spans()
    dropped = [e for e in span.events if e.name == "mcp_inflight.message_dropped"]
    assert dropped  # the progress written after the client left went nowhere
    m = tel.metrics()
    assert m[("mcp_inflight.streams.broken", (("mcp.method.name", "tools/call"),))] == 1
    assert m[("mcp_inflight.requests.in_flight", (("mcp.method.name", "tools/call"),))] == 0


async def hung(url):
    import httpx

    async with httpx.AsyncClient(timeout=30) as c:
        h = await session(c, url)
        ask = call(8, "A")
        ask["params"] = {"name": "ask", "arguments": {"label": "A", "delay": 0.4}}
        async with httpx.AsyncClient(timeout=30) as other:
            async with other.stream("POST", url, headers=h, json=ask) as resp:
                assert resp.status_code == 200
        # the client is gone before the tool asks it something: the handler waits for an
        # answer that cannot come, until the session ends
        await asyncio.sleep(1.0)
        await c.delete(url, headers=h)
        await asyncio.sleep(0.2)


def test_a_request_left_hanging_until_its_session_ends_is_counted(tmp_path):
    tel, events, _ = run_guarded(tmp_path, hung)
    assert tel.events() == [
        [
            ("arrive", "sent", "received"),
            ("admit", "received", "in_flight"),
            ("break_stream", "in_flight", "stream_broken"),
            ("end_request", "stream_broken", "cancelled"),
        ]
    ]
    matches_model(tel.events(), events)
    (span,) = tel.spans()
    (ev,) = [e for e in span.events if e.name == "mcp_inflight.end_request"]
    assert ev.attributes["mcp_inflight.cancelled_by"] == "session"
    m = tel.metrics()
    method = (("mcp.method.name", "tools/call"),)
    assert m[("mcp_inflight.requests.hung", method)] == 1
    assert m[("mcp_inflight.requests.in_flight", method)] == 0


def test_the_model_check_of_the_events_can_fail(tmp_path):
    """The comparison is not vacuous: events that differ from the run in one state are
    rejected, and so is a further event the model does not allow."""
    tel, events, _ = run_guarded(tmp_path, duplicate)
    per_request = tel.events()
    wrong_state = [list(per_request[0]), per_request[1]]
    wrong_state[0][2] = ("respond", "stream_broken", "responded")
    with pytest.raises(AssertionError):
        matches_model(wrong_state, events)
    not_allowed = [per_request[0], per_request[1] + [("admit", "refused", "in_flight")]]
    with pytest.raises(AssertionError):
        matches_model(not_allowed, events)


# --- the runtime's own server ----------------------------------------------------------------


def test_the_runtimes_server_reports_through_the_same_hook(tmp_path):
    from mcp_inflight.impl.http import create_app
    from mcp_inflight.serve import demo_server

    tel = Telemetry()
    server = demo_server()
    server.observer = tel.observer
    with serve(create_app(server)) as url:
        a, b = asyncio.run(duplicate(url))
    assert (a, b) == (200, 409)
    calls = [s for s in tel.spans() if s.attributes["mcp.method.name"] == "tools/call"]
    assert [
        [
            (e.attributes["mcp_inflight.action"])
            for e in s.events
            if e.name != "mcp_inflight.message_dropped"
        ]
        for s in calls
    ] == [["arrive", "admit", "respond"], ["arrive", "refuse"]]
    assert all(s.attributes["mcp.session.id"] for s in calls)


def test_a_server_request_sent_and_answered_on_the_runtime():
    import httpx

    from mcp_inflight.impl.http import create_app
    from mcp_inflight.serve import demo_server

    tel = Telemetry()
    server = demo_server()
    server.observer = tel.observer

    async def main(url):
        async with httpx.AsyncClient(timeout=30) as c:
            h = await session(c, url)
            ask = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
            ask["params"] = {"name": "ask", "arguments": {"label": "q"}}
            async with c.stream("POST", url, headers=h, json=ask) as resp:
                async for line in resp.aiter_lines():
                    if line.startswith("data:") and "elicitation/create" in line:
                        asked = json.loads(line[5:])
                        answer = {"jsonrpc": "2.0", "id": asked["id"]}
                        answer["result"] = {"action": "accept", "content": {"ok": True}}
                        r = await c.post(url, headers=h, json=answer)
                        assert r.status_code == 202
                    elif line.startswith("data:") and '"result"' in line:
                        return json.loads(line[5:])["result"]["content"][0]["text"]

    with serve(create_app(server)) as url:
        text = asyncio.run(main(url))
    assert text == "ask:q:accept"
    (span,) = [s for s in tel.spans() if s.attributes["mcp.method.name"] == "tools/call"]
    steps = [
        (e.attributes["mcp_inflight.action"], e.attributes["mcp_inflight.state.after"])
        for e in span.events
    ]
    assert steps == [
        ("arrive", "received"),
        ("admit", "in_flight"),
        ("server_request", "in_flight"),
        ("answer", "in_flight"),
        ("respond", "responded"),
    ]


# --- without it --------------------------------------------------------------------------------


def test_the_guard_and_the_runtime_import_no_opentelemetry():
    code = (
        "import sys; import mcp_inflight.guard, mcp_inflight.impl.server, mcp_inflight.impl.http;"
        "print(any(m.startswith('opentelemetry') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- many workers: a lease lost --------------------------------------------------------------


def test_a_lost_lease_is_an_event_of_the_request_and_counted():
    """One worker of the Redis-backed runtime, in this process; another writer takes the claim
    of a running request's id in the store, so the worker's next renewal is refused: its lease
    is lost, the request's span says so, and its handler is cancelled."""
    import os

    import httpx

    redis_client = pytest.importorskip("redis", reason="needs redis (the test extra)")

    from mcp_inflight.impl.http import create_app
    from mcp_inflight.serve import demo_server
    from support.redis_workers import REDIS_SERVER, Redis

    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed")
    store = Redis()
    tel = Telemetry()
    server = demo_server()
    server.observer = tel.observer
    try:
        with serve(create_app(server, redis=store.url, lease_ms=600)) as url:

            async def main():
                async with httpx.AsyncClient(timeout=30) as c:
                    h = await session(c, url)
                    sid = h["mcp-session-id"]
                    msg = call(9, "A", steps=30, delay=0.1)
                    async with c.stream("POST", url, headers=h, json=msg) as resp:
                        body = b""
                        async for chunk in resp.aiter_bytes():
                            body += chunk
                            if b"notifications/progress" in body and b"taken" not in body:
                                key = f"mcpi:{{{sid}}}:inflight:i9"
                                r = redis_client.Redis.from_url(store.url)
                                assert r.get(key) is not None
                                r.set(key, b"someone-else")
                                body += b"taken"
                    return body

            body = asyncio.run(main())
    finally:
        store.close()
    assert b"lease lost" in body
    calls = [s for s in tel.spans() if s.attributes["mcp.method.name"] == "tools/call"]
    (span,) = calls
    (lost,) = [e for e in span.events if e.name == "mcp_inflight.lease_lost"]
    assert "refused" in lost.attributes["mcp_inflight.reason"]
    assert lost.attributes["mcp_inflight.state"] == "in_flight"
    assert [a for a, _, _ in tel.events()[-1]][:2] == ["arrive", "admit"]
    (worker,) = {k for (name, k) in tel.metrics() if name == "mcp_inflight.leases.lost"}
    assert tel.metrics()[("mcp_inflight.leases.lost", worker)] == 1


# --- the stdio guard ---------------------------------------------------------------------------


def test_the_stdio_guard_reports_through_the_same_hook():
    """The SDK's server on the streams its stdio transport would hand it (memory streams in
    this process), behind ``guard_stdio(..., observer=...)``: a duplicate refused."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCNotification, JSONRPCRequest

    from mcp_inflight.guard import guard_stdio
    from support.sdk_server import build_server

    tel = Telemetry()
    low = build_server()._lowlevel_server

    def request(rid, method, params):
        return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=rid, method=method, params=params))

    async def main():
        to_server, server_reads = anyio.create_memory_object_stream(100)
        server_writes, from_server = anyio.create_memory_object_stream(100)
        read, write = guard_stdio(server_reads, server_writes, observer=tel.observer)
        got = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(low.run, read, write, low.create_initialization_options())
            init = init_params(capabilities={"elicitation": {}})
            await to_server.send(request(0, "initialize", init))
            got.append((await from_server.receive()).message)
            note = JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
            await to_server.send(SessionMessage(note))
            slow = call(5, "A")["params"]
            await to_server.send(request(5, "tools/call", slow))
            await anyio.sleep(0.3)
            await to_server.send(
                request(5, "tools/call", {**slow, "_meta": {"progressToken": "B"}})
            )
            with anyio.fail_after(10):
                while True:
                    m = (await from_server.receive()).message
                    got.append(m)
                    if getattr(m, "id", None) == 5 and hasattr(m, "result"):
                        break
            tg.cancel_scope.cancel()
        return got

    got = anyio.run(main)
    refusals = [m for m in got if hasattr(m, "error") and m.id is None]
    assert len(refusals) == 1 and refusals[0].error.code == -32600
    per_method = [
        (s.attributes["mcp.method.name"], [e.attributes["mcp_inflight.action"] for e in s.events])
        for s in tel.spans()
    ]
    assert per_method == [
        ("initialize", ["arrive", "admit", "respond"]),
        ("tools/call", ["arrive", "admit", "respond"]),
        ("tools/call", ["arrive", "refuse"]),
    ]
    assert all(
        s.attributes["mcp_inflight.model.profile"] == "2025-11-25 stdio" for s in tel.spans()
    )
    assert all("mcp.session.id" not in s.attributes for s in tel.spans())
