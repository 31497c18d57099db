"""Load and faults: the Streamable HTTP app of ``mcp-inflight serve`` under many sessions at once.

uvicorn runs the app with the demo tools (``mcp_inflight.serve.demo_server``, built as ``serve``
builds it, plus the ``hold``/``release`` pair of ``tests/support/http_server.py``) on a loopback port in a thread of this process, so that its registries can be read
afterwards.  The clients are httpx async clients speaking raw JSON-RPC (the ids are ours).

Per session (all sessions at once, all calls of a session at once), 20 calls:

* 16 originals under ids ``1..8`` and ``"1".."8"`` (the same ids in every session, and ``7`` and
  ``"7"`` in flight together: ids keep their JSON type and sessions do not share ids):
  ``ask`` calls that stay in flight until the client answers their elicitation, ``slow`` calls
  read to the end, and ``slow`` calls whose stream the client aborts after its first progress;
* 4 duplicates (20%): a ``hold`` call under the id of an ``ask`` that is in flight (sent once
  that ``ask``'s elicitation has arrived on its own stream, so the original is surely in flight).
  The client answers the elicitation once the duplicate's status is in.  A server that admits
  the duplicate holds it until the client releases it, and the client does that only once the
  original's response has shown up (on the original's stream or on the duplicate's), so the
  duplicate is in flight whenever the original answers, however slow the machine: whether a
  misrouting server misroutes does not depend on timing.

Every call's arguments carry a label unique over the run, and every progress token is unique,
so each message read on a stream tells whose it is.  Afterwards: every admitted, unaborted call
got exactly one response, on its own stream, with its own id (typed) and its own result; every
duplicate got 409 with a JSON-RPC -32600 body (``id: null``, ``data.id`` naming the id); no
stream carried a message of another request (zero misrouted); every session's core, its
pending server-to-client requests and its handler tasks are empty; every id can be used again;
after DELETE no session is left.

The same checks run against the app with an ``unguarded`` core (they must fail there); a
2026-07-28 run checks that closed streams cancel their handlers under load; and
``bench/runtime.py`` runs end to end, briefly.
"""

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mcp_inflight.impl import sse
from mcp_inflight.impl.http import create_app
from support.http_server import Running, build_server, sse_stream

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent

SESSIONS = 50
IDS = [*range(1, 9), *(str(k) for k in range(1, 9))]  # 16 ids: 1..8 and "1".."8"
ASK = {1, "2", 3, "4"}  # each gets a duplicate
ABORT = {5, "6"}  # stream aborted after its first progress
SLOW_STEPS, SLOW_DELAY = 3, 0.05
# > 3 s left after the abort: the server sees the disconnect before the next step even when
# the machine is busy (each aborted call's later messages must be dropped, and counted)
ABORT_STEPS, ABORT_DELAY = 5, 0.8
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "load", "version": "1"},
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def same_id(a, b) -> bool:
    return type(a) is type(b) and a == b


class Call:
    """One tools/call on its own POST: what was sent and every message its stream carried."""

    def __init__(self, sess: int, rid, kind: str):
        self.sess, self.rid, self.kind = sess, rid, kind
        self.label = f"s{sess}-{type(rid).__name__}{rid}-{kind}"
        self.token = f"tok-{self.label}"
        self.status = None
        self.body = None  # a non-SSE body (the 409)
        self.msgs = []
        self.misrouted = []
        self.hung = False
        self.answered = asyncio.Event()  # the HTTP status is in
        self.hang = 30.0  # a held duplicate holds at most this long

    def body_json(self):
        args = {"label": self.label}
        if self.kind == "ask":
            name, args["delay"] = "ask", 0.0
        elif self.kind == "dup":
            name, args["timeout"] = "hold", self.hang
        else:
            name = "slow"
            steps, delay = (
                (ABORT_STEPS, ABORT_DELAY) if self.kind == "abort" else (SLOW_STEPS, SLOW_DELAY)
            )
            args.update(steps=steps, delay=delay)
        return {
            "jsonrpc": "2.0",
            "id": self.rid,
            "method": "tools/call",
            "params": {"name": name, "arguments": args, "_meta": {"progressToken": self.token}},
        }

    def own_response(self, m) -> bool:
        return ("result" in m or "error" in m) and self.judge(m) is None

    def judge(self, m) -> str | None:
        """Why message ``m`` does not belong on this call's stream, or None if it does."""
        method = m.get("method")
        if method == "notifications/progress":
            p = m["params"]
            if p.get("progressToken") != self.token or self.label not in p.get("message", ""):
                return "progress of another request"
        elif method == "notifications/message":
            if self.label not in str(m["params"].get("data")):
                return "log line of another request"
        elif method == "elicitation/create":
            if self.kind != "ask" or self.label not in m["params"].get("message", ""):
                return "elicitation of another request"
        elif "result" in m or "error" in m:
            if not same_id(m.get("id"), self.rid):
                return f"response for id {m.get('id')!r}"
            want = {"ask": f"ask:{self.label}:accept", "dup": f"held:{self.label}"}.get(
                self.kind, f"done:{self.label}"
            )
            content = (m.get("result") or {}).get("content") or [{}]
            if content[0].get("text") != want:
                return f"result {content[0].get('text')!r}, not {want!r}"
        else:
            return f"unexpected message {m}"
        return None


async def post_call(client, url, headers, call: Call, on_message=None, hang: float = 30.0):
    """POST ``call``; read its SSE stream message by message (or its one JSON body).  A stream
    still open after ``hang`` seconds is given up and the call marked hung."""
    try:
        await asyncio.wait_for(_post_call(client, url, headers, call, on_message), hang)
    except TimeoutError:
        call.hung = True


async def _post_call(client, url, headers, call: Call, on_message):
    async with client.stream("POST", url, json=call.body_json(), headers=headers) as r:
        call.status = r.status_code
        call.answered.set()
        if not r.headers.get("content-type", "").startswith("text/event-stream"):
            call.body = json.loads(await r.aread())
            return
        async for m in sse_stream(r):
            call.msgs.append(m)
            why = call.judge(m)
            if why:
                call.misrouted.append(why)
            if on_message is not None and await on_message(m) == "abort":
                return  # leaving the block closes the connection mid-stream


async def one_session(client, url, sess: int, calls: list, dups: list, hang: float):
    r = await client.post(
        url,
        json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT},
        headers=ACCEPT,
    )
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    h = {**ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
    r = await client.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h
    )
    assert r.status_code == 202

    mine = [
        Call(sess, rid, "ask" if rid in ASK else "abort" if rid in ABORT else "slow") for rid in IDS
    ]
    calls.extend(mine)

    async def run(call: Call):
        dup = dup_task = None
        released = False

        async def release():
            nonlocal released
            if released or dup is None or dup.status != 200:
                return  # nothing admitted to release (a refused duplicate holds nothing)
            released = True
            body = {
                "jsonrpc": "2.0",
                "id": f"release-{dup.label}",
                "method": "tools/call",
                "params": {"name": "release", "arguments": {"label": dup.label}},
            }
            rr = await client.post(url, json=body, headers=h)
            assert rr.status_code == 200, rr.text

        async def on_dup_message(m):
            if call.own_response(m):  # the original's response, on the duplicate's stream
                await release()
            return None

        async def on_message(m):
            nonlocal dup, dup_task
            if call.kind == "abort" and m.get("method") == "notifications/progress":
                return "abort"
            if call.kind == "ask" and m.get("method") == "elicitation/create":
                # the original is in flight (its elicitation is pending): send the duplicate
                # and answer the elicitation once the duplicate's status is in
                dup = Call(sess, call.rid, "dup")
                dup.hang = hang
                dups.append(dup)
                dup_task = asyncio.create_task(
                    post_call(client, url, h, dup, on_dup_message, hang=hang)
                )
                await asyncio.wait(
                    [asyncio.create_task(dup.answered.wait()), dup_task],
                    return_when=asyncio.FIRST_COMPLETED,
                )
                answer = {
                    "jsonrpc": "2.0",
                    "id": m["id"],
                    "result": {"action": "accept", "content": {"ok": True}},
                }
                ra = await client.post(url, json=answer, headers=h)
                assert ra.status_code == 202, ra.text
            return None

        await post_call(client, url, h, call, on_message, hang=hang)
        if dup_task is not None:
            if any(call.own_response(m) for m in call.msgs):
                await release()  # the original answered on its own stream
            await dup_task

    await asyncio.gather(*(run(c) for c in mine))
    return sid, h


async def reuse_all(client, url, h) -> list:
    """Every id again (echo), all at once: each must be admitted and answered."""

    async def one(rid):
        body = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"again-{rid!r}"}},
        }
        r = await client.post(url, json=body, headers=h)
        msgs = sse.messages(r.text)
        ok = (
            r.status_code == 200
            and len(msgs) == 1
            and same_id(msgs[0].get("id"), rid)
            and msgs[0]["result"]["content"][0]["text"] == f"again-{rid!r}"
        )
        return None if ok else (rid, r.status_code, r.text[:200])

    return [x for x in await asyncio.gather(*(one(rid) for rid in IDS)) if x is not None]


def wait_until(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def run_load(url, sessions: int, hang: float):
    """The load: ``sessions`` sessions at once, each with its 20 calls at once."""
    calls, dups = [], []

    async def main():
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            return await asyncio.gather(
                *(one_session(client, url, k, calls, dups, hang) for k in range(sessions))
            )

    return asyncio.run(main()), calls, dups


def faults(calls, dups) -> dict:
    """What went wrong on the client's side, by kind (every list empty when all is well)."""
    out = {
        "misrouted": [],
        "hung": [],
        "status": [],
        "responses": [],
        "stream": [],
        "duplicate": [],
    }
    for c in calls + dups:
        out["misrouted"] += [(c.label, w) for w in c.misrouted]
        if c.hung:
            out["hung"].append(c.label)
    for c in calls:
        if c.status != 200:
            out["status"].append((c.label, c.status, c.body))
            continue
        responses = [m for m in c.msgs if "result" in m or "error" in m]
        progress = [m for m in c.msgs if m.get("method") == "notifications/progress"]
        if c.kind == "abort":
            if responses or len(progress) != 1:  # aborted at its first progress
                out["stream"].append((c.label, c.msgs))
            continue
        if len(responses) != 1 or c.msgs[-1] is not responses[0]:
            out["responses"].append((c.label, len(responses), c.msgs))  # exactly one, last
            continue
        if c.kind == "slow":
            logs = [m for m in c.msgs if m.get("method") == "notifications/message"]
            if len(progress) != SLOW_STEPS or len(logs) != SLOW_STEPS:
                out["stream"].append((c.label, c.msgs))
        elif [m["method"] for m in c.msgs if "method" in m] != ["elicitation/create"]:
            out["stream"].append((c.label, c.msgs))
    for d in dups:
        body = d.body or {}
        err = body.get("error") or {}
        if not (
            d.status == 409
            and d.msgs == []
            and "id" in body
            and body["id"] is None
            and err.get("code") == -32600
            and same_id((err.get("data") or {}).get("id"), d.rid)
        ):
            out["duplicate"].append((d.label, d.status, d.body, d.msgs))
    return out


@pytest.fixture(scope="module")
def srv():
    # no event store: an aborted call's later messages are dropped by the core, and counted
    # (with the default store they are kept for a resume: tests/test_resume.py)
    app = create_app(build_server(), "/mcp", event_store=None)
    s = Running(app)
    yield s
    s.stop()


def test_load_and_faults(srv):
    url = srv.url
    app = srv.app
    started = time.monotonic()
    # all 1,000 calls are sent at once, so a call's stream stays open for as long as the whole
    # load takes to be served; a call is judged hung only after two minutes, far above that
    # even on a busy machine
    sessions, calls, dups = run_load(url, SESSIONS, hang=120.0)
    load_s = time.monotonic() - started

    # --- every call judged -------------------------------------------------------------
    assert len(calls) == SESSIONS * len(IDS)
    assert len(dups) == SESSIONS * len(ASK)
    found = faults(calls, dups)
    assert {k: len(v) for k, v in found.items()} == {k: 0 for k in found}, {
        k: v[:3] for k, v in found.items() if v
    }

    # --- the server's registries ---------------------------------------------------------
    live = [s for s in app.sessions.values()]
    assert len(live) == SESSIONS
    assert wait_until(lambda: all(s.idle() for s in live), 15), [
        (s.sid, s.core.registries(), s.core.live(), len(s.pending), len(s.tasks))
        for s in live
        if not s.idle()
    ]
    assert wait_until(lambda: app.live_requests() == 0, 5), app.live_requests()
    for s in live:
        assert s.core.empty() and s.core.live() == []
        assert s.core.registries() == {"inflight": {}, "stream": {}, "waiter": {}}
        assert s.pending == {} and s.tasks == {}
    # the server saw every abort: each aborted call's later messages (its response at least)
    # were dropped by the core, not written
    dropped = sum(s.core.dropped for s in live)
    assert dropped >= SESSIONS * len(ABORT), dropped

    # --- every id is free again; then DELETE ends every session ----------------------------
    async def after():
        async with httpx.AsyncClient(
            timeout=30, limits=httpx.Limits(max_connections=None)
        ) as client:
            bad = await asyncio.gather(*(reuse_all(client, url, h) for _, h in sessions))
            codes = await asyncio.gather(*(client.delete(url, headers=h) for _, h in sessions))
            return [b for bs in bad for b in bs], [r.status_code for r in codes]

    bad, codes = asyncio.run(after())
    assert bad == [], bad[:5]
    assert codes == [200] * SESSIONS
    assert app.sessions == {}
    assert all(s.idle() for s in live)
    print(
        f"\nload: {SESSIONS} sessions x {len(IDS) + len(ASK)} calls ({len(calls)} admitted, "
        f"{len(dups)} duplicates refused, {SESSIONS * len(ABORT)} aborted, {dropped} messages dropped) "
        f"in {load_s:.1f} s"
    )


@pytest.mark.oracle_out_of_scope(
    "under this load the online check beside the server may drop events when its queue is "
    "full (it then calls nothing clean, and may see no violation); the test's own checks "
    "judge the misrouting"
)
def test_the_checks_catch_an_unguarded_server(monkeypatch):
    """The same load, smaller, against the same app whose sessions run the model's ``unguarded``
    design (overwrite on arrival, remove by id: the official SDKs' keying): the checks above
    must see duplicates admitted, messages misrouted and requests left without a response."""
    import functools

    import mcp_inflight.impl.server as server_mod
    from mcp_inflight.model import DESIGNS

    monkeypatch.setattr(
        server_mod,
        "SessionCore",
        functools.partial(server_mod.SessionCore, design=DESIGNS["unguarded"]),
    )
    running = Running(create_app(build_server(), "/mcp"))
    try:
        # a held duplicate holds, and a call counts as hung, after 10 s: the expected hangs
        # cost that long, and a busy machine serves the rest well within it
        _, calls, dups = run_load(running.url, 4, hang=10.0)
    finally:
        running.stop()
    found = faults(calls, dups)
    asks = [c for c in calls if c.kind == "ask"]
    assert len(dups) == len(asks) == 4 * len(ASK)
    assert len(found["duplicate"]) == len(dups)  # every duplicate admitted, none refused
    # every duplicate was in flight when its original answered (it is held until then), so the
    # original's response went by id to the duplicate's stream, and the original never got it
    mine = {(c.sess, c.rid): c for c in asks}
    for d in dups:
        original = mine[(d.sess, d.rid)]
        assert d.status == 200 and any(original.own_response(m) for m in d.msgs), (d.label, d.msgs)
        assert d.misrouted, (d.label, d.msgs)
        assert not any(original.own_response(m) for m in original.msgs), original.msgs
    # ... and each original's POST hung or ended without a response
    left = {label for label in found["hung"]} | {x[0] for x in found["responses"]}
    assert {c.label for c in asks} <= left, left
    assert len(found["misrouted"]) >= len(dups)


@pytest.mark.skipif(
    shutil.which("wrk") is None, reason="wrk is not installed (apt-get install wrk)"
)
def test_bench_runtime_runs_and_checks_every_response(tmp_path):
    """bench/runtime.py end to end, short: every server starts, every response is checked, the
    ratios are printed and the JSON carries them."""
    out = tmp_path / "runtime.json"
    p = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "runtime.py"),
            "--rounds",
            "1",
            "--duration",
            "1",
            "--warmup",
            "0",
            "--sample",
            "3",
            "--core-iterations",
            "2000",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "throughput ours / sdk:" in p.stdout and "throughput ours / bare:" in p.stdout
    figures = json.loads(out.read_text())
    assert figures["core"]["lifecycle_us"] > 0
    rows = {r["server"]: r for r in figures["http"]}
    assert set(rows) == {"ours", "sdk", "bare"}
    for r in rows.values():
        assert r["valid"] and r["requests"] > 0 and r["ok"] == r["requests"] and r["sample_ok"] == 6
    assert set(rows["ours"]["ratios"]) == {"sdk", "bare"}


MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
MODERN_POSTS = 300


def test_modern_closes_cancel_under_load():
    """2026-07-28 (no sessions): 300 concurrent POSTs, all under id 1, of a tool that holds until
    released; every other client closes its stream after the first progress (which is
    cancellation on this revision), the rest release themselves by another POST and read their
    response.  Every closed request's handler is cancelled, every other one answered on its own
    stream, and no handler is left running (the app's live-request count is back to 0)."""
    from support.http_server import build_server

    server = build_server()  # the demo tools plus hold/release, which record their end
    running = Running(create_app(server, "/mcp"))
    h = {**ACCEPT, "mcp-protocol-version": MODERN}
    seen = []  # the app's live-request count, read while requests are held

    async def one(client, k):
        label = f"m{k}"
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "hold",
                "arguments": {"label": label, "timeout": 30},
                "_meta": {**MODERN_META, "progressToken": label},
            },
        }
        async with client.stream("POST", running.url, json=body, headers=h) as r:
            assert r.status_code == 200, (r.status_code, await r.aread())
            stream = sse_stream(r)
            msgs = []
            async for m in stream:
                msgs.append(m)
                break
            seen.append(running.app.live_requests())
            if k % 2 == 0:
                return msgs  # closing the stream: cancellation
            rel = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "release", "arguments": {"label": label}, "_meta": MODERN_META},
            }
            rr = await client.post(running.url, json=rel, headers=h)
            assert rr.status_code == 200, rr.text
            msgs += [m async for m in stream]
            return msgs

    async def main():
        async with httpx.AsyncClient(
            timeout=60, limits=httpx.Limits(max_connections=None)
        ) as client:
            return await asyncio.wait_for(
                asyncio.gather(*(one(client, k) for k in range(MODERN_POSTS))), 90
            )

    try:
        results = asyncio.run(main())
        closed = {f"m{k}" for k in range(0, MODERN_POSTS, 2)}
        answered = {f"m{k}" for k in range(1, MODERN_POSTS, 2)}
        assert wait_until(lambda: len(server.events) == MODERN_POSTS, 10), len(server.events)
        # no POST has a session to look into: the app's count shows every request finished
        assert wait_until(lambda: running.app.live_requests() == 0, 10), running.app.live_requests()
    finally:
        running.stop()
    assert max(seen) > 0, seen
    for k, msgs in enumerate(results):
        label = f"m{k}"
        first = msgs[0]
        assert (
            first["method"] == "notifications/progress"
            and first["params"]["progressToken"] == label
        ), msgs
        if k % 2:
            assert len(msgs) == 2 and same_id(msgs[1]["id"], 1), msgs
            assert msgs[1]["result"]["content"][0]["text"] == f"held:{label}", msgs
        else:
            assert len(msgs) == 1
    assert {lab for e, lab in server.events if e == "cancelled"} == closed
    assert {lab for e, lab in server.events if e == "done"} == answered


def test_cancel_and_delete_races_over_real_sockets():
    """A tools/call raced by its notifications/cancelled, and by its session's DELETE, many at
    once over real HTTP: every POST ends (none hangs), nothing stays live, every id is free."""
    server = build_server()
    running = Running(create_app(server, "/mcp"))
    rounds, width = 300, 30

    async def session(client):
        r = await client.post(
            running.url,
            json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT},
            headers=ACCEPT,
        )
        h = {**ACCEPT, "mcp-session-id": r.headers["mcp-session-id"]}
        await client.post(
            running.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h
        )
        return h

    def call(rid):
        return {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"r{rid}"}},
        }

    async def cancel_race(client, h, rid):
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid},
        }
        a, b = await asyncio.gather(
            client.post(running.url, json=call(rid), headers=h),
            client.post(running.url, json=cancel, headers=h),
        )
        return a.status_code

    async def delete_race(client):
        h = await session(client)
        a, b = await asyncio.gather(
            client.post(running.url, json=call(1), headers=h), client.delete(running.url, headers=h)
        )
        return a.status_code, b.status_code

    async def main():
        limits = httpx.Limits(max_connections=None)
        async with httpx.AsyncClient(timeout=20, limits=limits) as client:
            h = await session(client)
            for start in range(0, rounds, width):
                statuses = await asyncio.gather(
                    *(cancel_race(client, h, rid) for rid in range(start, start + width))
                )
                assert set(statuses) <= {200, 202}, statuses
            deleted = await asyncio.gather(*(delete_race(client) for _ in range(rounds)))
            assert all(b == 200 for _, b in deleted)
            assert wait_until(lambda: running.app.live_requests() == 0, 10), (
                running.app.live_requests()
            )
            for rid in range(rounds):  # every id is free again
                r = await client.post(running.url, json=call(rid), headers=h)
                assert r.status_code == 200, (rid, r.status_code, r.text[:200])

    try:
        asyncio.run(asyncio.wait_for(main(), 120))  # a hung POST fails here
        assert not running.app._left and len(running.app.sessions) == 1
    finally:
        running.stop()
