"""Tasks kept in a real ``redis-server`` (``impl/redis_tasks.py``), seen from two workers: each
worker is a :class:`RedisTasks` on a connection of its own (the worker that created a task runs
its work and holds its lease); one test runs the creating worker as a separate process and
SIGKILLs it.  A task created through worker 1 is read, listed, answered and cancelled through
worker 2; another owner gets the same refusal as an unknown id; a late completion after a
cancel on the other worker leaves ``cancelled`` (and the same steps done as an unscripted
read-then-write overwrite it: the test can fail); a dead runner's task reads ``failed`` within
its lease."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from mcp_inflight.impl.redis_store import WORKER_CHANNEL, RedisStore
from mcp_inflight.impl.redis_tasks import LOST, STATUS_CHANNEL, RedisTasks
from mcp_inflight.impl.tasks import NotReady, TaskError
from support.redis_workers import REDIS_SERVER, serve_pair
from support.sessions import ACCEPT, initialize

pytestmark = pytest.mark.skipif(
    not os.path.exists(REDIS_SERVER), reason="redis-server is not installed"
)

OLD, NEW = "2025-11-25", "2026-07-28"
A, B = "session-a", "session-b"
K = "session-k"  # the killed runner's


def run(coro):
    return asyncio.run(coro)


async def _pair(url: str, lease_ms: int = 3_000) -> tuple[RedisTasks, RedisTasks]:
    one = RedisTasks(RedisStore(url, "w1", lease_ms))
    two = RedisTasks(RedisStore(url, "w2", lease_ms))
    await one.redis.flushall()
    return one, two


async def _close(*ws: RedisTasks) -> None:
    for w in ws:
        await w.store.close()


async def _messages(w: RedisTasks, channel: str):
    p = w.redis.pubsub()
    await p.subscribe(channel)
    await p.get_message(timeout=1)  # the subscription's confirmation
    return p


async def _drain(p, n: int) -> list[dict]:
    out = []
    deadline = time.monotonic() + 2
    while len(out) < n and time.monotonic() < deadline:
        m = await p.get_message(ignore_subscribe_messages=True, timeout=0.2)
        if m is not None:
            out.append(json.loads(m["data"]))
    return out


def test_a_task_made_on_one_worker_is_read_listed_and_awaited_on_another(redis):
    async def go():
        one, two = await _pair(redis.url)
        t = await one.create(A, OLD, 60_000)
        tid = t["taskId"]
        assert t["status"] == "working" and t["ttl"] == 60_000 and t["createdAt"]
        got = await two.get(A, tid)
        assert got["status"] == "working" and got["createdAt"] == t["createdAt"]
        assert [v["taskId"] for v in await two.list(A)] == [tid]
        with pytest.raises(NotReady):
            await two.result_now(A, tid)
        waiting = asyncio.create_task(two.result(A, tid))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        assert await one.finish(tid, True, {"content": [], "isError": False})
        status, res = await asyncio.wait_for(waiting, 2)
        assert (status, res) == ("completed", {"content": [], "isError": False})
        # the result again, on every call, from either worker
        assert await one.result_now(A, tid) == (status, res)
        await _close(one, two)

    run(go())


def test_another_owner_gets_the_answer_of_an_unknown_id(redis):
    async def go():
        one, two = await _pair(redis.url)
        tid = (await one.create(A, OLD))["taskId"]
        errors = []
        for call in (two.get, two.cancel, two.answer, two.result_now):
            with pytest.raises(TaskError) as e:
                await call(B, tid)
            errors.append(str(e.value))
        with pytest.raises(TaskError) as e:
            await two.get(A, "no-such-task")
        assert set(errors) == {str(e.value).replace("no-such-task", tid)}
        assert await two.list(B) == []
        assert (await two.get(A, tid))["status"] == "working"  # untouched
        await _close(one, two)

    run(go())


def test_cancel_on_another_worker_is_at_once_sticky_and_reaches_the_runner(redis):
    async def go():
        one, two = await _pair(redis.url)
        tid = (await one.create(A, OLD))["taskId"]
        runner = await _messages(one, WORKER_CHANNEL + "w1")
        status = await _messages(one, STATUS_CHANNEL + A)
        view = await two.cancel(A, tid)
        assert view["status"] == "cancelled"
        told = await _drain(runner, 1)
        assert told and told[0]["task_cancel"] == tid and told[0]["token"] == one.held[tid][1]
        # the runner's late completion changes nothing
        assert not await one.finish(tid, True, {"late": True})
        assert (await two.get(A, tid))["status"] == "cancelled"
        assert await two.result_now(A, tid) == ("cancelled", None)
        with pytest.raises(TaskError, match="already cancelled"):
            await two.cancel(A, tid)
        assert [m["status"] for m in await _drain(status, 5)] == ["cancelled"]
        await runner.aclose()
        await status.aclose()
        await _close(one, two)

    run(go())


def test_a_read_then_write_without_the_script_overwrites_the_cancel(redis):
    """The hazard the scripts close: the runner reads ``working``, the other worker cancels,
    the runner writes ``completed``.  Done as plain commands, the cancel is lost; the scripted
    ``finish`` at the same point keeps it."""

    async def go():
        one, two = await _pair(redis.url)
        tid = (await one.create(A, OLD))["taskId"]
        key = one.task_key(A, tid)
        seen = (await one.redis.hget(key, "st")).decode()  # the runner's read
        await two.cancel(A, tid)  # the other worker, in between
        if seen == "working":  # the runner's write
            await one.redis.hset(key, mapping={"st": "completed", "res": "{}"})
        assert (await two.get(A, tid))["status"] == "completed"  # the cancel is lost

        tid = (await one.create(A, OLD))["taskId"]
        await two.cancel(A, tid)
        assert not await one.finish(tid, True, {})
        assert (await two.get(A, tid))["status"] == "cancelled"
        await _close(one, two)

    run(go())


def test_a_stale_token_is_refused(redis):
    async def go():
        one, two = await _pair(redis.url)
        tid = (await one.create(A, OLD))["taskId"]
        owner, tok = one.held[tid]
        two.held[tid] = (owner, str(int(tok) + 1))  # a worker that does not hold the task
        assert not await two.finish(tid, True, {})
        assert not await two.ask(tid)
        assert (await two.get(A, tid))["status"] == "working"
        await _close(one, two)

    run(go())


def test_the_extension_input_update_cancel_and_inlined_result_across_workers(redis):
    async def go():
        one, two = await _pair(redis.url)
        tid = (await one.create(A, NEW, 99_999_999))["taskId"]
        assert (await two.get(A, tid))["ttlMs"] == one.max_ttl_ms  # capped
        assert await one.ask(tid)
        assert (await two.get(A, tid))["status"] == "input_required"
        await two.answer(A, tid)  # tasks/update on worker 2
        assert (await one.get(A, tid))["status"] == "working"
        with pytest.raises(TaskError):
            await two.result_now(A, tid)  # not a method of the extension
        assert await two.list(A) == []  # nor is tasks/list
        runner = await _messages(one, WORKER_CHANNEL + "w1")
        assert await two.cancel(A, tid) == {}
        assert (await two.get(A, tid))["status"] == "working"  # recorded, not yet honoured
        assert [m["task_cancel"] for m in await _drain(runner, 1)] == [tid]
        assert await one.honour(tid)
        assert (await two.get(A, tid))["status"] == "cancelled"
        await runner.aclose()

        tid = (await one.create(A, NEW))["taskId"]
        assert not await one.honour(tid)  # no cancellation was asked
        await one.finish(tid, True, {"content": [{"type": "text", "text": "ok"}]})
        got = await two.get(A, tid)
        assert got["result"] == {"content": [{"type": "text", "text": "ok"}]}
        assert await two.cancel(A, tid) == {}  # a terminal task: acknowledged, unchanged
        assert (await two.get(A, tid))["status"] == "completed"
        await _close(one, two)

    run(go())


def test_one_status_message_per_change_in_order(redis):
    async def go():
        one, two = await _pair(redis.url)
        status = await _messages(two, STATUS_CHANNEL + A)
        tid = (await one.create(A, OLD))["taskId"]
        await one.ask(tid)
        await one.ask(tid)  # no change: nothing sent
        await two.answer(A, tid)
        await one.finish(tid, False, {"code": -32603, "message": "boom"})
        await one.finish(tid, True, {})  # terminal: nothing
        got = await _drain(status, 5)
        assert [(m["taskId"], m["status"]) for m in got] == [
            (tid, "input_required"),
            (tid, "working"),
            (tid, "failed"),
        ]
        await status.aclose()
        await _close(one, two)

    run(go())


def test_session_end_and_ttl_on_every_worker(redis):
    async def go():
        one, two = await _pair(redis.url)
        live = (await one.create(A, OLD))["taskId"]
        done = (await one.create(A, OLD))["taskId"]
        await one.finish(done, True, {})
        other = (await one.create(B, OLD))["taskId"]
        await two.end_session(A)
        assert (await one.state(A, live))["st"] == "cancelled"
        assert (await one.state(A, done))["st"] == "completed"
        for tid in (live, done):
            with pytest.raises(TaskError):
                await one.get(A, tid)
        assert await one.list(A) == []
        assert (await two.get(B, other))["status"] == "working"

        short = (await one.create(B, OLD, 300))["taskId"]
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                await two.get(B, short)
            except TaskError:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the task outlived its ttl")
        assert [v["taskId"] for v in await two.list(B)] == [other]
        await _close(one, two)

    run(go())


def test_a_request_state_used_on_one_worker_is_refused_on_another(redis):
    async def go():
        one = RedisStore(redis.url, "w1")
        two = RedisStore(redis.url, "w2")
        until = time.time() + 60
        assert await one.use_state("nonce-1", until)
        assert not await two.use_state("nonce-1", until)
        assert await two.use_state("nonce-2", until)
        await one.close()
        await two.close()

    run(go())


RUNNER = """
import asyncio, sys
from mcp_inflight.impl.redis_store import RedisStore
from mcp_inflight.impl.redis_tasks import RedisTasks

async def main():
    tasks = RedisTasks(RedisStore(sys.argv[1], "runner", int(sys.argv[2])))
    t = await tasks.create("session-k", "2025-11-25", 60_000)
    print(t["taskId"], flush=True)
    await tasks.renew_loop()

asyncio.run(main())
"""


def test_a_killed_runner_leaves_its_task_failed_within_its_lease(redis):
    lease_ms = 900

    async def go():
        proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER, redis.url, str(lease_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            tid = proc.stdout.readline().strip()
            assert tid
            reader = RedisTasks(RedisStore(redis.url, "reader", lease_ms))
            # alive: the renewals keep it working past several leases
            await asyncio.sleep(2.5 * lease_ms / 1000)
            assert (await reader.get(K, tid))["status"] == "working"
            proc.send_signal(signal.SIGKILL)
            proc.wait(5)
            killed = time.monotonic()
            deadline = killed + 5
            while time.monotonic() < deadline:
                view = await reader.get(K, tid)
                if view["status"] != "working":
                    break
                await asyncio.sleep(0.02)
            took = time.monotonic() - killed
            assert view["status"] == "failed"
            assert await reader.result_now(K, tid) == ("failed", LOST)
            # the lease was renewed at most a third of a lease before the kill
            assert took <= lease_ms / 1000 + 0.25, took
            assert [v["status"] for v in await reader.list(K)] == ["failed"]
            await reader.store.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)

    run(go())


def test_a_runner_that_stops_renewing_loses_its_task_even_alive(redis):
    """Without renewals the lease rule fires on a live worker too: the renewals are what keep
    a task working (the test above would pass vacuously if the rule never fired)."""

    async def go():
        one, two = await _pair(redis.url, lease_ms=200)
        tid = (await one.create(A, OLD))["taskId"]
        await asyncio.sleep(0.3)
        assert (await two.get(A, tid))["status"] == "failed"
        assert await one.renew() == [tid]  # refused: the worker learns it lost the task
        assert not await one.finish(tid, True, {})
        assert (await two.get(A, tid))["status"] == "failed"
        await _close(one, two)

    run(go())


def test_renewal_extends_the_lease_and_survives_a_script_flush(redis):
    async def go():
        one, two = await _pair(redis.url, lease_ms=1_000)
        tid = (await one.create(A, OLD))["taskId"]
        before = int((await two.state(A, tid))["dl"])
        await asyncio.sleep(0.05)
        await one.redis.script_flush()  # a restarted store has lost the scripts
        assert await one.renew() == []
        assert int((await two.state(A, tid))["dl"]) > before
        await _close(one, two)

    run(go())


def test_an_owner_leaves_no_key_behind_once_its_tasks_expired(redis):
    async def go():
        one, two = await _pair(redis.url)
        await one.create(A, OLD, 200)
        await one.create(A, NEW, 100)
        assert await one.redis.keys("mcpi:{session-a}:*")
        await asyncio.sleep(0.35)
        assert await one.redis.keys("mcpi:{session-a}:*") == []
        await _close(one, two)

    run(go())


# --- the server: two worker processes on one Redis ------------------------------------------

H = ACCEPT
LEASE_MS = 900


def _serve_args(url: str) -> tuple[str, ...]:
    return ("--redis", url, "--fixtures", "tasks", "--lease-ms", str(LEASE_MS))


@pytest.fixture(scope="module")
def pair(redis):
    """Two ``serve --redis`` processes (one worker each, a port each) serving the tasks
    fixture, started once for the module's tests that only make requests; the test picks the
    worker of every request.  Each such test opens sessions of its own, so what it reads
    (tasks, lists) is its own whatever ran before it.  The store's tests above may flush the
    Redis in between: the servers keep nothing there beyond their sessions and tasks, so
    they serve the next test's new sessions as before."""
    with serve_pair(*_serve_args(redis.url)) as two:
        yield two


@pytest.fixture
def pair_to_break(redis):
    """Two ``serve --redis`` processes like ``pair``'s, of one test alone: the test kills or
    pauses one of them."""
    with serve_pair(*_serve_args(redis.url)) as two:
        yield two


def _open(client, url: str) -> dict:
    r = client.post(url, headers=H, json=initialize(0))
    assert r.status_code == 200, r.text
    h = {**H, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": OLD}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.post(url, headers=h, json=note).status_code == 202
    return h


def _rpc(client, url: str, h: dict, rid: int, method: str, params: dict) -> dict:
    r = client.post(
        url, headers=h, json={"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    )
    text = r.text
    if text.lstrip().startswith("{"):
        return json.loads(text)
    msgs = [json.loads(x[5:]) for x in text.splitlines() if x.startswith("data:") and x[5:].strip()]
    return next(m for m in msgs if m.get("id") == rid)


def _task(client, url: str, h: dict, rid: int, tool: str, args: dict) -> str:
    params = {"name": tool, "arguments": args, "task": {"ttl": 60_000}}
    out = _rpc(client, url, h, rid, "tools/call", params)
    return out["result"]["task"]["taskId"]


def test_a_task_made_through_one_worker_is_served_by_another(pair):
    import httpx

    one, two = pair
    with httpx.Client(timeout=30) as c:
        h = _open(c, one.url)
        tid = _task(c, one.url, h, 1, "job", {"label": "x", "seconds": 1.0})
        got = _rpc(c, two.url, h, 2, "tasks/get", {"taskId": tid})
        assert got["result"]["status"] == "working"
        listed = _rpc(c, two.url, h, 3, "tasks/list", {})
        assert [t["taskId"] for t in listed["result"]["tasks"]] == [tid]
        res = _rpc(c, two.url, h, 4, "tasks/result", {"taskId": tid})
        assert res["result"]["content"][0]["text"] == "job:x"
        assert _rpc(c, one.url, h, 5, "tasks/get", {"taskId": tid})["result"]["status"] == (
            "completed"
        )
        # another session, on either worker, gets the answer of an unknown id
        other = _open(c, two.url)
        for url, rid, method in ((two.url, 6, "tasks/get"), (one.url, 7, "tasks/cancel")):
            out = _rpc(c, url, other, rid, method, {"taskId": tid})
            assert out["error"]["code"] == -32602
        assert _rpc(c, two.url, other, 8, "tasks/list", {})["result"]["tasks"] == []


def test_a_cancel_through_another_worker_stops_the_work_and_stays(pair):
    import httpx

    one, two = pair
    with httpx.Client(timeout=30) as c:
        h = _open(c, one.url)
        # stubborn: when cancelled, it finishes anyway a little later (a late completion)
        tid = _task(c, one.url, h, 1, "stubborn", {"label": "y", "seconds": 0.5})
        out = _rpc(c, two.url, h, 2, "tasks/cancel", {"taskId": tid})
        assert out["result"]["status"] == "cancelled"
        time.sleep(1.5)  # past the stubborn work's late end
        for url, rid in ((one.url, 3), (two.url, 4)):
            got = _rpc(c, url, h, rid, "tasks/get", {"taskId": tid})
            assert got["result"]["status"] == "cancelled"
        res = _rpc(c, two.url, h, 5, "tasks/result", {"taskId": tid})
        assert "error" in res
        again = _rpc(c, two.url, h, 6, "tasks/cancel", {"taskId": tid})
        assert again["error"]["code"] == -32602


def test_a_killed_worker_leaves_its_task_failed_within_the_lease(pair_to_break):
    import httpx

    one, two = pair_to_break
    with httpx.Client(timeout=30) as c:
        h = _open(c, one.url)
        tid = _task(c, one.url, h, 1, "job", {"label": "z", "seconds": 60})
        time.sleep(2 * LEASE_MS / 1000)  # renewed: still working past two leases
        got = _rpc(c, two.url, h, 2, "tasks/get", {"taskId": tid})
        assert got["result"]["status"] == "working"
        os.kill(one.pid, signal.SIGKILL)
        one.proc.wait(5)
        killed = time.monotonic()
        rid = 3
        while time.monotonic() < killed + 5:
            got = _rpc(c, two.url, h, rid, "tasks/get", {"taskId": tid})
            rid += 1
            if got["result"]["status"] != "working":
                break
            time.sleep(0.02)
        took = time.monotonic() - killed
        assert got["result"]["status"] == "failed"
        assert took <= LEASE_MS / 1000 + 0.3, took
        res = _rpc(c, two.url, h, rid, "tasks/result", {"taskId": tid})
        assert res["error"] == LOST


def test_a_session_deleted_on_another_worker_ends_its_tasks(pair):
    import httpx

    one, two = pair
    with httpx.Client(timeout=30) as c:
        h = _open(c, one.url)
        tid = _task(c, one.url, h, 1, "job", {"label": "d", "seconds": 30})
        assert c.delete(two.url, headers=h).status_code in (200, 204)
        deadline = time.monotonic() + 3
        state: dict = {}
        while time.monotonic() < deadline:
            state = asyncio.run(_raw(two, h["mcp-session-id"], tid))
            if state.get("st") != "working":
                break
            time.sleep(0.05)
        assert state.get("st") == "cancelled" and state.get("run") == "0"


async def _raw(serve, sid: str, tid: str) -> dict:
    url = next(a for a in serve.proc.args if a.startswith("redis://"))
    tasks = RedisTasks(RedisStore(url, "reader"))
    try:
        return await tasks.state(sid, tid)
    finally:
        await tasks.store.close()


def test_a_paused_worker_finds_its_task_lost_and_stops_the_work(pair_to_break):
    """SIGSTOP past the lease: another worker reads the task failed; once resumed, the runner's
    renewal is refused and it stops the work, so ``tasks/result`` on the runner (answered by
    its own runtime) ends at once instead of after the work's 60 s."""
    import httpx

    one, two = pair_to_break
    with httpx.Client(timeout=30) as c:
        h = _open(c, one.url)
        tid = _task(c, one.url, h, 1, "job", {"label": "p", "seconds": 60})
        os.kill(one.pid, signal.SIGSTOP)
        try:
            time.sleep(1.5 * LEASE_MS / 1000)
            got = _rpc(c, two.url, h, 2, "tasks/get", {"taskId": tid})
            assert got["result"]["status"] == "failed"
        finally:
            os.kill(one.pid, signal.SIGCONT)
        started = time.monotonic()
        with httpx.Client(timeout=10) as waiting:
            res = _rpc(waiting, one.url, h, 3, "tasks/result", {"taskId": tid})
        assert "error" in res and time.monotonic() - started < 5
        assert _rpc(c, one.url, h, 4, "tasks/get", {"taskId": tid})["result"]["status"] == (
            "failed"
        )
