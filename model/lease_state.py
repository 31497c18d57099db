"""The lease model's state: value domains, designs, bounds, a run, fields and derived notions.

The first of the lease model's three modules, each importing only those before it: this one,
then ``model/lease_actions.py`` (the actions: guard, effect, output, story), then
``model/lease.py`` (the properties, the hazard and the declaration ``spec``, the entry of
``DECLARED_MODELS``).

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

A dead worker's instances keep their phase: their POSTs' connections closed with the process,
so their clients saw an error (:func:`ended` counts them as ended).

Beside the fields: the designs (``KNOBS``, the built design ``FENCED`` and its ``MUTANTS``),
the bounds, a run (:class:`Config`), the names traces and states show, and the derived notions
that actions and properties both read (:func:`runs`, :func:`held`, :func:`accepts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .declare import Bound, Design, Var
from .lifecycle import Domain
from .logic import NONE, Logic

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
