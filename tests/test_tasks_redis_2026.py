"""2026-07-28 tasks (the tasks extension, SEP-2663) shared by instances on one real
``redis-server``: two ``serve --redis`` processes serving the tasks fixture, raw JSON-RPC over
httpx.  A task created through instance 1 is read (its result inlined once completed), answered
(``tasks/update``: the question was asked by the work on instance 1, the work goes on there) and
cancelled (acknowledged, sticky, the runner's work stopped) through instance 2; a 2025-11-25
session and a 2026-07-28 request never reach each other's tasks; a SIGKILLed runner leaves its
task ``failed`` within its lease; ``--workers 2`` behind one port serve the same tasks.  The
store's own moves for questions (kept under their keys, answered by ``update`` from another
worker and handed to the runner) are checked first, on two :class:`RedisTasks` of one
process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import httpx
import pytest

from mcp_inflight.impl.redis_store import WORKER_CHANNEL, RedisStore
from mcp_inflight.impl.redis_tasks import LOST, RedisTasks
from support.redis_workers import REDIS_SERVER, serve_pair
from support.rpc_client import MODERN_HEADERS, modern_meta

pytestmark = pytest.mark.skipif(
    not os.path.exists(REDIS_SERVER), reason="redis-server is not installed"
)

OLD, NEW = "2025-11-25", "2026-07-28"
OWNER = "2026-07-28: no authorization context"  # impl.api.UNAUTHENTICATED
LEASE_MS = 900


# --- the store: questions under their keys, answered from another worker --------------------


def test_questions_are_kept_by_key_and_an_update_elsewhere_reaches_the_runner(redis):
    async def go():
        one = RedisTasks(RedisStore(redis.url, "w1", 3_000))
        two = RedisTasks(RedisStore(redis.url, "w2", 3_000))
        await one.redis.flushall()
        sub = one.redis.pubsub()
        await sub.subscribe(WORKER_CHANNEL + "w1")
        await sub.get_message(timeout=1)
        try:
            tid = (await one.create(OWNER, NEW, 60_000))["taskId"]
            q1 = {"method": "elicitation/create", "params": {"message": "a?", "list": []}}
            q2 = {"method": "elicitation/create", "params": {"message": "b?"}}
            assert await one.ask(tid, "e#1", q1)
            assert await one.ask(tid, "e#2", q2)  # added while input_required
            got = await two.get(OWNER, tid)
            assert got["status"] == "input_required"
            assert got["inputRequests"] == {"e#1": q1, "e#2": q2}  # the empty list kept
            await two.update(OWNER, tid, {"e#1": {"action": "accept"}, "nope": 1})
            got = await two.get(OWNER, tid)
            assert got["status"] == "input_required"  # e#2 still waits
            assert got["inputRequests"] == {"e#2": q2}
            await two.update(OWNER, tid, {"e#2": {"action": "decline"}})
            assert (await two.get(OWNER, tid))["status"] == "working"
            assert "inputRequests" not in await two.get(OWNER, tid)
            told = []
            while len(told) < 2:
                m = await sub.get_message(ignore_subscribe_messages=True, timeout=2)
                assert m is not None, told
                told.append(json.loads(m["data"]))
            token = one.held[tid][1]
            assert [t["task_update"] for t in told] == [tid, tid]
            assert {t["token"] for t in told} == {token}
            assert told[0]["responses"] == {"e#1": {"action": "accept"}, "nope": 1}
            # an update of a task that asks nothing changes nothing and tells nobody
            await two.update(OWNER, tid, {"e#3": {}})
            assert await sub.get_message(ignore_subscribe_messages=True, timeout=0.3) is None
            # a 2025-11-25 session's id is another owner: unknown there
            with pytest.raises(Exception, match="unknown task"):
                await two.get("session-a", tid)
        finally:
            await sub.aclose()
            await one.store.close()
            await two.store.close()

    asyncio.run(go())


# --- the server: two instances on one Redis ----------------------------------------------------


def _serve_args(url: str) -> tuple[str, ...]:
    return ("--redis", url, "--fixtures", "tasks", "--lease-ms", str(LEASE_MS))


@pytest.fixture(scope="module")
def pair(redis):
    """Two ``serve --redis`` instances serving the tasks fixture, started once for the
    module's tests that only make requests.  Their 2026-07-28 requests share one owner, so
    each test reads and asserts on the tasks it made itself (by id, or through a 2025-11-25
    session of its own), whatever ran before it."""
    with serve_pair(*_serve_args(redis.url)) as two:
        yield two


@pytest.fixture
def pair_to_break(redis):
    """Two instances like ``pair``'s, of one test alone: the test kills one of them."""
    with serve_pair(*_serve_args(redis.url)) as two:
        yield two


class Rpc:
    """2026-07-28 requests, each to the instance the test names."""

    def __init__(self, c: httpx.Client) -> None:
        self.c, self.n = c, 0

    def __call__(self, url: str, method: str, params: dict, extension: bool = True) -> dict:
        self.n += 1
        body = {"jsonrpc": "2.0", "id": self.n, "method": method}
        body["params"] = {**params, "_meta": modern_meta(extension)}
        r = self.last = self.c.post(url, headers=MODERN_HEADERS, json=body)
        assert r.headers.get("content-type", "").startswith("application/json"), r.text
        return r.json()

    def task(self, url: str, tool: str, args: dict) -> str:
        made = self(url, "tools/call", {"name": tool, "arguments": args})["result"]
        assert made["resultType"] == "task", made
        return made["taskId"]

    def until(self, url: str, tid: str, statuses: tuple[str, ...], within: float = 10) -> dict:
        deadline = time.monotonic() + within
        while True:
            got = self(url, "tasks/get", {"taskId": tid})["result"]
            if got["status"] in statuses or time.monotonic() > deadline:
                return got
            time.sleep(0.03)


async def _raw(url: str, owner: str, tid: str) -> dict:
    tasks = RedisTasks(RedisStore(url, "reader"))
    try:
        return await tasks.state(owner, tid)
    finally:
        await tasks.store.close()


def test_a_task_made_through_one_instance_is_read_through_the_other(pair):
    one, two = pair
    with httpx.Client(timeout=30) as c:
        rpc = Rpc(c)
        tid = rpc.task(one.url, "job", {"label": "x", "seconds": 0.5})
        first = rpc(two.url, "tasks/get", {"taskId": tid})["result"]
        assert first["status"] == "working" and first["resultType"] == "complete"
        assert isinstance(first["ttlMs"], int) and "result" not in first
        done = rpc.until(two.url, tid, ("completed",))
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == "job:x"
        assert rpc(one.url, "tasks/get", {"taskId": tid})["result"]["result"] == done["result"]
        # without the extension the method is refused on either instance, as in one process
        out = rpc(two.url, "tasks/get", {"taskId": tid}, extension=False)
        assert out["error"]["code"] == -32021


def test_an_update_through_the_other_instance_answers_the_runners_question(pair):
    one, two = pair
    with httpx.Client(timeout=30) as c:
        rpc = Rpc(c)
        tid = rpc.task(one.url, "confirm", {"label": "go"})
        asked = rpc.until(two.url, tid, ("input_required",))
        assert asked["status"] == "input_required", asked
        (key, question), *more = asked["inputRequests"].items()
        assert not more and question["method"] == "elicitation/create"
        ack = rpc(
            two.url, "tasks/update", {"taskId": tid, "inputResponses": {key: {"action": "accept"}}}
        )
        assert ack["result"] == {"resultType": "complete"}
        done = rpc.until(two.url, tid, ("completed",))
        assert done["result"]["content"][0]["text"] == "go:accept"


def test_a_cancel_through_the_other_instance_stops_the_work_and_stays(pair):
    one, two = pair
    with httpx.Client(timeout=30) as c:
        rpc = Rpc(c)
        tid = rpc.task(one.url, "job", {"label": "c", "seconds": 30})
        assert rpc(two.url, "tasks/cancel", {"taskId": tid})["result"] == {"resultType": "complete"}
        got = rpc.until(two.url, tid, ("cancelled",), within=3)
        assert got["status"] == "cancelled"
        # the runner stopped its work (run 0), rather than letting it run out its 30 s
        state = asyncio.run(_raw(_url(one), OWNER, tid))
        assert state["st"] == "cancelled" and state["run"] == "0", state
        again = rpc(one.url, "tasks/cancel", {"taskId": tid})
        assert again["result"] == {"resultType": "complete"}  # acknowledged, terminal too
        time.sleep(0.3)
        for url in (one.url, two.url):
            assert rpc(url, "tasks/get", {"taskId": tid})["result"]["status"] == "cancelled"


def _url(serve) -> str:
    return next(a for a in serve.proc.args if a.startswith("redis://"))


def test_the_two_revisions_never_reach_each_others_tasks(pair):
    from test_tasks_redis import _open, _rpc

    one, two = pair
    with httpx.Client(timeout=30) as c:
        rpc = Rpc(c)
        new = rpc.task(one.url, "job", {"label": "n", "seconds": 5})
        h = _open(c, one.url)
        made = _rpc(
            c,
            one.url,
            h,
            1,
            "tools/call",
            {"name": "job", "arguments": {"label": "o", "seconds": 5}, "task": {"ttl": 60_000}},
        )
        old = made["result"]["task"]["taskId"]
        unknown = rpc(two.url, "tasks/get", {"taskId": "no-such-task"})["error"]
        for method in ("tasks/get", "tasks/cancel"):
            out = rpc(two.url, method, {"taskId": old})
            assert out["error"]["code"] == unknown["code"] == -32602
            assert out["error"]["message"] == unknown["message"].replace("no-such-task", old)
        for rid, method in ((2, "tasks/get"), (3, "tasks/cancel"), (4, "tasks/result")):
            out = _rpc(c, two.url, h, rid, method, {"taskId": new})
            assert out["error"]["code"] == -32602, out
        listed = _rpc(c, two.url, h, 5, "tasks/list", {})["result"]["tasks"]
        assert [t["taskId"] for t in listed] == [old]
        assert rpc(two.url, "tasks/get", {"taskId": new})["result"]["status"] == "working"


def test_a_killed_instance_leaves_its_task_failed_within_the_lease(pair_to_break):
    one, two = pair_to_break
    with httpx.Client(timeout=30) as c:
        rpc = Rpc(c)
        tid = rpc.task(one.url, "job", {"label": "k", "seconds": 60})
        time.sleep(2 * LEASE_MS / 1000)  # renewed: still working past two leases
        assert rpc(two.url, "tasks/get", {"taskId": tid})["result"]["status"] == "working"
        os.kill(one.pid, signal.SIGKILL)
        one.proc.wait(5)
        killed = time.monotonic()
        got = rpc.until(two.url, tid, ("failed", "completed", "cancelled"), within=5)
        took = time.monotonic() - killed
        assert got["status"] == "failed" and got["error"] == LOST
        assert took <= LEASE_MS / 1000 + 0.3, took


def test_workers_behind_one_port_share_the_extensions_tasks(redis):
    """``serve --workers 2 --redis``: each request on a new connection, so the workers take
    turns; a task made by one worker is read, its result inlined, through the other."""
    from support.redis_workers import Serve

    server = Serve("--workers", "2", "--redis", redis.url, "--fixtures", "tasks", workers=2)
    try:
        with httpx.Client(timeout=30) as c:
            tid = Rpc(c).task(server.url, "job", {"label": "w", "seconds": 0.3})
        seen: dict[str, dict] = {}  # worker -> its last answer
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if len(seen) == 2 and all(g["status"] == "completed" for g in seen.values()):
                break
            with httpx.Client(timeout=30, headers={"connection": "close"}) as fresh:
                rpc = Rpc(fresh)
                got = rpc(server.url, "tasks/get", {"taskId": tid})["result"]
                seen[rpc.last.headers["mcp-inflight-worker"]] = got
            time.sleep(0.05)
        assert len(seen) == 2, seen  # both workers answered
        for got in seen.values():
            assert got["taskId"] == tid and got["status"] == "completed"
            assert got["result"]["content"][0]["text"] == "job:w"
    finally:
        server.stop()
