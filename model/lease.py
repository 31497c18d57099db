"""Many workers sharing one store: the lease protocol of the in-flight claim.

Several worker processes serve one session; a request's POST reaches whichever worker the load
balancer picks, and that worker runs the handler and holds the POST's response stream. The
shared store (Redis) holds the claims: ``claim[I]`` is ``<token>:<worker>`` with a TTL (the
lease), ``fence`` a counter whose values are the tokens. This file is the whole of that
protocol's rules, declared with the one declaration of ``model/declare.py``: the fields, the
actions (guard, effect, output, story), the designs and the properties. The one checker of
``proofs/`` (``proofs/explorer.py``, ``proofs/induction.py``) reads them and adds none of its
own (the file is longer than most because it is one thing: one protocol's whole rule set,
the entry every reader of a declared model opens, ``DECLARED_MODELS`` in ``model/declare.py``,
with the designs, fields, actions and properties naming one another's phases, tokens and
knobs; its checkers, its command line and its tests read them as one namespace); the action
names are those of the store's scripts (``claim``, ``renew``, ``write``, ``release``,
``expire``) and of the worker faults (``crash``, ``pause``, ``resume``) and the hazard
(``failover``).

Guards and effects are written against the state interface of ``model/logic.py`` (no Python
``if`` on a state value, only on the configuration), so a concrete and a symbolic backend read
the same text.

State (:func:`fields`), keyed by worker, by request instance (``inst``), by id, or scalar:

* workers: ``wstate`` (alive, paused: a GC pause, SIGSTOP or a partition, dead: kill -9);
* instances (one arrival of a request at one worker): ``life`` (unsent, received, in flight,
  responded, refused, lost), ``rid`` (its id), ``wk`` (the worker handling it), ``tok`` (the
  token it believes it holds, 0: none), ``checked`` (``check-then-set`` only: it passed the GET);
* the store: ``ctok``/``cw`` per id (the claim's token and worker; 0 and none when absent),
  ``fence`` (the counter: the last token handed out), ``lag`` (hazard runs only: the id whose
  claim is the store's last change and not yet on the replica);
* ghosts, never read by a rule: ``holder`` per id (the instance whose claim it is), ``told``
  (the store refused this instance's write or renewal), ``expired`` (its claim expired, and
  whether its worker was paused or dead then).

Time is abstracted: a claim may expire only while its holder's worker is paused or dead (a live
worker renews well within the TTL), and the expiry may happen at any moment of that pause. A
successful renewal or write changes no field (the TTL is the abstraction); a refused one tells
the instance it lost its lease. A response is written on the worker's own POST stream (local),
then the claim released, as the protocol says; an instance whose claim expired but that never
learned it may so still answer its own client, and its release deletes nothing.

A dead worker's instances keep their phase: their POSTs' connections closed with the process,
so their clients saw an error (``ended`` counts them as ended).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .declare import (
    Act,
    Bound,
    Design,
    Hazard,
    Move,
    Prop,
    Spec,
    Var,
    always,
    bind,
    eventually,
    sometimes,
    step_output,
)
from .lifecycle import Domain
from .logic import NONE, Logic, Write

# --- value domains ------------------------------------------------------------------------


class Phase(Domain):
    """An instance's lifecycle."""

    UNSENT = 0  # not yet arrived (a slot for a later arrival)
    RECEIVED = 1  # read by its worker, not yet claimed
    IN_FLIGHT = 2  # claimed: its handler runs
    RESPONDED = 3  # answered on its own POST, its claim released
    REFUSED = 4  # the id was claimed: -32600 / HTTP 409 before any stream
    LOST = 5  # told it lost its lease: its POST ended with an error


class Proc(Domain):
    """A worker process."""

    ALIVE = 0
    PAUSED = 1
    DEAD = 2


class Told(Domain):
    """What the store refused of an instance (ghost)."""

    NONE = 0
    WRITE = 1
    RENEW = 2

    @property
    def label(self) -> str:
        return {0: "nothing", 1: "write refused", 2: "renewal refused"}[int(self)]


class Expiry(Domain):
    """Whether an instance's claim expired, and how its worker stood then (ghost)."""

    NO = 0
    PAUSED = 1
    DEAD = 2

    @property
    def label(self) -> str:
        return {0: "no", 1: "while paused", 2: "while dead"}[int(self)]


# --- designs and configurations -------------------------------------------------------------

#: The knobs of a design, each one safeguard (on in ``fenced``, the design built):
#:
#: ``fenced_writes``: every shared write checks that the claim holds the writer's token (else:
#: refused). ``atomic_claim``: the claim is one store operation (refuse, or INCR and SET);
#: otherwise a GET, then an INCR and a plain SET in a second step. ``owned_release``: a release
#: deletes the claim only if it holds the releaser's token (compare-and-delete); otherwise it
#: deletes by id. ``ttl``: claims carry a TTL, renewed by a live worker; otherwise they never
#: expire. ``stops_on_lost``: a worker whose write or renewal is refused stops the handler and
#: ends its POST with an error; otherwise it logs the refusal and carries on.
KNOBS = ("fenced_writes", "atomic_claim", "owned_release", "ttl", "stops_on_lost")

FENCED = Design(
    "fenced",
    "claim atomic, every write and release checked against the token, TTL with renewal",
    tuple((k, True) for k in KNOBS),
)
MUTANTS: dict[str, Design] = {
    d.name: d
    for d in (
        FENCED.mutant(
            "unfenced",
            "writes not checked: a stale owner's late write is accepted",
            fenced_writes=False,
        ),
        FENCED.mutant(
            "check-then-set",
            "claim as GET then SET, two steps: two workers both pass the check",
            atomic_claim=False,
        ),
        FENCED.mutant(
            "release-by-id",
            "DEL without comparing the token: a stale owner deletes the new owner's claim",
            owned_release=False,
        ),
        FENCED.mutant(
            "no-ttl", "claims never expire: a crashed worker's ids are never freed", ttl=False
        ),
        FENCED.mutant(
            "ignore-lost",
            "a refused write or renewal is logged and the handler carries on",
            stops_on_lost=False,
        ),
    )
}
DESIGNS: dict[str, Design] = {"fenced": FENCED, **MUTANTS}
DESIGN_DOCS = {k: d.doc for k, d in DESIGNS.items()}

BOUNDS: dict[str, Bound] = {
    "workers": Bound(2, "worker processes"),
    "requests": Bound(2, "request instances a run may receive (every counterexample needs two)"),
    "ids": Bound(1, "request ids"),
}


@dataclass(frozen=True)
class Config:
    """A run: a design, the bounds (workers, request instances, ids) and whether the hazard
    action ``failover`` is enabled."""

    design: Design = FENCED
    workers: int = 2
    requests: int = 2
    ids: int = 1
    failover: bool = False

    @property
    def bounds_label(self) -> str:
        return (
            f"{self.workers} workers, {self.requests} instances, "
            f"{self.ids} id{'s' if self.ids != 1 else ''}"
        )

    @property
    def label(self) -> str:
        run = " + failover" if self.failover else ""
        return f"{self.design.name}{run} ({self.bounds_label})"


def domains(cfg: Config) -> dict[str, range]:
    return {"worker": range(cfg.workers), "inst": range(cfg.requests), "id": range(cfg.ids)}


# --- names, as traces and states show them --------------------------------------------------


def inst_name(r: int) -> str:
    return "-" if r == NONE else chr(ord("A") + r)


def worker_name(w: int) -> str:
    return "-" if w == NONE else f"w{w + 1}"


def id_name(k: int) -> str:
    return "-" if k == NONE else str(k + 1)


def _token(v: int) -> str:
    return "none" if v == 0 else str(v)


def _flag(v: int) -> str:
    return "true" if v else "false"


def _label(domain: type[Domain]) -> Any:
    return lambda v: domain(v).label


def fields(cfg: Config) -> tuple[Var, ...]:
    """The state at ``cfg``'s bounds: each field with its values, the sort of its keys (all
    three symmetric) and its role; tokens and the fence grow without bound for the prover
    (``hi`` is what a run of ``cfg`` can reach: one token per instance)."""
    W, N, K = cfg.workers, cfg.requests, cfg.ids
    P, I, D = _label(Phase), "inst", "id"
    return (
        Var("wstate", 0, 2, Proc.ALIVE, W, _label(Proc), worker_name, sort="worker"),
        Var("life", 0, 5, Phase.UNSENT, N, P, inst_name, sort=I),
        Var("rid", 0, K - 1, 0, N, id_name, inst_name, sort=I, ref="id"),
        Var("wk", 0, W - 1, 0, N, worker_name, inst_name, sort=I, ref="worker"),
        Var("tok", 0, N, 0, N, _token, inst_name, sort=I, grows=True),
        Var("checked", 0, 1, False, N, _flag, inst_name, sort=I, boolean=True),
        Var("told", 0, 2, Told.NONE, N, _label(Told), inst_name, sort=I, role="ghost"),
        Var("expired", 0, 2, Expiry.NO, N, _label(Expiry), inst_name, sort=I, role="ghost"),
        Var("ctok", 0, N, 0, K, _token, id_name, sort=D, grows=True),
        Var("cw", NONE, W - 1, NONE, K, worker_name, id_name, sort=D, ref="worker"),
        Var("holder", NONE, N - 1, NONE, K, inst_name, id_name, sort=D, ref=I, role="ghost"),
        Var("fence", 0, N, 0, None, str, grows=True),
        Var("lag", NONE, K - 1, NONE, None, id_name, ref="id"),
    )


# --- derived notions ------------------------------------------------------------------------


def runs(b: Logic, s: Any, r: Any) -> Any:
    """r's worker takes steps (alive)."""
    return s.wstate[s.wk[r]] == Proc.ALIVE


def held(b: Logic, s: Any, r: Any) -> Any:
    """The store's claim on r's id holds r's token."""
    return b.And(s.tok[r] != 0, s.ctok[s.rid[r]] == s.tok[r])


def accepts(b: Logic, s: Any, c: Config, r: Any) -> Any:
    """The store accepts a shared write from r (fenced: only while r's claim is current)."""
    return held(b, s, r) if c.design.fenced_writes else True


def ended(b: Logic, s: Any, r: Any) -> Any:
    """r's client has its answer: a response, a refusal, an error (lost, or its worker died)."""
    return b.Or(
        b.In(s.life[r], (Phase.RESPONDED, Phase.REFUSED, Phase.LOST)),
        b.And(s.life[r] != Phase.UNSENT, s.wstate[s.wk[r]] == Proc.DEAD),
    )


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


# --- properties -----------------------------------------------------------------------------
# Each is written against run ``c``'s configuration (its last argument), bound to it by
# :func:`spec_of`; a step property reads the move and its output.


def _writer(b: Logic, s: Any, c: Config, r: Any) -> Any:
    """r believes it holds its id, can still act (its worker is not dead), and the store would
    accept its writes."""
    return b.And(s.life[r] == Phase.IN_FLIGHT, s.wstate[s.wk[r]] != Proc.DEAD, accepts(b, s, c, r))


@always
def single_writer(b: Logic, s: Any, c: Config) -> Any:
    """For each id, at most one instance whose shared writes the store accepts: never two
    admitted instances under one id that can both write (the double admission after a lease
    expiry when writes are not fenced)."""
    return b.ForAll(
        "inst",
        lambda r: b.ForAll(
            "inst",
            lambda q: b.Implies(
                b.And(r != q, s.rid[r] == s.rid[q], _writer(b, s, c, r)),
                b.Not(_writer(b, s, c, q)),
            ),
        ),
    )


@step_output
def no_stale_write(b: Logic, pre: Any, post: Any, m: Move, out: Any, c: Config) -> Any:
    """No write is accepted from an instance whose claim is no longer the current one."""
    a, r = m.name, m.kw.get("r")
    if a != "write":
        return True
    return b.Implies(out["accepted"], held(b, pre, r))


@step_output
def owned_release(b: Logic, pre: Any, post: Any, m: Move, out: Any, c: Config) -> Any:
    """A release removes only the releaser's own claim."""
    a, r = m.name, m.kw.get("r")
    if a != "release":
        return True
    return b.ForAll(
        "id",
        lambda k: b.Implies(b.And(pre.ctok[k] != 0, post.ctok[k] == 0), pre.holder[k] == r),
    )


@step_output
def exclusive_claim(b: Logic, pre: Any, post: Any, m: Move, out: Any, c: Config) -> Any:
    """A held claim is never replaced by another: a second claim on a held id is refused
    (before any stream), and a claim ends only by a release or its expiry."""
    return b.ForAll(
        "id",
        lambda k: b.Implies(pre.ctok[k] != 0, b.Or(post.ctok[k] == pre.ctok[k], post.ctok[k] == 0)),
    )


@always
def lost_lease_ends_request(b: Logic, s: Any, c: Config) -> Any:
    """An instance whose write or renewal the store refused has lost its lease and ends at
    once: lost, its own POST ended with an error; it never hangs, writes nothing more and never
    writes its response."""
    return b.ForAll("inst", lambda r: b.Implies(s.told[r] != Told.NONE, s.life[r] == Phase.LOST))


def no_dead_claim(b: Logic, s: Any, c: Config) -> Any:
    """No claim is held by a dead worker."""
    return b.ForAll("id", lambda k: b.Or(s.ctok[k] == 0, s.wstate[s.cw[k]] != Proc.DEAD))


@eventually("expire")
def ids_free_after_lease(b: Logic, s: Any, c: Config) -> Any:
    """A crashed worker's claims are eventually freed: from every reachable state, a state in
    which no claim is held by a dead worker is reachable. (A dead holder's claim can only be
    removed, and its expiry stays enabled until it happens, so with expiry weakly fair this is
    'eventually'.)"""
    return no_dead_claim(b, s, c)


@sometimes
def lease_expired_and_reclaimed(b: Logic, s: Any, c: Config) -> Any:
    """An instance's claim expired and another worker's instance claimed the id after it."""
    return b.Exists(
        "inst",
        lambda r: b.Exists(
            "inst",
            lambda q: b.And(
                s.expired[r] != Expiry.NO,
                s.rid[q] == s.rid[r],
                s.wk[q] != s.wk[r],
                s.tok[q] > s.tok[r],
            ),
        ),
    )


@sometimes
def stale_write_refused(b: Logic, s: Any, c: Config) -> Any:
    """A stale owner's write was refused and the instance ended with an error."""
    return b.Exists("inst", lambda r: b.And(s.told[r] == Told.WRITE, s.life[r] == Phase.LOST))


@sometimes
def crash_freed(b: Logic, s: Any, c: Config) -> Any:
    """A dead worker's claim expired (the id is free again)."""
    return b.Exists("inst", lambda r: s.expired[r] == Expiry.DEAD)


@sometimes
def duplicate_refused(b: Logic, s: Any, c: Config) -> Any:
    """A request under a claimed id was refused."""
    return b.Exists("inst", lambda r: s.life[r] == Phase.REFUSED)


@sometimes
def sequential_reuse(b: Logic, s: Any, c: Config) -> Any:
    """An id was claimed again after its holder responded and released it (no expiry)."""
    return b.Exists(
        "inst",
        lambda r: b.Exists(
            "inst",
            lambda q: b.And(
                s.life[r] == Phase.RESPONDED,
                s.expired[r] == Expiry.NO,
                s.rid[q] == s.rid[r],
                s.tok[q] > s.tok[r],
            ),
        ),
    )


# auxiliary invariants: facts the prover needs for induction (each proved inductive too)


@always
def tokens_bounded(b: Logic, s: Any, c: Config) -> Any:
    """Every token an instance or a claim holds is between 0 and the fence counter."""
    return b.And(
        s.fence >= 0,
        b.ForAll("inst", lambda r: b.And(s.tok[r] >= 0, s.tok[r] <= s.fence)),
        b.ForAll("id", lambda k: b.And(s.ctok[k] >= 0, s.ctok[k] <= s.fence)),
    )


@always
def tokens_unique(b: Logic, s: Any, c: Config) -> Any:
    """No two instances hold the same token."""
    return b.ForAll(
        "inst",
        lambda r: b.ForAll(
            "inst", lambda q: b.Implies(b.And(r != q, s.tok[r] != 0), s.tok[r] != s.tok[q])
        ),
    )


@always
def claim_has_holder(b: Logic, s: Any, c: Config) -> Any:
    """A claim is its holder's: the holder is in flight under that id, on that worker, with
    that token; no claim, no holder."""

    def one(k: Any) -> Any:
        h = s.holder[k]
        absent = b.And(s.ctok[k] == 0, h == NONE, s.cw[k] == NONE)
        present = b.And(
            s.ctok[k] != 0,
            h != NONE,
            s.tok[h] == s.ctok[k],
            s.rid[h] == k,
            s.cw[k] == s.wk[h],
            s.life[h] == Phase.IN_FLIGHT,
        )
        return b.Or(absent, present)

    return b.ForAll("id", one)


@always
def phase_tokens(b: Logic, s: Any, c: Config) -> Any:
    """An unsent instance holds no token and was told nothing; an instance in flight holds a
    token."""
    return b.ForAll(
        "inst",
        lambda r: b.And(
            b.Implies(s.life[r] == Phase.UNSENT, b.And(s.tok[r] == 0, s.told[r] == Told.NONE)),
            b.Implies(s.life[r] == Phase.IN_FLIGHT, s.tok[r] != 0),
        ),
    )


PROPERTIES: tuple[Prop, ...] = (
    single_writer,
    no_stale_write,
    owned_release,
    exclusive_claim,
    lost_lease_ends_request,
    ids_free_after_lease,
    lease_expired_and_reclaimed,
    stale_write_refused,
    crash_freed,
    duplicate_refused,
    sequential_reuse,
)
#: Sensitivity: the mutants that must break each invariant and liveness property at the
#: default bounds (``check`` runs them; see ``model/properties.py``'s ``BROKEN_BY``).
BROKEN_BY: dict[str, tuple[str, ...]] = {
    "single_writer": ("unfenced",),
    "no_stale_write": ("unfenced",),
    "owned_release": ("release-by-id",),
    "exclusive_claim": ("check-then-set",),
    "lost_lease_ends_request": ("ignore-lost",),
    "ids_free_after_lease": ("no-ttl",),
}
INVARIANTS = tuple(p for p in PROPERTIES if p.kind in ("always", "step"))
LIVENESS = tuple(p for p in PROPERTIES if p.kind == "liveness")
WITNESSES = tuple(p for p in PROPERTIES if p.kind == "sometimes")
#: auxiliary invariants: facts the prover needs for induction (each proved inductive too)
AUXILIARY: tuple[Prop, ...] = (tokens_bounded, tokens_unique, claim_has_holder, phase_tokens)
PROPERTY = {p.name: p for p in PROPERTIES + AUXILIARY}

FAILOVER = Hazard(
    "failover",
    "asynchronous replication: a replica promoted before it saw the last claim and its INCR "
    "hands the same token out again, so the id gets a second owner with a current token",
    "WAIT / min-replicas-to-write narrow the window but do not close it; tokens that carry the "
    "primary's identity (its replication id), so that every token issued before a failover is "
    "refused after it, close it: treat a failover as the end of every lease",
    "failover",
)
HAZARDS: tuple[Hazard, ...] = (FAILOVER,)


#: why instances are renamed only among the arrived ones by the symmetry reduction
#: (``proofs/declared_symmetry.py``)
ARRIVAL_ORDER = (
    "arrivals fill instance slots in order (an instance is an arrival number, the guard of "
    "arrive), itself a reduction: only a renaming among the arrived instances is a symmetry"
)


def spec_of(cfg: Config) -> Spec:
    """The lease model at run ``cfg``: proved for any number of workers, instances and ids
    (the three sorts are unbounded for the prover; ``cfg``'s bounds size the explorer's run)."""
    acts = actions(cfg)
    names = {a.name for a in acts}
    # a design without the action a liveness property rests on (no-ttl: no expiry) leaves it
    # resting on nothing: the explorer judges whether it still holds
    props = tuple(
        replace(bind(p, cfg), fair=tuple(a for a in p.fair if a in names)) for p in PROPERTIES
    )
    return Spec(
        "lease",
        cfg.design.name,
        {"workers": cfg.workers, "requests": cfg.requests, "ids": cfg.ids},
        fields(cfg),
        acts,
        props,
        domains(cfg),
        aux=tuple(bind(p, cfg) for p in AUXILIARY),
        unbounded=("worker", "inst", "id"),
        run=cfg.bounds_label,
        ordered=(("inst", ARRIVAL_ORDER),),
        universes=tuple(
            (("worker", w), ("inst", n), ("id", k))
            for w, n, k in ((1, 1, 1), (1, 2, 1), (2, 2, 1), (2, 3, 1), (2, 2, 2), (2, 3, 2))
        ),
    )


def spec(design: str = "fenced", **bounds: int) -> Spec:
    """The lease model at ``design`` and ``bounds`` (defaults: :data:`BOUNDS`; ``failover=1``:
    the hazard's run)."""
    bad = set(bounds) - set(BOUNDS) - {"failover"}
    if bad:
        raise ValueError(f"unknown bound(s) of lease: {', '.join(sorted(bad))}")
    bd = {k: bounds.get(k, v.default) for k, v in BOUNDS.items()}
    return spec_of(Config(DESIGNS[design], failover=bool(bounds.get("failover", 0)), **bd))
