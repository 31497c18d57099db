"""Many workers sharing one store: the lease protocol of the in-flight claim.

Several worker processes serve one session; a request's POST reaches whichever worker the load
balancer picks, and that worker runs the handler and holds the POST's response stream. The
shared store (Redis) holds the claims: ``claim[I]`` is ``<token>:<worker>`` with a TTL (the
lease), ``fence`` a counter whose values are the tokens. This file is the whole of that
protocol's rules, in the manner of ``model/session.py``: the fields, the actions (guard, effect,
output), the designs and the properties. The explorer and the z3 prover (``proofs/lease.py``)
read these definitions and add none of their own; the action names are those of the store's
scripts (``claim``, ``renew``, ``write``, ``release``, ``expire``) and of the worker faults
(``crash``, ``pause``, ``resume``) and the hazard (``failover``).

Guards and effects are written against the state interface of ``model/logic.py`` (no Python
``if`` on a state value, only on the configuration), so a concrete and a symbolic backend read
the same text.

State (``FIELDS``), keyed by worker, by request instance (``inst``), by id, or scalar:

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

from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from .lifecycle import Domain
from .logic import NONE, Concrete, Logic, Write, apply_writes
from .trace import TraceStep

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


@dataclass(frozen=True)
class Field:
    """One field of the state. ``sort``: ``phase``, ``proc``, ``told``, ``expiry`` (finite,
    ``domain``), ``id``, ``worker``, ``token``, ``count`` (naturals; token 0 is none), ``inst?``, ``worker?``, ``id?``
    (a reference or ``NONE``), ``bool``."""

    name: str
    key: str | None  # "worker", "inst", "id" or None (scalar)
    sort: str
    ghost: bool
    default: object
    doc: str
    domain: type[Domain] | None = None


FIELDS: tuple[Field, ...] = (
    Field("wstate", "worker", "proc", False, Proc.ALIVE, "alive, paused or dead", Proc),
    Field("life", "inst", "phase", False, Phase.UNSENT, "the instance's lifecycle", Phase),
    Field("rid", "inst", "id", False, 0, "its request id"),
    Field("wk", "inst", "worker", False, 0, "the worker handling it"),
    Field("tok", "inst", "token", False, 0, "the token it believes it holds (0: none)"),
    Field("checked", "inst", "bool", False, False, "check-then-set: it passed the GET"),
    Field("told", "inst", "told", True, Told.NONE, "the store refused its write or renewal", Told),
    Field("expired", "inst", "expiry", True, Expiry.NO, "its claim expired", Expiry),
    Field("ctok", "id", "token", False, 0, "the claim's token (0: no claim)"),
    Field("cw", "id", "worker?", False, NONE, "the claim's worker"),
    Field("holder", "id", "inst?", True, NONE, "the instance whose claim it is"),
    Field("fence", None, "count", False, 0, "the fence counter (the last token handed out)"),
    Field("lag", None, "id?", False, NONE, "failover runs: the claim not yet on the replica"),
)
FIELD = {f.name: f for f in FIELDS}

if TYPE_CHECKING:
    State = Any
else:
    State = namedtuple("LeaseState", [f.name for f in FIELDS])


# --- designs and configurations -------------------------------------------------------------


@dataclass(frozen=True)
class Design:
    """One way of running the lease protocol; each knob is one safeguard.

    fenced_writes
        Every shared write checks that the claim holds the writer's token (else: refused).
    atomic_claim
        The claim is one store operation (refuse, or INCR and SET); otherwise a GET, then an
        INCR and a plain SET in a second step.
    owned_release
        A release deletes the claim only if it holds the releaser's token (compare-and-delete);
        otherwise it deletes by id.
    ttl
        Claims carry a TTL, renewed by a live worker; otherwise they never expire.
    stops_on_lost
        A worker whose write or renewal is refused stops the handler and ends its POST with an
        error; otherwise it logs the refusal and carries on.
    """

    name: str
    doc: str
    fenced_writes: bool = True
    atomic_claim: bool = True
    owned_release: bool = True
    ttl: bool = True
    stops_on_lost: bool = True


FENCED = Design(
    "fenced",
    "claim atomic, every write and release checked against the token, TTL with renewal",
)
MUTANTS: dict[str, Design] = {
    d.name: d
    for d in (
        replace(
            FENCED,
            name="unfenced",
            doc="writes not checked: a stale owner's late write is accepted",
            fenced_writes=False,
        ),
        replace(
            FENCED,
            name="check-then-set",
            doc="claim as GET then SET, two steps: two workers both pass the check",
            atomic_claim=False,
        ),
        replace(
            FENCED,
            name="release-by-id",
            doc="DEL without comparing the token: a stale owner deletes the new owner's claim",
            owned_release=False,
        ),
        replace(
            FENCED,
            name="no-ttl",
            doc="claims never expire: a crashed worker's ids are never freed",
            ttl=False,
        ),
        replace(
            FENCED,
            name="ignore-lost",
            doc="a refused write or renewal is logged and the handler carries on",
            stops_on_lost=False,
        ),
    )
}
DESIGNS: dict[str, Design] = {"fenced": FENCED, **MUTANTS}


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
    def label(self) -> str:
        run = " + failover" if self.failover else ""
        return (
            f"{self.design.name}{run} ({self.workers} workers, {self.requests} instances, "
            f"{self.ids} id{'s' if self.ids != 1 else ''})"
        )


def size(cfg: Config, key: str | None) -> int | None:
    return {"worker": cfg.workers, "inst": cfg.requests, "id": cfg.ids}.get(key or "")


def initial(cfg: Config) -> State:
    vals: list[object] = []
    for f in FIELDS:
        n = size(cfg, f.key)
        vals.append(f.default if n is None else (f.default,) * n)
    return State(*vals)


def domains(cfg: Config) -> dict[str, range]:
    return {"worker": range(cfg.workers), "inst": range(cfg.requests), "id": range(cfg.ids)}


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

#: ``fn(b, s, c, r, w, i)``: the arguments an action does not take are ``None``.
Fn = Callable[[Logic, Any, Config, Any, Any, Any], Any]


def _no_out(b: Logic, s: Any, c: Config, r: Any, w: Any, i: Any) -> dict[str, Any]:
    return {}


def _always(c: Config) -> bool:
    return True


@dataclass(frozen=True)
class Action:
    """One kind of step. ``params``: which of ``r`` (instance), ``w`` (worker), ``i`` (id) it
    takes. ``side``: ``worker`` (a worker's store operation: one script call, one round
    trip), ``client`` (a request arrives), ``store`` (the store on its own), ``fault``.
    The guard is ``phases`` (the phases ``r`` must be in), ``procs`` (the states worker ``w``
    must be in) and ``condition``. ``output``: named values the step properties and the stories
    read (``held``, ``accepted``, ``deleted``, ``granted``)."""

    name: str
    side: str
    params: tuple[str, ...]
    condition: Fn
    effect: Callable[[Logic, Any, Config, Any, Any, Any], list[Write]]
    story: str
    phases: tuple[Phase, ...] = ()
    procs: tuple[Proc, ...] = ()
    applies: Callable[[Config], bool] = _always
    output: Callable[[Logic, Any, Config, Any, Any, Any], dict[str, Any]] = _no_out

    def guard(
        self, b: Logic, s: Any, c: Config, r: Any = None, w: Any = None, i: Any = None
    ) -> Any:
        parts = []
        if self.phases:
            parts.append(b.In(s.life[r], self.phases))
        if self.procs:
            parts.append(b.In(s.wstate[w], self.procs))
        parts.append(self.condition(b, s, c, r, w, i))
        return b.And(*parts)

    def run(
        self, b: Logic, s: Any, c: Config, r: Any = None, w: Any = None, i: Any = None
    ) -> tuple[Any, dict[str, Any], list[Write]]:
        """(guard, outputs, writes) on pre-state ``s``."""
        return (
            self.guard(b, s, c, r, w, i),
            self.output(b, s, c, r, w, i),
            self.effect(b, s, c, r, w, i),
        )


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


ACTIONS: tuple[Action, ...] = (
    Action(
        "arrive",
        "client",
        ("r", "w", "i"),
        _arrive_guard,
        _arrive,
        "request {r} (id={i}) arrives at worker {w}",
        phases=(Phase.UNSENT,),
        procs=(Proc.ALIVE,),
    ),
    Action(
        "claim",
        "worker",
        ("r",),
        _claim_guard,
        _claim,
        "{w} claims id={id} for {r}",
        phases=(Phase.RECEIVED,),
        output=_free,
    ),
    Action(
        "claim_set",
        "worker",
        ("r",),
        _claim_set_guard,
        _claim_set,
        "{w} sets the claim on id={id} for {r} (INCR, SET)",
        phases=(Phase.RECEIVED,),
        applies=lambda c: not c.design.atomic_claim,
    ),
    Action(
        "renew",
        "worker",
        ("r",),
        _working,
        _renew,
        "{w} renews {r}'s lease on id={id}",
        phases=(Phase.IN_FLIGHT,),
        output=_held_out,
    ),
    Action(
        "write",
        "worker",
        ("r",),
        _working,
        _write,
        "{r} makes a shared write for id={id} (event, waiter, publish)",
        phases=(Phase.IN_FLIGHT,),
        output=_write_out,
    ),
    Action(
        "release",
        "worker",
        ("r",),
        _working,
        _release,
        "{r} responds on its own POST and releases id={id}",
        phases=(Phase.IN_FLIGHT,),
        output=_release_out,
    ),
    Action(
        "expire",
        "store",
        ("i",),
        _expire_guard,
        _expire,
        "the claim on id={i} expires (its worker did not renew)",
        applies=lambda c: c.design.ttl,
    ),
    Action(
        "crash",
        "fault",
        ("w",),
        _true,
        _set_proc(Proc.DEAD),
        "worker {w} crashes (kill -9)",
        procs=(Proc.ALIVE, Proc.PAUSED),
    ),
    Action(
        "pause",
        "fault",
        ("w",),
        _true,
        _set_proc(Proc.PAUSED),
        "worker {w} pauses (GC, SIGSTOP, partition)",
        procs=(Proc.ALIVE,),
    ),
    Action(
        "resume",
        "fault",
        ("w",),
        _true,
        _set_proc(Proc.ALIVE),
        "worker {w} resumes",
        procs=(Proc.PAUSED,),
    ),
    Action(
        "failover",
        "store",
        (),
        _failover_guard,
        _failover,
        "the store fails over to a replica that missed the last claim",
        applies=lambda c: c.failover,
    ),
)
ACTION = {a.name: a for a in ACTIONS}


@cache
def actions_for(cfg: Config) -> tuple[Action, ...]:
    return tuple(a for a in ACTIONS if a.applies(cfg))


# --- properties -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Property:
    """A named property. ``scope``: ``state`` (``fn(b, s, c)``), ``step`` (``fn(b, pre, post,
    c, action, r, w, i, out)``, vacuously true for actions it does not speak of) or ``graph``
    (liveness: ``fn(b, s, c)`` is the goal that must stay reachable from every reachable
    state)."""

    name: str
    kind: str  # "invariant" | "witness" | "liveness" | "auxiliary"
    scope: str
    fn: Callable[..., Any]
    doc: str
    applies: Callable[[Config], bool] = field(default=_always)


def _prop(kind: str, scope: str = "state") -> Callable[[Callable[..., Any]], Property]:
    def make(fn: Callable[..., Any]) -> Property:
        if not fn.__doc__:
            raise ValueError(f"property {fn.__name__} has no docstring")
        return Property(fn.__name__, kind, scope, fn, " ".join(fn.__doc__.split()))

    return make


def _writer(b: Logic, s: Any, c: Config, r: Any) -> Any:
    """r believes it holds its id, can still act (its worker is not dead), and the store would
    accept its writes."""
    return b.And(s.life[r] == Phase.IN_FLIGHT, s.wstate[s.wk[r]] != Proc.DEAD, accepts(b, s, c, r))


@_prop("invariant")
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


@_prop("invariant", "step")
def no_stale_write(
    b: Logic, pre: Any, post: Any, c: Config, a: str, r: Any, w: Any, i: Any, out: Any
) -> Any:
    """No write is accepted from an instance whose claim is no longer the current one."""
    if a != "write":
        return True
    return b.Implies(out["accepted"], held(b, pre, r))


@_prop("invariant", "step")
def owned_release(
    b: Logic, pre: Any, post: Any, c: Config, a: str, r: Any, w: Any, i: Any, out: Any
) -> Any:
    """A release removes only the releaser's own claim."""
    if a != "release":
        return True
    return b.ForAll(
        "id",
        lambda k: b.Implies(b.And(pre.ctok[k] != 0, post.ctok[k] == 0), pre.holder[k] == r),
    )


@_prop("invariant", "step")
def exclusive_claim(
    b: Logic, pre: Any, post: Any, c: Config, a: str, r: Any, w: Any, i: Any, out: Any
) -> Any:
    """A held claim is never replaced by another: a second claim on a held id is refused
    (before any stream), and a claim ends only by a release or its expiry."""
    return b.ForAll(
        "id",
        lambda k: b.Implies(pre.ctok[k] != 0, b.Or(post.ctok[k] == pre.ctok[k], post.ctok[k] == 0)),
    )


@_prop("invariant")
def lost_lease_ends_request(b: Logic, s: Any, c: Config) -> Any:
    """An instance whose write or renewal the store refused has lost its lease and ends at
    once: lost, its own POST ended with an error; it never hangs, writes nothing more and never
    writes its response."""
    return b.ForAll("inst", lambda r: b.Implies(s.told[r] != Told.NONE, s.life[r] == Phase.LOST))


def no_dead_claim(b: Logic, s: Any, c: Config) -> Any:
    """No claim is held by a dead worker."""
    return b.ForAll("id", lambda k: b.Or(s.ctok[k] == 0, s.wstate[s.cw[k]] != Proc.DEAD))


@_prop("liveness", "graph")
def ids_free_after_lease(b: Logic, s: Any, c: Config) -> Any:
    """A crashed worker's claims are eventually freed: from every reachable state, a state in
    which no claim is held by a dead worker is reachable. (A dead holder's claim can only be
    removed, and its expiry stays enabled until it happens, so with expiry weakly fair this is
    'eventually'.)"""
    return no_dead_claim(b, s, c)


@_prop("witness")
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


@_prop("witness")
def stale_write_refused(b: Logic, s: Any, c: Config) -> Any:
    """A stale owner's write was refused and the instance ended with an error."""
    return b.Exists("inst", lambda r: b.And(s.told[r] == Told.WRITE, s.life[r] == Phase.LOST))


@_prop("witness")
def crash_freed(b: Logic, s: Any, c: Config) -> Any:
    """A dead worker's claim expired (the id is free again)."""
    return b.Exists("inst", lambda r: s.expired[r] == Expiry.DEAD)


@_prop("witness")
def duplicate_refused(b: Logic, s: Any, c: Config) -> Any:
    """A request under a claimed id was refused."""
    return b.Exists("inst", lambda r: s.life[r] == Phase.REFUSED)


@_prop("witness")
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


@_prop("auxiliary")
def tokens_bounded(b: Logic, s: Any, c: Config) -> Any:
    """Every token an instance or a claim holds is between 0 and the fence counter."""
    return b.And(
        s.fence >= 0,
        b.ForAll("inst", lambda r: b.And(s.tok[r] >= 0, s.tok[r] <= s.fence)),
        b.ForAll("id", lambda k: b.And(s.ctok[k] >= 0, s.ctok[k] <= s.fence)),
    )


@_prop("auxiliary")
def tokens_unique(b: Logic, s: Any, c: Config) -> Any:
    """No two instances hold the same token."""
    return b.ForAll(
        "inst",
        lambda r: b.ForAll(
            "inst", lambda q: b.Implies(b.And(r != q, s.tok[r] != 0), s.tok[r] != s.tok[q])
        ),
    )


@_prop("auxiliary")
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


@_prop("auxiliary")
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


PROPERTIES: tuple[Property, ...] = (
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
INVARIANTS = tuple(p for p in PROPERTIES if p.kind == "invariant")
LIVENESS = tuple(p for p in PROPERTIES if p.kind == "liveness")
WITNESSES = tuple(p for p in PROPERTIES if p.kind == "witness")
AUXILIARY: tuple[Property, ...] = (tokens_bounded, tokens_unique, claim_has_holder, phase_tokens)
PROPERTY = {p.name: p for p in PROPERTIES + AUXILIARY}


@dataclass(frozen=True)
class Hazard:
    """A trace the protocol cannot exclude under any design: the action that makes it possible
    is enabled only in the hazard's own run, and the invariants are judged there."""

    name: str
    doc: str
    remedy: str


FAILOVER = Hazard(
    "failover",
    "asynchronous replication: a replica promoted before it saw the last claim and its INCR "
    "hands the same token out again, so the id gets a second owner with a current token",
    "WAIT / min-replicas-to-write narrow the window but do not close it; tokens that carry the "
    "primary's identity (its replication id), so that every token issued before a failover is "
    "refused after it, close it: treat a failover as the end of every lease",
)
HAZARDS: tuple[Hazard, ...] = (FAILOVER,)


# --- concrete steps -------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """An action with its arguments fixed (``None`` for those it does not take)."""

    action: Action
    r: int | None = None
    w: int | None = None
    i: int | None = None

    @property
    def args(self) -> dict[str, int]:
        return {k: v for k, v in (("r", self.r), ("w", self.w), ("i", self.i)) if v is not None}


@cache
def moves(cfg: Config) -> tuple[Move, ...]:
    out = []
    for a in actions_for(cfg):
        rs = range(cfg.requests) if "r" in a.params else (None,)
        ws = range(cfg.workers) if "w" in a.params else (None,)
        ids = range(cfg.ids) if "i" in a.params else (None,)
        out += [Move(a, r, w, i) for r in rs for w in ws for i in ids]
    return tuple(out)


def backend(cfg: Config) -> Concrete:
    return Concrete(domains(cfg))


def take(cfg: Config, s: State, m: Move, b: Concrete) -> tuple[State, dict[str, Any]] | None:
    """``(post, outputs)`` of ``m`` from ``s`` if its guard holds, else None."""
    a = m.action
    if a.phases and s.life[m.r] not in a.phases:  # the cheap part of the guard first
        return None
    if a.procs and s.wstate[m.w] not in a.procs:
        return None
    if not a.guard(b, s, cfg, m.r, m.w, m.i):
        return None
    out = a.output(b, s, cfg, m.r, m.w, m.i)
    return apply_writes(s, a.effect(b, s, cfg, m.r, m.w, m.i)), out


def successors(cfg: Config, s: State, b: Concrete) -> Iterator[tuple[Move, State, dict[str, Any]]]:
    for m in moves(cfg):
        t = take(cfg, s, m, b)
        if t is not None:
            yield m, t[0], t[1]


def step_ok(
    cfg: Config, b: Concrete, p: Property, pre: State, post: State, m: Move, out: Any
) -> bool:
    return bool(p.fn(b, pre, post, cfg, m.action.name, m.r, m.w, m.i, out))


# --- rendering ------------------------------------------------------------------------------


def inst_name(r: int) -> str:
    return "-" if r == NONE else chr(ord("A") + r)


def worker_name(w: int) -> str:
    return "-" if w == NONE else f"w{w + 1}"


def id_name(k: int) -> str:
    return "-" if k == NONE else str(k + 1)


def render_value(f: Field, v: Any) -> str:
    if f.domain is not None:
        return f.domain(v).label
    if f.sort == "inst?":
        return inst_name(v)
    if f.sort in ("worker", "worker?"):
        return worker_name(v)
    if f.sort in ("id", "id?"):
        return id_name(v)
    if f.sort == "token":
        return "none" if v == 0 else str(v)
    if f.sort == "bool":
        return "true" if v else "false"
    return str(v)


_KEY_NAME = {"worker": worker_name, "inst": inst_name, "id": id_name}


def changes(pre: State, post: State) -> dict[str, list[str]]:
    """The fields that changed, as ``{"life[A]": ["received", "in_flight"]}``."""
    out: dict[str, list[str]] = {}
    for f in FIELDS:
        a, b = getattr(pre, f.name), getattr(post, f.name)
        if f.key is None:
            if a != b:
                out[f.name] = [render_value(f, a), render_value(f, b)]
            continue
        for k, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                out[f"{f.name}[{_KEY_NAME[f.key](k)}]"] = [render_value(f, x), render_value(f, y)]
    return out


def story(m: Move, pre: State, post: State, out: dict[str, Any]) -> str:
    a = m.action
    r = m.r
    w = m.w if m.w is not None else None if r is None else pre.wk[r]
    text = a.story.format(
        r=inst_name(r) if r is not None else "",
        w=worker_name(w) if w is not None else "",
        i=id_name(m.i) if m.i is not None else "",
        id=id_name(pre.rid[r]) if r is not None else "",
    )
    notes = []
    name = a.name
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
        i = pre.rid[r]
        if not out["deleted"]:
            notes.append("the claim is not its own: nothing deleted")
        elif pre.holder[i] != r:
            notes.append(f"deletes {inst_name(pre.holder[i])}'s claim  <-- not its own")
        else:
            notes.append("claim deleted")
    elif name == "expire":
        notes.append(f"{inst_name(pre.holder[m.i])}'s token {pre.ctok[m.i]}")
    elif name == "failover":
        notes.append(f"claim on id={id_name(pre.lag)} lost, fence back to {post.fence}")
    return text + ("  ->  " + "; ".join(notes) if notes else "")


def trace_step(m: Move, pre: State, post: State, out: dict[str, Any]) -> TraceStep:
    args = {
        k: (inst_name(v) if k == "r" else worker_name(v) if k == "w" else id_name(v))
        for k, v in m.args.items()
    }
    return TraceStep(m.action.name, args, story(m, pre, post, out), changes(pre, post))


def describe(s: State) -> dict[str, Any]:
    """A state as ``{"workers": {...}, "instances": {...}, "claims": {...}, "fence": n}``."""
    out: dict[str, Any] = {
        "workers": {worker_name(w): Proc(v).label for w, v in enumerate(s.wstate)},
        "instances": {
            inst_name(n): {
                f.name: render_value(f, getattr(s, f.name)[n]) for f in FIELDS if f.key == "inst"
            }
            for n in range(len(s.life))
        },
        "claims": {
            id_name(k): {
                f.name: render_value(f, getattr(s, f.name)[k]) for f in FIELDS if f.key == "id"
            }
            for k in range(len(s.ctok))
        },
    }
    for f in FIELDS:
        if f.key is None:
            out[f.name] = render_value(f, getattr(s, f.name))
    return out


def describe_lines(d: dict[str, Any]) -> list[str]:
    """:func:`describe`'s dictionary as text lines."""
    lines = ["workers: " + " ".join(f"{k}={v}" for k, v in d["workers"].items())]
    for name, vals in d["instances"].items():
        lines.append(f"{name}: " + " ".join(f"{k}={v}" for k, v in vals.items()))
    for name, vals in d["claims"].items():
        lines.append(f"id {name}: " + " ".join(f"{k}={v}" for k, v in vals.items()))
    lines.append(f"fence={d['fence']} lag={d['lag']}")
    return lines


def run_moves(cfg: Config, named: Iterable[tuple[str, dict[str, int]]]) -> list[TraceStep]:
    """The trace of the moves ``(action, args)`` taken in order from the initial state;
    ``ValueError`` at the first one not enabled."""
    b = backend(cfg)
    s = initial(cfg)
    out = []
    for n, (name, args) in enumerate(named):
        m = Move(ACTION[name], args.get("r"), args.get("w"), args.get("i"))
        t = take(cfg, s, m, b)
        if t is None:
            raise ValueError(f"move {n}: {name}({args}) is not enabled")
        out.append(trace_step(m, s, t[0], t[1]))
        s = t[0]
    return out
