"""Regressions of the many-workers mode (each failed before its fix): the session and
in-flight caps kept across workers, every key of a session with a TTL, a resume of a stream
that is not the session's refused at once, a huge event number refused as bad input, values
from the wire kept out of the log's line structure, and a silent store answered with 503 and
leases declared lost.  Real ``redis-server`` and real worker processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time

import httpx
import pytest
from test_redis_workers import INIT, H, call, events, session

from mcp_inflight.impl.streams import SERVER_BUSY, TOO_MANY_IN_FLIGHT
from support.redis_workers import REDIS_SERVER, Pool, Redis

pytestmark = pytest.mark.skipif(
    not os.path.exists(REDIS_SERVER), reason="redis-server is not installed"
)


@pytest.fixture(scope="module")
def workers(redis):
    pool = Pool(
        3,
        "--redis",
        redis.url,
        "--lease-ms",
        "1500",
        "--max-sessions",
        "5",
        "--max-in-flight",
        "4",
    )
    try:
        yield pool
    finally:
        pool.stop()


def _delete(c: httpx.Client, url: str, h: dict) -> None:
    c.delete(url, headers=h)


def test_the_session_cap_holds_across_workers(workers):
    """A cap of 5 sessions with 3 workers: 5 of 9 initializes succeed, then 503.  Before: each
    worker counted its own, and all 9 (up to 15) were made."""
    made, refused = [], 0
    with httpx.Client(timeout=10) as c:
        for k in range(9):
            r = c.post(workers[k % 3].url, headers=H, json=INIT)
            if r.status_code == 200:
                made.append(
                    (workers[k % 3].url, {**H, "mcp-session-id": r.headers["mcp-session-id"]})
                )
            else:
                assert r.status_code == 503 and r.headers.get("retry-after")
                refused += 1
        assert len(made) == 5 and refused == 4
        for url, h in made:  # ended sessions no longer count
            _delete(c, url, h)
        r = c.post(workers[1].url, headers=H, json=INIT)
        assert r.status_code == 200
        _delete(c, workers[1].url, {**H, "mcp-session-id": r.headers["mcp-session-id"]})


def test_the_in_flight_cap_holds_across_workers(workers):
    """A cap of 4 requests in flight in a session, 9 long calls spread over 3 workers at once:
    4 admitted, 5 refused with 429.  Before: each worker counted its own (up to 12)."""

    async def go():
        async with httpx.AsyncClient(timeout=20) as c:
            r = await c.post(workers[0].url, headers=H, json=INIT)
            h = {**H, "mcp-session-id": r.headers["mcp-session-id"]}
            statuses = []

            async def one(k):
                body = call(100 + k, "slow", {"label": f"c{k}", "steps": 30, "delay": 0.1})
                async with c.stream("POST", workers[k % 3].url, headers=h, json=body) as resp:
                    statuses.append(resp.status_code)

            await asyncio.gather(*(one(k) for k in range(9)))
            await c.delete(workers[0].url, headers=h)
            return statuses

    statuses = asyncio.run(go())
    assert sorted(statuses) == [200] * 4 + [429] * 5, statuses


def _store_ops(pool: Pool) -> dict[str, int]:
    """The store operations a stopped worker counted (its last line: ``stopping: store``)."""
    line = pool.wait_for(r"stopping: store (\{.*\})").group(1)
    return json.loads(line)["ops"]


def test_a_worker_at_the_cap_refuses_before_asking_the_store(redis):
    """A worker whose session has ``max_in_flight`` handlers running here answers the next
    request with 429 from its own count, before the store's claim (one round trip saved).  Two
    long calls seen running (each sent its first progress), a third on the same worker: 429
    with the busy error under its id; after both end, a fourth is admitted.  The worker's
    count of claims, printed when it stops, is that of the three admitted calls: the refused
    one never reached the store (the store refuses too, but only after a claim is counted)."""
    pool = Pool(1, "--redis", redis.url, "--lease-ms", "1500", "--max-in-flight", "2")
    try:
        with httpx.Client(timeout=20) as c:
            sid, h = session(c, pool[0].url)
            with contextlib.ExitStack() as running:
                for k in (1, 2):
                    body = call(k, "slow", {"label": f"s{k}", "steps": 10, "delay": 0.1}, f"t{k}")
                    r = running.enter_context(c.stream("POST", pool[0].url, headers=h, json=body))
                    assert r.status_code == 200
                    lines = r.iter_lines()
                    assert any('"notifications/progress"' in x for x in lines)  # it runs
                    running.callback(lambda lines=lines: [*lines])  # read to its end
                busy = c.post(pool[0].url, headers=h, json=call(3, "echo", {"text": "x"}))
                assert busy.status_code == 429, busy.text
                err = busy.json()
                assert err["id"] == 3 and err["error"]["code"] == SERVER_BUSY
                assert err["error"]["message"] == TOO_MANY_IN_FLIGHT
            r = c.post(pool[0].url, headers=h, json=call(4, "echo", {"text": "y"}))
            assert r.status_code == 200 and "y" in r.text
            _delete(c, pool[0].url, h)
    finally:
        pool.stop()
    assert _store_ops(pool)["claim"] == 3


def test_every_key_of_a_session_expires(workers, redis):
    """fence, refused, the in-flight set and the set of streams carry the session's TTL (before:
    fence and refused never expired, so every abandoned session leaked them)."""
    with httpx.Client(timeout=10) as c:
        sid, h = session(c, workers[0].url)
        r = c.post(workers[1].url, headers=h, json=call(1, "echo", {"text": "x"}))
        assert r.status_code == 200
        store = redis.client()
        store.incr(f"mcpi:{{{sid}}}:refused")  # as the scripts count a stale owner's step
        r = c.post(workers[2].url, headers=h, json=call(2, "slow", {"label": "t", "steps": 1}))
        assert r.status_code == 200
        keys = [k.decode() for k in store.keys(f"mcpi:{{{sid}}}:*")]
        assert {f"mcpi:{{{sid}}}:{k}" for k in ("session", "fence")} <= set(keys), keys
        # a refusal through the scripts gives the counter the session's TTL
        store.delete(f"mcpi:{{{sid}}}:refused")
        store.set(f"mcpi:{{{sid}}}:inflight:i9", "99:nobody", px=60_000)
        from mcp_inflight.impl.redis_store import RedisStore

        async def refuse():
            st = RedisStore(redis.url, "tester", 1500, 3_600_000)
            await st.load()
            await st.release(st.held(sid, ("int", 9), 1))
            await st.close()

        asyncio.run(refuse())
        store.delete(f"mcpi:{{{sid}}}:inflight:i9")
        keys = [k.decode() for k in store.keys(f"mcpi:{{{sid}}}:*")]
        assert f"mcpi:{{{sid}}}:refused" in keys
        no_ttl = [k for k in keys if store.pttl(k) < 0]
        assert no_ttl == [], no_ttl
        _delete(c, workers[0].url, h)


def _worker_of(c: httpx.Client, url: str, h: dict) -> str:
    r = c.post(url, headers=h, json={"jsonrpc": "2.0", "id": 77, "method": "ping"})
    return r.headers["mcp-inflight-worker"]


def test_a_resume_of_a_stream_that_is_not_the_sessions_is_refused_at_once(workers):
    """Before: a ``Last-Event-ID`` naming a stream that never was (on a live worker), or
    another session's priming event, was followed forever on a connection of the store's
    pool."""
    with httpx.Client(timeout=5) as c:
        sid_a, ha = session(c, workers[0].url)
        sid_b, hb = session(c, workers[0].url)
        name = _worker_of(c, workers[0].url, ha)
        # session B's real stream, with its priming event
        with c.stream(
            "POST",
            workers[0].url,
            headers=hb,
            json=call(5, "slow", {"label": "b", "steps": 20, "delay": 0.1}),
        ) as r:
            b_event = next(x[3:].strip() for x in r.iter_lines() if x.startswith("id:"))
            for eid in (f"{name}~p999.1", b_event):
                t0 = time.monotonic()
                g = c.get(workers[1].url, headers={**ha, "last-event-id": eid})
                assert g.status_code == 400, (eid, g.status_code)
                assert time.monotonic() - t0 < 3
        _delete(c, workers[0].url, ha)
        _delete(c, workers[0].url, hb)


def test_a_huge_event_number_is_bad_input_not_a_store_failure(workers):
    with httpx.Client(timeout=5) as c:
        sid, h = session(c, workers[0].url)
        name = _worker_of(c, workers[0].url, h)
        for eid in (f"{name}~p1." + "9" * 30, f"{name}~p1." + "9" * 5000, "x" * 3000):
            g = c.get(workers[1].url, headers={**h, "last-event-id": eid})
            assert g.status_code == 400, (eid[:40], g.status_code, g.text[:200])
            assert len(g.text) < 400  # the id is not echoed whole
        _delete(c, workers[0].url, h)


def test_a_forged_worker_name_never_reaches_the_log(workers):
    """An answer whose id names a 'worker' with a line break in it: before, after about 1.5 s
    of retries, the log got a line the client wrote."""
    with httpx.Client(timeout=5) as c:
        sid, h = session(c, workers[0].url)
        forged = "x\nmcp-inflight serve: FORGED LINE/1"
        r = c.post(workers[0].url, headers=h, json={"jsonrpc": "2.0", "id": forged, "result": {}})
        assert r.status_code == 202
        time.sleep(2.5)
        assert not any(line.startswith("mcp-inflight serve: FORGED") for line in workers.log)
        _delete(c, workers[0].url, h)


@pytest.mark.slow  # a stall of several seconds on purpose
def test_a_silent_store_fails_requests_fast_and_loses_leases():
    """Redis paused (SIGSTOP): a request gets 503 within the store timeout instead of waiting
    for the whole stall, and a call in flight has its lease declared lost."""
    r = Redis()
    pool = Pool(1, "--redis", r.url, "--lease-ms", "1500", "--store-timeout", "1")
    try:
        with httpx.Client(timeout=30) as c:
            sid, h = session(c, pool[0].url)
            with c.stream(
                "POST",
                pool[0].url,
                headers=h,
                json=call(1, "slow", {"label": "s", "steps": 60, "delay": 0.1}),
            ) as resp:
                assert resp.status_code == 200
                os.kill(r.proc.pid, signal.SIGSTOP)
                try:
                    t0 = time.monotonic()
                    ping = c.post(pool[0].url, headers=h, json=call(2, "echo", {"text": "x"}))
                    took = time.monotonic() - t0
                    assert ping.status_code == 503 and took < 3, (ping.status_code, took)
                    pool.wait_for("lease lost", timeout=6)
                finally:
                    os.kill(r.proc.pid, signal.SIGCONT)
    finally:
        pool.stop()
        r.close()


def test_event_streams_are_capped_per_session(redis):
    """A budget of 64 KiB of events per session: 40 calls of about 10 KiB of progress and logs each keep at most
    the budget in Redis, every call still gets all its messages live, and the log says the
    streams went on unkept.  Before: every event of every call was kept (about 400 KiB here)."""
    pool = Pool(1, "--redis", redis.url, "--max-event-bytes", str(64 * 1024))
    try:
        with httpx.Client(timeout=20) as c:
            sid, h = session(c, pool[0].url)
            for k in range(40):
                body = call(k, "slow", {"label": "e" * 1000, "steps": 5, "delay": 0}, token=f"t{k}")
                r = c.post(pool[0].url, headers=h, json=body)
                assert r.status_code == 200
                msgs = [m for m in events(r.text) if m.get("method") == "notifications/progress"]
                assert (
                    len(msgs) == 5
                    and events(r.text)[-1]["result"]["content"][0]["text"] == "done:" + "e" * 1000
                )
            store = redis.client()
            kept = sum(
                len(v)
                for key in store.smembers(f"mcpi:{{{sid}}}:streams")
                for _, fields in store.xrange(key)
                for v in [fields.get(b"d", b"")]
            )
            assert kept <= 64 * 1024, kept
            assert int(store.get(f"mcpi:{{{sid}}}:evbytes")) <= 64 * 1024
            pool.wait_for("over their budget", timeout=5)
            _delete(c, pool[0].url, h)
    finally:
        pool.stop()


def test_a_request_state_is_used_once_over_every_worker(workers):
    """2026-07-28: a retry's ``requestState`` accepted on one worker is refused as replayed on
    the others.  Before: each worker kept its own record, so it was accepted once per worker."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    h = {**H, "mcp-protocol-version": "2026-07-28"}
    params: dict = {"name": "ask", "arguments": {"label": "rs"}, "_meta": meta}
    with httpx.Client(timeout=10) as c:
        r = c.post(
            workers[0].url,
            headers=h,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        )
        result = events(r.text)[-1]["result"]
        (key,) = result["inputRequests"]
        retry = {
            **params,
            "requestState": result["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
        }
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry}
        first = c.post(workers[1].url, headers=h, json=body)
        assert "ask:rs:accept" in first.text, first.text
        for w in (workers[2], workers[0], workers[1]):
            again = c.post(w.url, headers=h, json=body)
            assert again.status_code == 400, (w.url, again.status_code, again.text[:200])
            assert events(again.text)[-1]["error"]["data"] == {"reason": "replayed"}


def test_one_live_reader_per_resumed_stream_across_workers(workers):
    """A POST stream on worker 0, resumed from its priming event on worker 1, then on worker 2:
    the newest reader takes over (as on one process) and the response is delivered once, to
    it; the older connections end.  Before: each reader received the whole stream."""
    import threading

    with httpx.Client(timeout=30) as c:
        sid, h = session(c, workers[0].url)
        got: dict[str, list] = {"post": [], "r1": [], "r2": []}
        primed = threading.Event()
        first: list[str] = []

        def read(name, method, url, headers, body=None):
            with httpx.Client(timeout=30) as cc:
                with cc.stream(method, url, headers=headers, json=body) as r:
                    for line in r.iter_lines():
                        if line.startswith("id:") and not first:
                            first.append(line[3:].strip())
                            primed.set()
                        if line.startswith("data:") and line[5:].strip():
                            got[name].append(line[5:].strip())

        body = call(21, "slow", {"label": "L", "steps": 30, "delay": 0.1}, "tl")
        threads = [threading.Thread(target=read, args=("post", "POST", workers[0].url, h, body))]
        threads[0].start()
        assert primed.wait(10)
        get_h = {**h, "last-event-id": first[0], "accept": "text/event-stream"}
        for name, w in (("r1", workers[1]), ("r2", workers[2])):
            t = threading.Thread(target=read, args=(name, "GET", w.url, get_h))
            t.start()
            threads.append(t)
            time.sleep(0.8)
        for t in threads:
            t.join(20)
        finals = {
            name: sum(1 for d in data if '"result"' in d and '"id":21' in d)
            for name, data in got.items()
        }
        assert finals == {"post": 0, "r1": 0, "r2": 1}, finals
        _delete(c, workers[0].url, h)
