"""The lease protocol's store operations on a real ``redis-server`` (the scripts of
``impl/redis_store.py``), two workers interleaved by hand: a stale owner's renew, write and
release are refused and counted, and each mutant of the protocol, run as the Redis commands it
stands for, breaks what the fenced design keeps."""

from __future__ import annotations

import asyncio
import os

import pytest

from mcp_inflight.impl.core import typed_id
from mcp_inflight.impl.redis_store import RedisStore
from support.redis_workers import REDIS_SERVER

pytestmark = pytest.mark.skipif(
    not os.path.exists(REDIS_SERVER), reason="redis-server is not installed"
)

S = "sess1"
I7 = typed_id(7)


def run(coro):
    return asyncio.run(coro)


async def _pair(url, lease_ms=200):
    a = RedisStore(url, "wa", lease_ms)
    b = RedisStore(url, "wb", lease_ms)
    await a.load()
    await a.redis.flushall()
    await a.create_session(S, {"revision": "2025-11-25"})
    return a, b


def test_claim_is_exclusive_and_tokens_increase(redis):
    async def go():
        a, b = await _pair(redis.url)
        t1 = await a.claim(S, I7)
        assert t1 > 0
        assert await b.claim(S, I7) == 0  # a duplicate, refused on another worker
        assert await b.claim(S, typed_id("7")) > t1  # "7" is another id
        assert await a.release(a.held(S, I7, t1))
        t2 = await b.claim(S, I7)  # sequential reuse, on any worker
        assert t2 > t1
        assert await b.claim(S, typed_id(8), hold=False) == 1  # answered at once: checked only
        assert not await a.redis.exists(b.claim_key(S, typed_id(8)))
        await a.end(S)
        assert await a.claim(S, typed_id(9)) == -1  # the session ended: refused
        await a.close()
        await b.close()

    run(go())


def test_stale_owner_is_refused_after_its_lease(redis):
    """wa claims, pauses past its lease; wb claims the id; wa's renew, write and release are
    refused (counted in the store), and wb's claim stays."""

    async def go():
        a, b = await _pair(redis.url, lease_ms=150)
        ta = await a.claim(S, I7)
        stale = a.held(S, I7, ta)
        await asyncio.sleep(0.25)  # wa paused: no renewal, the claim expires
        tb = await b.claim(S, I7)
        assert tb > ta
        fresh = b.held(S, I7, tb)
        assert await a.renew_all([stale]) == [False]
        waiter = a.waiter_key(S, "s1")
        assert not await a.write(stale, "set", waiter, "wa", 1000)
        assert not await a.redis.exists(waiter)
        assert not await a.release(stale)
        assert (await a.redis.get(a.claim_key(S, I7))).decode() == fresh.value
        assert await a.refused_count(S) == 3 and a.counters.refused == 3
        assert await b.renew_all([fresh]) == [True]
        assert await b.write(fresh, "set", waiter, "wb", 1000)
        assert await b.release(fresh)
        await a.close()
        await b.close()

    run(go())


def test_mutants_break_what_the_fenced_design_keeps(redis):
    """Each mutant of the protocol, as the Redis commands it stands for, on the same history."""

    async def go():
        a, b = await _pair(redis.url, lease_ms=150)
        r = a.redis
        key = a.claim_key(S, I7)
        # release-by-id: DEL without comparing; the stale owner deletes the new owner's claim
        ta = await a.claim(S, I7)
        await asyncio.sleep(0.25)
        tb = await b.claim(S, I7)
        assert not await a.release(a.held(S, I7, ta))  # fenced: refused
        assert await r.exists(key)
        await r.delete(key)  # the mutant's release
        assert await a.claim(S, I7) > tb  # a third owner while wb still runs: two in flight
        await r.delete(key)
        # check-then-set: GET then SET, two steps; both workers pass the check
        assert await r.get(key) is None  # wa checks
        assert await r.get(key) is None  # wb checks
        await r.set(key, "1:wa")
        await r.set(key, "2:wb")  # both believe they own the id
        await r.delete(key)
        # unfenced: a write not checked lands after the lease is gone
        ta = await a.claim(S, I7)
        await asyncio.sleep(0.25)
        await b.claim(S, I7)
        waiter = a.waiter_key(S, "late")
        assert not await a.write(a.held(S, I7, ta), "set", waiter, "wa", 1000)  # fenced
        await r.set(waiter, "wa")  # the mutant's write: accepted
        assert await r.exists(waiter)
        await r.delete(key, waiter)
        # no-ttl: a claim without a lease outlives its (crashed) holder
        await r.set(key, "9:dead")
        await asyncio.sleep(0.25)
        assert await b.claim(S, I7) == 0  # never freed
        await r.delete(key)
        await a.close()
        await b.close()

    run(go())
