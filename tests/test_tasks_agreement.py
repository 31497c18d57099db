"""impl/tasks.py against model/tasks.py: the store takes every explored transition of
``fresh-bound`` and ends in the state the model says (each task's status, whether its work runs,
whether a 2026-07-28 cancellation is pending), answers the requester's methods as the model
does, refuses every call on another client's task id, and sends exactly one
``notifications/tasks/status`` per status change, to the owner.  Driven with the moves of a
mutant, the same store disagrees somewhere: the test can fail.  The same check runs against
the store kept in Redis (``impl/redis_tasks.py``), on a real ``redis-server``: both revisions,
a 2026-07-28 question kept under its key (``tasks/get``'s ``inputRequests``) and answered by
``tasks/update``."""

from __future__ import annotations

import asyncio
import gc
import json
import os
from collections.abc import Callable
from contextlib import contextmanager

import pytest

from mcp_inflight.impl.tasks import NotReady, Task, TaskError, TaskStore
from mcp_inflight.model import tasks as M
from mcp_inflight.proofs.declared import drive

STATUS = {
    M.WORKING: "working",
    M.INPUT: "input_required",
    M.COMPLETED: "completed",
    M.FAILED: "failed",
    M.CANCELLED: "cancelled",
}
REV = ("2025-11-25", "2026-07-28")


#: the ttl a task asks for and the store's cap, in ms: far longer than a run of these tests,
#: since the Redis store's ttl is Redis's own key expiry, in real time, and the exhaustive run
#: at the model's bounds takes tens of seconds (the model's ttl is a move, ``expire``)
TASK_TTL = 1_800_000
MAX_TTL = 3_600_000


def _listed(pre, ids, c) -> set:
    """The task ids ``tasks/list`` gives client ``c`` in the model's state ``pre``: its
    2025-11-25 tasks that exist, none once its session has ended."""
    if pre.ended[c]:
        return set()
    return {
        ids[x]
        for x in range(len(pre.ts))
        if pre.who[x] == c and pre.rev[x] == M.OLD and pre.ts[x] not in (M.NOTASK, M.GONE)
    }


# --- what both stores' answers are judged by ---------------------------------------------
#
# Each store is driven its own way (the in-memory one by calls, the Redis one by coroutines on
# its rig); what it answers is judged here, once, against the model's state before the move
# (``pre``) or after it (``post``).  Each judge appends what disagrees to ``out`` and what was
# compared to ``seen``.


def _judge_get(get: Callable[[], dict], pre, r: int, seen: set[str], out: list[str]) -> dict:
    """``tasks/get`` on request ``r``'s task: its status, and its result once a 2026-07-28 task
    completed (unless forgotten); what it answered (``{}`` when refused)."""
    try:
        got = get()
    except TaskError:
        if pre.ts[r] != M.GONE:
            out.append("tasks/get refused a live task")
        return {}
    seen.add("get")
    if pre.ts[r] == M.GONE or got["status"] != STATUS[pre.ts[r]]:
        out.append(f"tasks/get answered {got['status']}")
    if pre.rev[r] == M.NEW and pre.ts[r] == M.COMPLETED:
        if ("result" in got) != (pre.rgone[r] == 0):
            out.append("tasks/get and the model disagree on the result")
    return got


def _judge_result(
    result: Callable[[], object], pre, r: int, seen: set[str], out: list[str]
) -> None:
    """``tasks/result`` on request ``r``'s task, at once: the result the work gave, where the
    model still has one (a result-once server forgets it)."""
    gone = pre.ts[r] == M.GONE
    try:
        res = result()
        seen.add("result")
        if gone or pre.rgone[r] != 0:
            out.append("tasks/result answered where the model has no result")
        elif pre.ts[r] != M.CANCELLED and res != {"r": r}:
            out.append(f"tasks/result answered {res}")
    except TaskError:
        if not gone:
            out.append("tasks/result refused")
    except NotReady:
        out.append("tasks/result not ready on a terminal task")


def _judge_cancel(
    cancel: Callable[[], object], pre, r: int, seen: set[str], out: list[str]
) -> None:
    """``tasks/cancel`` by the requester: refused only on a task gone or terminal."""
    try:
        cancel()
    except TaskError:
        seen.add("cancel refused")
        if not (pre.ts[r] == M.GONE or pre.ts[r] in M.TERMINAL):
            out.append("tasks/cancel refused a live task")


def _judge_list(listed: list[dict], pre, ids: dict[int, str], c: int, out: list[str]) -> None:
    """``tasks/list`` for client ``c``: exactly the tasks the model lists."""
    got = {t["taskId"] for t in listed}
    want = _listed(pre, ids, c)
    if got != want:
        out.append(f"tasks/list gave {len(got)} tasks, the model {len(want)}")


def _judge_foreign(call: Callable[[], object], k: dict, seen: set[str], out: list[str]) -> None:
    """A method by client ``k["c"]`` on another client's task: refused."""
    try:
        call()
    except TaskError:
        seen.add("foreign refused")
        return
    out.append(f"{M.OPS[k['op']]} by c{k['c']} on another's task accepted")


def _judge_after(
    state: Callable[[int, str], tuple[str, bool, bool] | None],
    sent: list[tuple[str, str, str]],
    owner: Callable[[int], str],
    ids: dict[int, str],
    pre,
    post,
    seen: set[str],
    out: list[str],
) -> None:
    """The store after the move: each task's ``state(slot, id)`` (status, running, cancel
    requested; ``None`` once gone) as the model's ``post`` has it, and the status messages
    ``sent`` (owner, id, status): one per status change, to the owner."""
    want = []
    for x, tid in ids.items():
        t = state(x, tid)
        if post.ts[x] == M.GONE:
            if t is not None:
                out.append(f"r{x}'s task is still stored")
            continue
        if t is None:
            out.append(f"r{x}'s task is gone")
            continue
        status, running, creq = t
        if status != STATUS[post.ts[x]]:
            out.append(f"r{x}: {status}, the model {STATUS[post.ts[x]]}")
        if running != bool(post.wrun[x]) or creq != bool(post.creq[x]):
            out.append(f"r{x}: running {running}, cancel requested {creq}")
        if pre.ts[x] not in (M.NOTASK, post.ts[x]):
            want.append((owner(post.who[x]), tid, STATUS[post.ts[x]]))
    if sorted(sent) != sorted(want):
        out.append(f"status notifications {sent}, the model {want}")
    if sent:
        seen.add("notified")


class World:
    def __init__(self) -> None:
        self.store = TaskStore(max_ttl_ms=MAX_TTL)
        self.ids: dict[int, str] = {}  # model slot -> task id

    def copy(self) -> World:
        w = World.__new__(World)
        w.store = TaskStore(
            self.store.max_ttl_ms,
            {k: _copied(t) for k, t in self.store.tasks.items()},
            [],
            set(self.store.ended),
        )
        w.ids = dict(self.ids)
        return w


def _copied(t: Task) -> Task:
    """A shallow copy of task ``t``, field for field (what ``dataclasses.replace(t)`` gives a
    ``Task``, whose fields are all set by its ``__init__``, at a fifth of the cost: the world is
    copied on each of the 329,680 transitions)."""
    c = object.__new__(Task)
    c.__dict__.update(t.__dict__)
    return c


def owner(c: int) -> str:
    return f"c{c}"


def step(seen: set[str]):
    def run(w: World, pre, m, post) -> list[str]:
        st, k = w.store, m.kw
        out: list[str] = []
        st.outbox.clear()

        if m.name == "create":
            r = k["r"]
            t = st.create(owner(pre.who[r]), REV[pre.rev[r]], None if pre.nottl[r] else TASK_TTL)
            w.ids[r] = t.task_id
            if t.ttl_ms != (MAX_TTL if pre.nottl[r] else TASK_TTL):
                out.append(f"ttl {t.ttl_ms}")
        elif m.name == "ask":
            st.ask(w.ids[k["r"]])
        elif m.name == "finish":
            st.finish(w.ids[k["r"]], bool(k["ok"]), {"r": k["r"]})
        elif m.name == "honour":
            st.honour(w.ids[k["r"]])
        elif m.name == "expire":
            st.expire(w.ids[k["r"]])
        elif m.name == "end":
            st.end_session(owner(k["c"]))
        elif m.name in ("read", "answer", "tcancel"):
            r = k["r"]
            who, tid = owner(pre.who[r]), w.ids[r]
            if m.name == "read" and k["op"] == M.GET:
                _judge_get(lambda: st.get(who, tid), pre, r, seen, out)
            elif m.name == "read":
                _judge_result(lambda: st.result(who, tid), pre, r, seen, out)
            elif m.name == "answer":
                st.answer(who, tid)
            else:
                _judge_cancel(lambda: st.cancel(who, tid), pre, r, seen, out)
        elif m.name == "list":
            _judge_list(st.list(owner(k["c"])), pre, w.ids, k["c"], out)
        elif m.name == "foreign":
            x = pre.tab[k["k"]]
            method = {M.GET: st.get, M.RESULT: st.answer, M.CANCEL: st.cancel}[k["op"]]
            _judge_foreign(lambda: method(owner(k["c"]), w.ids[x]), k, seen, out)

        # the state the model says
        def state(x: int, tid: str) -> tuple[str, bool, bool] | None:
            t = st.tasks.get(tid)
            return None if t is None else (t.status, t.running, t.cancel_requested)

        sent = [(o, v["taskId"], v["status"]) for o, v in st.outbox]
        _judge_after(state, sent, owner, w.ids, pre, post, seen, out)
        return out

    return run


@contextmanager
def _uncollected():
    """The cyclic garbage collector paused: a drive keeps a world for each of the tens of
    thousands of states it reaches and makes hundreds of thousands of small objects in between,
    none of them in a cycle, and the collector's passes over them are most of a second."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def test_the_store_agrees_with_fresh_bound_on_every_transition():
    seen: set[str] = set()
    with _uncollected():
        problems = drive(M.spec("fresh-bound"), World, step(seen), World.copy)
    assert problems == []
    # not vacuous: every kind of answer was compared somewhere
    assert seen == {"get", "result", "cancel refused", "foreign refused", "notified"}


@pytest.mark.parametrize("design", ["not-sticky", "global", "result-once"])
def test_the_store_disagrees_with_a_mutant(design):
    problems = drive(M.spec(design), World, step(set()), World.copy)
    assert problems


# --- the same check, the store in Redis ----------------------------------------------------
#
# ``impl/redis_tasks.py`` against the model: each explored state's world is a namespace of
# owners in one real ``redis-server`` (``w<n>-c0``, ``w<n>-c1``), copied key by key (DUMP and
# RESTORE, TTLs kept) when the exploration branches.  The ttl's end is Redis deleting the task's
# key, done here as that DEL.  The status messages are read from the owners' channels, up to a
# marker published after the move (Redis delivers in order).  The lease is long: no worker is
# lost here (``tests/test_tasks_redis.py`` checks that rule).  One request slot by default
# (1,168 transitions); the model's default bounds (two, 329,680 transitions) are ``slow``.


class RedisWorld:
    n = 0

    def __init__(self, rig: RedisRig) -> None:
        RedisWorld.n += 1
        self.rig = rig
        self.ns = f"w{RedisWorld.n}"
        self.ids: dict[int, str] = {}
        self.held: dict[str, tuple[str, str]] = {}

    def owner(self, c: int) -> str:
        return f"{self.ns}-c{c}"

    def copy(self) -> RedisWorld:
        w = RedisWorld(self.rig)
        w.ids = dict(self.ids)
        w.held = {t: (o.replace(self.ns, w.ns, 1), k) for t, (o, k) in self.held.items()}
        self.rig.run(self.rig.clone(self.ns, w.ns))
        return w


class RedisRig:
    """One event loop, one ``redis-server``, one :class:`RedisTasks` (its ``held`` swapped for
    the world's before each move), one subscriber to every owner's status channel."""

    def __init__(self, url: str) -> None:
        from mcp_inflight.impl.redis_store import RedisStore
        from mcp_inflight.impl.redis_tasks import RedisTasks

        self.loop = asyncio.new_event_loop()
        self.tasks = RedisTasks(RedisStore(url, "agree", 3_600_000), max_ttl_ms=MAX_TTL)
        self.r = self.tasks.redis
        self.run(self.r.flushall())
        self.sub = self.r.pubsub()
        self.run(self.sub.psubscribe("mcpi:ts:*"))
        self.marks = 0

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    async def clone(self, old: str, new: str) -> None:
        """Every key of namespace ``old`` copied to ``new``, its TTL kept: the keys listed in
        one round trip (the server's keyspace grows with every world, so a SCAN of it takes
        many), dumped in a second and restored in a third."""
        keys = await self.r.keys(f"mcpi:{{{old}-c*")
        if not keys:
            return
        read = self.r.pipeline(transaction=False)
        for key in keys:
            read.pttl(key)
            read.dump(key)
        got = await read.execute()
        write = self.r.pipeline(transaction=False)
        for key, ttl, dumped in zip(keys, got[::2], got[1::2], strict=True):
            write.restore(key.decode().replace(old, new, 1), max(ttl, 0), dumped)
        await write.execute()

    async def messages(self) -> list[tuple[str, str, str]]:
        """The status messages published since the last call, as (owner, id, status)."""
        self.marks += 1
        mark = str(self.marks)
        await self.r.publish("mcpi:ts:mark", mark)
        out = []
        deadline = self.loop.time() + 5
        while True:
            m = await self.sub.get_message(ignore_subscribe_messages=True, timeout=1)
            if m is None:  # a subscription's confirmation, skipped, also answers None
                assert self.loop.time() < deadline, "the marker did not arrive"
                continue
            channel = m["channel"].decode()[len("mcpi:ts:") :]
            if channel == "mark":
                if m["data"].decode() == mark:
                    return out
                continue
            v = json.loads(m["data"])
            out.append((channel, v["taskId"], v["status"]))

    def close(self) -> None:
        self.run(self.sub.aclose())
        self.run(self.tasks.store.close())
        self.loop.close()


#: the question a 2026-07-28 task's work asks in the Redis world (its ``ask``, under a key)
QUESTION = {"method": "elicitation/create", "params": {"message": "go on?", "list": []}}


def redis_step(seen: set[str]):
    def run(w: RedisWorld, pre, m, post) -> list[str]:
        rig, k = w.rig, m.kw
        rt = rig.tasks
        rt.held = w.held
        out: list[str] = []

        def call(coro):
            return rig.run(coro)

        if m.name == "create":
            r = k["r"]
            rev = REV[pre.rev[r]]
            t = call(rt.create(w.owner(pre.who[r]), rev, None if pre.nottl[r] else TASK_TTL))
            w.ids[r] = t["taskId"]
            seen.add(f"created {rev}")
            if t.get("ttl", t.get("ttlMs")) != (MAX_TTL if pre.nottl[r] else TASK_TTL):
                out.append(f"ttl {t}")
        elif m.name == "ask":
            if pre.rev[k["r"]] == M.NEW:  # 2026-07-28: the question kept under its key
                call(rt.ask(w.ids[k["r"]], "q#1", QUESTION))
                seen.add("asked by key")
            else:
                call(rt.ask(w.ids[k["r"]]))
        elif m.name == "finish":
            call(rt.finish(w.ids[k["r"]], bool(k["ok"]), {"r": k["r"]}))
        elif m.name == "honour":
            call(rt.honour(w.ids[k["r"]]))
        elif m.name == "expire":
            tid = w.ids[k["r"]]
            call(rt.redis.delete(rt.task_key(w.owner(pre.who[k["r"]]), tid)))
            w.held.pop(tid, None)
        elif m.name == "end":
            call(rt.end_session(w.owner(k["c"])))
        elif m.name in ("read", "answer", "tcancel"):
            r = k["r"]
            who, tid = w.owner(pre.who[r]), w.ids[r]
            if m.name == "read" and k["op"] == M.GET:
                got = _judge_get(lambda: call(rt.get(who, tid)), pre, r, seen, out)
                asking = pre.rev[r] == M.NEW and pre.ts[r] == M.INPUT
                if got and got.get("inputRequests") != ({"q#1": QUESTION} if asking else None):
                    out.append(f"tasks/get shows the questions {got.get('inputRequests')}")
            elif m.name == "read":
                _judge_result(lambda: call(rt.result_now(who, tid))[1], pre, r, seen, out)
            elif m.name == "answer":
                try:
                    if pre.rev[r] == M.NEW:  # 2026-07-28: tasks/update answering every key
                        call(rt.update(who, tid, {"q#1": {"action": "accept"}}))
                        if pre.ts[r] == M.INPUT:
                            seen.add("updated")
                    else:
                        call(rt.answer(who, tid))
                except TaskError:
                    pass
            else:
                _judge_cancel(lambda: call(rt.cancel(who, tid)), pre, r, seen, out)
        elif m.name == "list":
            _judge_list(call(rt.list(w.owner(k["c"]))), pre, w.ids, k["c"], out)
        elif m.name == "foreign":
            x = pre.tab[k["k"]]
            c = w.owner(k["c"])
            method = {M.GET: rt.get, M.RESULT: rt.answer, M.CANCEL: rt.cancel}[k["op"]]
            _judge_foreign(lambda: call(method(c, w.ids[x])), k, seen, out)

        def state(x: int, tid: str) -> tuple[str, bool, bool] | None:
            t = call(rt.state(w.owner(post.who[x]), tid))
            return (t["st"], t["run"] == "1", t["creq"] == "1") if t else None

        _judge_after(state, call(rig.messages()), w.owner, w.ids, pre, post, seen, out)
        return out

    return run


@pytest.fixture(scope="module")
def rig():
    from support.redis_workers import REDIS_SERVER, Redis

    if not os.path.exists(REDIS_SERVER):
        pytest.skip("redis-server is not installed")
    server = Redis()
    r = RedisRig(server.url)
    yield r
    r.close()
    server.kill()


def _redis_drive(
    rig: RedisRig, design: str, seen: set[str], limit: int | None = None, **bounds: int
) -> list[str]:
    rig.run(rig.r.flushall())
    return drive(
        M.spec(design, **bounds),
        lambda: RedisWorld(rig),
        redis_step(seen),
        RedisWorld.copy,
        limit=limit,
    )


def test_the_redis_store_agrees_with_fresh_bound_on_one_request(rig):
    seen: set[str] = set()
    assert _redis_drive(rig, "fresh-bound", seen, requests=1) == []
    assert seen == {"get", "result", "cancel refused", "foreign refused", "notified"} | {
        "created 2025-11-25",
        "created 2026-07-28",
        "asked by key",
        "updated",
    }


@pytest.mark.slow
def test_the_redis_store_agrees_with_fresh_bound_at_the_model_bounds(rig):
    """Two requests (the model's bounds): the first 3,000 of its 329,680 transitions in
    breadth-first order, the shortest runs first (each step copies the Redis world and takes
    several round trips, about a millisecond here, and the server's keyspace grows with every
    world copied; 12,000 were driven once, clean, in 4.5 minutes)."""
    seen: set[str] = set()
    assert _redis_drive(rig, "fresh-bound", seen, limit=3_000) == []
    assert seen >= {"get", "result", "cancel refused", "foreign refused", "notified"}


@pytest.mark.parametrize("design", ["not-sticky", "global", "result-once"])
def test_the_redis_store_disagrees_with_a_mutant(rig, design):
    assert _redis_drive(rig, design, set(), requests=1)
