"""Many workers sharing one store: the lease protocol of the in-flight claim.

Several worker processes serve one session; a request's POST reaches whichever worker the load
balancer picks, and that worker runs the handler and holds the POST's response stream. The
shared store (Redis) holds the claims: ``claim[I]`` is ``<token>:<worker>`` with a TTL (the
lease), ``fence`` a counter whose values are the tokens. The protocol's rules are declared with
the one declaration of ``model/declare.py``, in three modules, each importing only those before
it: ``model/lease_state.py`` (the value domains, the designs and bounds, a run, the fields, the
names and the derived notions), ``model/lease_actions.py`` (the actions: guard, effect, output,
story) and this one (the properties, the auxiliary invariants the prover needs, the hazard
``failover``, and :func:`spec`, the declaration of one run).  The one checker of ``proofs/``
(``proofs/explorer.py``, ``proofs/induction.py``) reads them and adds none of its own.

This module is the model's entry (``DECLARED_MODELS`` in ``model/declare.py``): what every
declared model gives is read from here: ``DESIGN_DOCS``, ``HAZARDS``, ``spec``, ``BROKEN_BY``
(the mutants that must break each property), and ``DESIGNS`` and ``BOUNDS``, defined in
``model/lease_state.py`` and read by :func:`spec`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .declare import (
    Hazard,
    Move,
    Prop,
    Spec,
    always,
    bind,
    eventually,
    sometimes,
    step_output,
)
from .lease_actions import actions
from .lease_state import (
    BOUNDS,
    DESIGNS,
    Config,
    Expiry,
    Phase,
    Proc,
    Told,
    accepts,
    domains,
    fields,
    held,
)
from .logic import NONE, Logic

#: what each design is, in a sentence (every declared model gives it)
DESIGN_DOCS = {k: d.doc for k, d in DESIGNS.items()}


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
