"""The lease model's actions: each step of a worker, the store, a client or a fault, with its
guard, effect, output and story.

The action names are those of the store's scripts (``claim``, ``renew``, ``write``, ``release``,
``expire``; ``impl/redis_scripts.py``) and of the worker faults (``crash``, ``pause``,
``resume``) and the hazard (``failover``).  Guards and effects read and write the state of
``model/lease_state.py``, written against the state interface of ``model/logic.py`` (no Python
``if`` on a state value, only on the configuration), so a concrete and a symbolic backend read
the same text.  The properties that judge them are in ``model/lease.py``.

Time is abstracted: a claim may expire only while its holder's worker is paused or dead (a live
worker renews well within the TTL), and the expiry may happen at any moment of that pause. A
successful renewal or write changes no field (the TTL is the abstraction); a refused one tells
the instance it lost its lease. A response is written on the worker's own POST stream (local),
then the claim released, as the protocol says; an instance whose claim expired but that never
learned it may so still answer its own client, and its release deletes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .declare import Act
from .lease_state import (
    Config,
    Expiry,
    Phase,
    Proc,
    Told,
    accepts,
    held,
    id_name,
    inst_name,
    runs,
    worker_name,
)
from .logic import NONE, Logic, Write

# --- the effects' parts ---------------------------------------------------------------------


def _lag(c: Config, key: Any, when: Any) -> list[Write]:
    """Hazard runs: the replica lags behind the store's last change of a claim."""
    return [Write("lag", None, key, when)] if c.failover else []


def _remove(b: Logic, s: Any, c: Config, i: Any, when: Any) -> list[Write]:
    return [
        Write("ctok", i, 0, when),
        Write("cw", i, NONE, when),
        Write("holder", i, NONE, when),
    ] + _lag(c, NONE, when)


def _grant(b: Logic, s: Any, c: Config, r: Any, when: Any) -> list[Write]:
    """INCR fence; SET claim[id] token:worker; the instance remembers its token."""
    t = s.fence + 1
    i = s.rid[r]
    return [
        Write("life", r, Phase.IN_FLIGHT, when),
        Write("tok", r, t, when),
        Write("fence", None, t, when),
        Write("ctok", i, t, when),
        Write("cw", i, s.wk[r], when),
        Write("holder", i, r, when),
    ] + _lag(c, i, when)


def _lost(b: Logic, s: Any, c: Config, r: Any, kind: Told, when: Any) -> list[Write]:
    out = [Write("told", r, kind, when)]
    if c.design.stops_on_lost:
        out.append(Write("life", r, Phase.LOST, when))
    return out


# --- actions --------------------------------------------------------------------------------


def _arrive_guard(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> Any:
    """Arrivals fill instance slots in order (a slot is an arrival number)."""
    return b.ForAll("inst", lambda q: b.Implies(q < r, s.life[q] != Phase.UNSENT))


def _arrive(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    return [Write("life", r, Phase.RECEIVED), Write("rid", r, i), Write("wk", r, w)]


def _claim_guard(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> Any:
    ready = True if c.design.atomic_claim else b.Not(s.checked[r])
    return b.And(runs(b, s, r), ready)


def _free(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> dict[str, Any]:
    return {"granted": s.ctok[s.rid[r]] == 0}


def _claim(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    free = s.ctok[s.rid[r]] == 0
    out = [Write("life", r, Phase.REFUSED, b.Not(free))]
    if c.design.atomic_claim:
        return out + _grant(b, s, c, r, free)
    return out + [Write("checked", r, True, free)]


def _claim_set_guard(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> Any:
    return b.And(s.checked[r], runs(b, s, r))


def _claim_set(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    return _grant(b, s, c, r, True)


def _working(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> Any:
    return runs(b, s, r)


def _held_out(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> dict[str, Any]:
    return {"held": held(b, s, r)}


def _renew(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    return _lost(b, s, c, r, Told.RENEW, b.Not(held(b, s, r)))


def _write_out(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> dict[str, Any]:
    return {"held": held(b, s, r), "accepted": accepts(b, s, c, r)}


def _write(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    return _lost(b, s, c, r, Told.WRITE, b.Not(accepts(b, s, c, r)))


def _deletes(b: Logic, s: Any, c: Config, r: Any) -> Any:
    present = s.ctok[s.rid[r]] != 0
    return b.And(present, held(b, s, r)) if c.design.owned_release else present


def _release_out(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> dict[str, Any]:
    return {"held": held(b, s, r), "deleted": _deletes(b, s, c, r)}


def _release(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    return [Write("life", r, Phase.RESPONDED)] + _remove(b, s, c, s.rid[r], _deletes(b, s, c, r))


def _expire_guard(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> Any:
    return b.And(s.ctok[i] != 0, s.wstate[s.cw[i]] != Proc.ALIVE)


def _expire(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    h = s.holder[i]
    how = b.Ite(s.wstate[s.cw[i]] == Proc.DEAD, Expiry.DEAD, Expiry.PAUSED)
    return [Write("expired", h, how, h != NONE)] + _remove(b, s, c, i, True)


def _true(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> Any:
    return True


def _set_proc(to: Proc) -> Callable[[Logic, Any, Config, Any, Any, Any], list[Write]]:
    def effect(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
        return [Write("wstate", w, to)]

    return effect


def _failover_guard(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> Any:
    return s.lag != NONE


def _failover(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> list[Write]:
    lagging = s.lag != NONE
    return [Write("fence", None, s.fence - 1, lagging)] + _remove(b, s, c, s.lag, lagging)


_P, _W, _I = ("r",), ("w",), ("i",)


def actions(c: Config) -> tuple[Act, ...]:
    """The actions of run ``c``: each with its parameters' sorts, its side (a worker's store
    operation or the store on its own: server; an arrival: client; a fault: environment), its
    fairness, guard, effect, output and story."""
    size = {"r": c.requests, "w": c.workers, "i": c.ids}
    sort = {"r": "inst", "w": "worker", "i": "id"}
    rows: list[tuple[Any, ...]] = [
        (
            "arrive",
            "client",
            ("r", "w", "i"),
            (Phase.UNSENT,),
            (Proc.ALIVE,),
            _arrive_guard,
            _arrive,
            None,
            True,
        ),
        ("claim", "worker", _P, (Phase.RECEIVED,), (), _claim_guard, _claim, _free, True),
        (
            "claim_set",
            "worker",
            _P,
            (Phase.RECEIVED,),
            (),
            _claim_set_guard,
            _claim_set,
            None,
            not c.design.atomic_claim,
        ),
        ("renew", "worker", _P, (Phase.IN_FLIGHT,), (), _working, _renew, _held_out, True),
        ("write", "worker", _P, (Phase.IN_FLIGHT,), (), _working, _write, _write_out, True),
        ("release", "worker", _P, (Phase.IN_FLIGHT,), (), _working, _release, _release_out, True),
        ("expire", "store", _I, (), (), _expire_guard, _expire, None, c.design.ttl),
        (
            "crash",
            "fault",
            _W,
            (),
            (Proc.ALIVE, Proc.PAUSED),
            _true,
            _set_proc(Proc.DEAD),
            None,
            True,
        ),
        ("pause", "fault", _W, (), (Proc.ALIVE,), _true, _set_proc(Proc.PAUSED), None, True),
        ("resume", "fault", _W, (), (Proc.PAUSED,), _true, _set_proc(Proc.ALIVE), None, True),
        ("failover", "store", (), (), (), _failover_guard, _failover, None, c.failover),
    ]
    side = {"client": "client", "worker": "server", "store": "server", "fault": "environment"}
    out = []
    for name, actor, params, phases, procs, cond, effect, output, applies in rows:
        if not applies:
            continue
        out.append(
            Act(
                name,
                tuple((p, size[p]) for p in params),
                _guard(c, phases, procs, cond),
                _bound(c, effect),
                _plain(name),
                actor,
                side=side[actor],
                fair="weak" if name == "expire" else "none",
                sorts=tuple((p, sort[p]) for p in params),
                output=None if output is None else _bound(c, output),
                tell=_teller(name),
            )
        )
    return tuple(out)


def _guard(c: Config, phases: tuple[Phase, ...], procs: tuple[Proc, ...], cond: Any) -> Any:
    """The phases ``r`` must be in, the states worker ``w`` must be in, and ``cond``."""

    def guard(b: Logic, s: Any, r: Any = None, w: Any = None, i: Any = None) -> Any:
        parts = []
        if phases:
            parts.append(b.In(s.life[r], phases))
        if procs:
            parts.append(b.In(s.wstate[w], procs))
        parts.append(cond(b, s, c, r, w, i))
        return b.And(*parts)

    return guard


def _bound(c: Config, fn: Any) -> Any:
    def bound(b: Logic, s: Any, r: Any = None, w: Any = None, i: Any = None) -> Any:
        return fn(b, s, c, r, w, i)

    return bound


_STORIES = {
    "arrive": "request {r} (id={i}) arrives at worker {w}",
    "claim": "{w} claims id={id} for {r}",
    "claim_set": "{w} sets the claim on id={id} for {r} (INCR, SET)",
    "renew": "{w} renews {r}'s lease on id={id}",
    "write": "{r} makes a shared write for id={id} (event, waiter, publish)",
    "release": "{r} responds on its own POST and releases id={id}",
    "expire": "the claim on id={i} expires (its worker did not renew)",
    "crash": "worker {w} crashes (kill -9)",
    "pause": "worker {w} pauses (GC, SIGSTOP, partition)",
    "resume": "worker {w} resumes",
    "failover": "the store fails over to a replica that missed the last claim",
}


def _plain(name: str) -> Callable[[Mapping[str, int]], str]:
    """The move as ``name(arg=value, ...)`` (its story before it is taken)."""
    return lambda a: f"{name}({', '.join(f'{k}={v}' for k, v in a.items())})"


def _teller(name: str) -> Any:
    return lambda args, pre, post, out: tell(name, args, pre, post, out)


def tell(name: str, args: Any, pre: Any, post: Any, out: Any) -> str:
    """The story of move ``name(args)`` taken from ``pre`` to ``post`` with output ``out``."""
    r, i = args.get("r"), args.get("i")
    w = args.get("w", None if r is None else pre.wk[r])
    text = _STORIES[name].format(
        r=inst_name(r) if r is not None else "",
        w=worker_name(w) if w is not None else "",
        i=id_name(i) if i is not None else "",
        id=id_name(pre.rid[r]) if r is not None else "",
    )
    notes = []
    if name == "claim":
        if not out["granted"]:
            notes.append("refused: the id is claimed (409)")
        elif post.checked[r] and not pre.checked[r]:
            notes.append("GET: no claim, passes the check")
        else:
            notes.append(f"granted token {post.tok[r]}")
    elif name == "claim_set":
        over = pre.ctok[pre.rid[r]]
        notes.append(f"token {post.tok[r]}")
        if over:
            notes.append(f"overwrites token {over}'s claim  <-- a held claim replaced")
    elif name == "renew":
        notes.append("ok" if out["held"] else "lost: the claim is not its token")
    elif name == "write":
        if not out["accepted"]:
            notes.append("refused: stale owner")
        elif not out["held"]:
            notes.append("accepted  <-- its claim is not the current one")
        else:
            notes.append("accepted")
        if post.life[r] == Phase.LOST:
            notes.append("its POST ends with an error")
    elif name == "release":
        k = pre.rid[r]
        if not out["deleted"]:
            notes.append("the claim is not its own: nothing deleted")
        elif pre.holder[k] != r:
            notes.append(f"deletes {inst_name(pre.holder[k])}'s claim  <-- not its own")
        else:
            notes.append("claim deleted")
    elif name == "expire":
        notes.append(f"{inst_name(pre.holder[i])}'s token {pre.ctok[i]}")
    elif name == "failover":
        notes.append(f"claim on id={id_name(pre.lag)} lost, fence back to {post.fence}")
    return text + ("  ->  " + "; ".join(notes) if notes else "")
