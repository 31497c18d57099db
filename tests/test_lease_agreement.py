"""The Redis scripts of ``impl/redis_store.py`` against the lease model (``model/lease.py``, its
actions in ``model/lease_actions.py``), on every store transition of the explored ``fenced``
space.

For each reachable state of the model and each enabled store action (``claim``, ``renew``,
``write``, ``release``, ``expire``), the store part of the state (the fence counter, each id's
claim ``<token>:<worker>``) is written into a real ``redis-server``, the worker of the acting
instance runs the operation through ``RedisStore`` (the same scripts the workers run), and the
result and the store afterwards are compared with the model's output and post-state.  Cases
that the store cannot tell apart (the same action on the same store contents and the same
instance view) run once.  A script changed to delete by id, as the ``release-by-id`` mutant
does, is caught by the same comparison.

The model's transitions are taken by its compiled engine (``proofs/compiled_spec.py``, the
explorer's default for a declared model: each move's guard, output and writes generated as
Python, on the same states as the concrete reading of the rules, which
``tests/test_compiled_spec.py`` holds it to)."""

from __future__ import annotations

import asyncio
import functools
import os

import pytest

from mcp_inflight.impl.core import typed_id
from mcp_inflight.impl.redis_store import RedisStore
from mcp_inflight.model import lease as L
from mcp_inflight.model import lease_state as LS
from mcp_inflight.proofs.compiled_spec import compile_spec
from mcp_inflight.proofs.walk import transitions_out
from support.redis_workers import REDIS_SERVER

pytestmark = pytest.mark.skipif(
    not os.path.exists(REDIS_SERVER), reason="redis-server is not installed"
)

S = "agree"
STORE_ACTIONS = ("claim", "renew", "write", "release", "expire")


@functools.cache
def cases(cfg: LS.Config) -> dict:
    """Every distinct store case of the explored space: (action, the acting instance's id,
    worker and token, the claims, the fence) -> (model output, model's claims and fence after).
    Made once per configuration and only read: the tests of a configuration share it."""
    spec = L.spec_of(cfg)
    out: dict = {}
    for s, m, post, o in transitions_out(spec, compile_spec(spec).fire):
        if m.name in STORE_ACTIONS:
            r = m.kw.get("r")
            view = (s.rid[r], s.wk[r], s.tok[r]) if r is not None else (m.kw["i"], None, None)
            key = (m.name, view, s.ctok, s.cw, s.fence)
            out.setdefault(key, (o, (post.ctok, post.cw, post.fence)))
    return out


def ids(cfg: LS.Config):
    return [typed_id(k + 1) for k in range(cfg.ids)]


async def drive(url: str, cfg: LS.Config, table: dict) -> tuple[list, dict]:
    """Run every case on the real store; the disagreements, and how often each outcome came."""
    stores = [RedisStore(url, LS.worker_name(w), 60_000) for w in range(cfg.workers)]
    await stores[0].load()
    rd = stores[0].redis
    keys = ids(cfg)
    fence = f"mcpi:{{{S}}}:fence"
    bad, met = [], {}
    for (name, (i, w, tok), ctok, cw, fence_n), (want, after) in table.items():
        await rd.flushall()
        await stores[0].create_session(S, {"revision": "2025-11-25"})
        if fence_n:
            await rd.set(fence, fence_n)
        for k, (t, holder) in enumerate(zip(ctok, cw, strict=True)):
            if t:
                await rd.set(stores[0].claim_key(S, keys[k]), f"{t}:{LS.worker_name(holder)}")
        if name == "claim":
            got = await stores[w].claim(S, keys[i])
            outcome = {"granted": got > 0}
            if got > 0 and got != fence_n + 1:
                bad.append((name, "token", got, fence_n + 1))
        elif name == "renew":
            (ok,) = await stores[w].renew_all([stores[w].held(S, keys[i], tok)])
            outcome = {"held": ok}
        elif name == "write":
            c = stores[w].held(S, keys[i], tok)
            ok = await stores[w].write(c, "set", stores[w].waiter_key(S, "x"), "w", 60_000)
            outcome = {"accepted": ok}
        elif name == "release":
            ok = await stores[w].release(stores[w].held(S, keys[i], tok))
            outcome = {"deleted": ok}
        else:  # expire: the lease's TTL runs out
            await rd.pexpire(stores[0].claim_key(S, keys[i]), 1)
            while await rd.exists(stores[0].claim_key(S, keys[i])):
                await asyncio.sleep(0.002)
            outcome = {}
        for k, v in outcome.items():
            met[(name, k, v)] = met.get((name, k, v), 0) + 1
            if bool(want[k]) != v:
                bad.append((name, (i, w, tok), ctok, cw, fence_n, k, v, want))
        claims = []
        for k in range(cfg.ids):
            v = await rd.get(stores[0].claim_key(S, keys[k]))
            claims.append(None if v is None else v.decode())
        n = int(await rd.get(fence) or 0)
        ctok2, cw2, fence2 = after
        model = [f"{t}:{LS.worker_name(h)}" if t else None for t, h in zip(ctok2, cw2, strict=True)]
        if claims != model or n != fence2:
            bad.append((name, (i, w, tok), ctok, cw, fence_n, "store", claims, n, model, fence2))
    for st in stores:
        await st.close()
    return bad, met


@pytest.mark.parametrize("ids_", [1, 2])
def test_redis_scripts_agree_with_the_lease_model(redis, ids_):
    cfg = LS.Config(LS.FENCED, workers=2, requests=2, ids=ids_)
    table = cases(cfg)
    bad, met = asyncio.run(drive(redis.url, cfg, table))
    assert bad == [], bad[:5]
    # every outcome of every store operation was met, so the comparison is not vacuous
    for outcome in [
        ("claim", "granted", True),
        ("claim", "granted", False),
        ("renew", "held", True),
        ("renew", "held", False),
        ("write", "accepted", True),
        ("write", "accepted", False),
        ("release", "deleted", True),
        ("release", "deleted", False),
    ]:
        assert met.get(outcome), (outcome, met)
    assert any(k[0] == "expire" for k in table)


def test_a_release_by_id_script_disagrees(redis, monkeypatch):
    """The same comparison with the release script replaced by a plain delete (what the
    ``release-by-id`` mutant stands for): the stale owner's release is caught."""
    from mcp_inflight.impl import redis_store

    monkeypatch.setitem(redis_store.SCRIPTS, "release", "redis.call('DEL', KEYS[1])\nreturn 1\n")
    cfg = LS.Config(LS.FENCED, workers=2, requests=2, ids=1)
    bad, _ = asyncio.run(drive(redis.url, cfg, cases(cfg)))
    assert any(b[0] == "release" for b in bad), bad[:5]
