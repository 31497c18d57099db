"""Auxiliary invariants: the facts that make the safety invariants inductive.

The invariants of ``model/properties.py`` speak of what a user sees (no misrouting, no leak, no
hung request).  Most are true of ``atomic`` but not *inductive* on their own: a state can satisfy
them and still reach a bad one in one step (for instance a state where an id is "in flight" for
an instance that no longer runs).  Such states are unreachable, and the facts below say why.  The
prover (``proofs/prove.py``) proves each of them inductive together with the invariants, and
every invariant's proof lists them; a candidate that is not inductive on a design comes back
with a counterexample to induction, and a candidate that does not hold is simply not part of
that design's proof.

They are written against the state interface of ``model/logic.py``, like every property, so
the explorer can check them too (``explore(cfg, properties=AUXILIARY)``).  They state facts about
the model's state; they add no rule and no guard.  ``applies(c)`` restricts a fact to the
configurations where its subject exists (the stream registry on http, the send clock on stdio,
the id being held until the handler ends).
"""

from __future__ import annotations

from typing import Any

from .config import Config
from .lifecycle import LIVE, Life
from .logic import NONE, Logic
from .properties import no_waiter_outlives_request
from .property_kinds import Property, auxiliary
from .session_state import Cmsg, Sreq, Step

_always = lambda c: True  # noqa: E731


def unsent_is_blank(b: Logic, s: Any, c: Config) -> Any:
    """A slot no request has used holds nothing: no handler, no open channel, no response, no
    cancel, no claim progress.  Needed so that a registry entry or a
    cancel can never be attributed to an instance that was never sent."""
    return b.ForAll(
        "inst",
        lambda r: b.Implies(
            s.life[r] == Life.UNSENT,
            b.And(
                b.Not(s.running[r]),
                b.Not(s.open[r]),
                b.Not(s.got_resp[r]),
                b.Not(s.rogue[r]),
                s.cmsg[r] == Cmsg.NONE,
                s.step[r] == Step.UNCHECKED,
            ),
        ),
    )


def inflight_names_owner(b: Logic, s: Any, c: Config) -> Any:
    """An in-flight entry under id k names a running instance whose id is k.  Needed by every
    registry invariant: it is what makes "the entry under my id" mean "my entry"."""
    return b.ForAll(
        "id",
        lambda k: b.Implies(
            s.inflight[k] != NONE, b.And(s.rid[s.inflight[k]] == k, s.running[s.inflight[k]])
        ),
    )


def inflight_names_live(b: Logic, s: Any, c: Config) -> Any:
    """With the id freed on the cancel itself, an in-flight entry under id k names a live
    instance of id k: the cancel releases its target's entry, so a cancelled handler that still
    runs holds none (the stronger form ``inflight_names_owner`` needs, since
    ``running_owns_inflight`` does not hold there)."""
    return b.ForAll(
        "id",
        lambda k: b.Implies(
            s.inflight[k] != NONE,
            b.And(s.rid[s.inflight[k]] == k, b.In(s.life[s.inflight[k]], LIVE)),
        ),
    )


def live_is_running(b: Logic, s: Any, c: Config) -> Any:
    """An admitted instance that has neither finished nor been cancelled has a running handler."""
    return b.ForAll("inst", lambda r: b.Implies(b.In(s.life[r], LIVE), s.running[r]))


def running_is_admitted(b: Logic, s: Any, c: Config) -> Any:
    """A running handler belongs to an admitted instance, live or cancelled and unwinding."""
    return b.ForAll(
        "inst", lambda r: b.Implies(s.running[r], b.In(s.life[r], LIVE + (Life.CANCELLED,)))
    )


def live_owns_inflight(b: Logic, s: Any, c: Config) -> Any:
    """A live instance holds the in-flight entry of its id.  This is the heart of the atomic
    claim: nothing can overwrite the entry while its owner is live, so a removal or a cancel that
    looks the id up finds the owner (and an identity guard on it never fires)."""
    return b.ForAll("inst", lambda r: b.Implies(b.In(s.life[r], LIVE), s.inflight[s.rid[r]] == r))


def running_owns_inflight(b: Logic, s: Any, c: Config) -> Any:
    """With the id held until the handler ends, every running handler (cancelled ones included)
    holds the in-flight entry of its id, so a new request under that id is refused until then."""
    return b.ForAll("inst", lambda r: b.Implies(s.running[r], s.inflight[s.rid[r]] == r))


def stream_follows_inflight(b: Logic, s: Any, c: Config) -> Any:
    """http: a stream slot is held only by the instance holding the in-flight entry of the same
    id (the atomic claim takes both; they are released together, or the stream first)."""
    return b.ForAll("id", lambda k: b.Implies(s.stream[k] != NONE, s.inflight[k] == s.stream[k]))


def stream_names_holder(b: Logic, s: Any, c: Config) -> Any:
    """http: a stream slot under id k names an instance of id k whose handler runs, or (only
    under a split claim) one that has claimed the slot and not yet been admitted or refused.  So
    when the holder finishes it releases the slot (the guarded removal finds it its own), and no
    slot outlives every handler (``quiescent_clean`` under a split claim, or with the id freed on
    the cancel)."""

    def held(r: Any) -> Any:
        if c.design.claim != "split":
            return s.running[r]
        return b.Or(s.running[r], b.And(s.life[r] == Life.RECEIVED, s.step[r] == Step.CLAIMED))

    return b.ForAll(
        "id",
        lambda k: b.Implies(s.stream[k] != NONE, b.And(s.rid[s.stream[k]] == k, held(s.stream[k]))),
    )


def open_live_has_stream(b: Logic, s: Any, c: Config) -> Any:
    """http: an in-flight instance, client's or rogue's, whose POST stream is open holds the
    stream slot of its id (the strengthening of ``no_orphan`` to every sender)."""
    return b.ForAll(
        "inst",
        lambda r: b.Implies(b.And(s.life[r] == Life.IN_FLIGHT, s.open[r]), s.stream[s.rid[r]] == r),
    )


def registries_unused(b: Logic, s: Any, c: Config) -> Any:
    """Each POST a scope of its own (2026-07-28 http, ``post_scopes``): no id-keyed entry is
    ever held, so nothing found there can belong to another POST's request."""
    return b.ForAll("id", lambda k: b.And(s.inflight[k] == NONE, s.stream[k] == NONE))


def answered_is_final(b: Logic, s: Any, c: Config) -> Any:
    """A channel that received a response or refusal belongs to a responded or refused instance:
    a live instance has never been answered (so its one response is its first)."""
    return b.ForAll(
        "inst", lambda r: b.Implies(s.got_resp[r], b.In(s.life[r], (Life.RESPONDED, Life.REFUSED)))
    )


def responded_open_answered(b: Logic, s: Any, c: Config) -> Any:
    """Before the session ends, a responded instance whose channel is still open has received
    its response (needed for ``no_hung_request``: the response went out on the instance's own
    open stream; after the end nothing goes out, and the session's streams end with it)."""
    return b.ForAll(
        "inst",
        lambda r: b.Implies(
            b.And(s.life[r] == Life.RESPONDED, s.open[r], b.Not(s.ended)), s.got_resp[r]
        ),
    )


def broken_is_closed(b: Logic, s: Any, c: Config) -> Any:
    """2025-11-25 http: an instance whose POST stream broke has no open channel (so its response,
    which has nowhere to go, is not owed to anyone)."""
    return b.ForAll("inst", lambda r: b.Implies(s.life[r] == Life.STREAM_BROKEN, b.Not(s.open[r])))


def waiter_is_pending(b: Logic, s: Any, c: Config) -> Any:
    """A waiter's server-to-client request went out and has not been answered: an answer, a
    dropped request and giving up each leave no waiter behind (so an answer that finds a waiter
    is the first)."""
    return b.ForAll("id", lambda k: b.Implies(s.waiter[k] != NONE, s.sq[k] == Sreq.PENDING))


def waiter_shown_to_asker(b: Logic, s: Any, c: Config) -> Any:
    """A server-to-client request that a handler waits on went out on that handler's own
    stream, so only its own sender saw it."""
    return b.ForAll("id", lambda k: b.Implies(s.waiter[k] != NONE, s.shown[k] == s.waiter[k]))


def waiter_runs(b: Logic, s: Any, c: Config) -> Any:
    """The invariant ``no_waiter_outlives_request`` among the auxiliary invariants, so that
    ``quiescent_clean`` follows from them in every state (nothing runs, so nothing waits)."""
    return no_waiter_outlives_request(b, s, c)


def unminted_is_blank(b: Logic, s: Any, c: Config) -> Any:
    """A server id not minted yet has no waiter and was shown to no one."""
    return b.ForAll(
        "id",
        lambda k: b.Implies(s.sq[k] == Sreq.NONE, b.And(s.waiter[k] == NONE, s.shown[k] == NONE)),
    )


def no_broken_stream(b: Logic, s: Any, c: Config) -> Any:
    """Outside 2025-11-25 http no stream breaks under a running handler (on 2026-07-28 closing is
    cancellation; stdio has no per-request stream)."""
    return b.ForAll("inst", lambda r: s.life[r] != Life.STREAM_BROKEN)


def _client_pairs(b: Logic, s: Any, given: Any, then: Any) -> Any:
    """For every two distinct instances p, q both sent by the client with ``given(p, q)``:
    ``then(p, q)``."""
    return b.ForAll(
        "inst",
        lambda p: b.ForAll(
            "inst",
            lambda q: b.Implies(
                b.And(p != q, b.Not(s.rogue[p]), b.Not(s.rogue[q]), given(p, q)), then(p, q)
            ),
        ),
    )


def _both_sent(b: Logic, s: Any, p: Any, q: Any) -> Any:
    return b.And(s.life[p] != Life.UNSENT, s.life[q] != Life.UNSENT)


def client_reuse_answered(b: Logic, s: Any, c: Config) -> Any:
    """Of two client instances under one id, at least one was answered: the client reuses an id
    only after a response (the id rule, as a fact about states)."""
    return _client_pairs(
        b,
        s,
        lambda p, q: b.And(s.rid[p] == s.rid[q], _both_sent(b, s, p, q)),
        lambda p, q: b.Or(s.got_resp[p], s.got_resp[q]),
    )


def client_ids_fresh(b: Logic, s: Any, c: Config) -> Any:
    """The fresh client (2025-11-25's id rule): two client instances sent carry different ids.
    Needed for ``stale_cancel_is_inert`` with that client: the id of a finished request names
    no other request of the client, so its late cancel finds none."""
    return _client_pairs(
        b, s, lambda p, q: _both_sent(b, s, p, q), lambda p, q: s.rid[p] != s.rid[q]
    )


def clock_ahead(b: Logic, s: Any, c: Config) -> Any:
    """stdio: every message still on the wire was sent before the current send time."""
    return b.ForAll(
        "inst",
        lambda q: b.And(
            b.Implies(s.life[q] == Life.SENT, s.ts[q] < s.clock),
            b.Implies(s.cmsg[q] == Cmsg.WIRE, s.cts[q] < s.clock),
        ),
    )


def stale_cancel_ahead(b: Logic, s: Any, c: Config) -> Any:
    """stdio: while a client's cancel for r is on the wire, a later unanswered client request
    under r's id is still on the wire behind it (one ordered channel).  This is why a stale
    cancel cannot reach the request that reused the id on stdio."""
    return _client_pairs(
        b,
        s,
        lambda r, q: b.And(
            s.rid[r] == s.rid[q],
            s.cmsg[r] == Cmsg.WIRE,
            s.life[q] != Life.UNSENT,
            b.Not(s.got_resp[q]),
        ),
        lambda r, q: b.And(s.life[q] == Life.SENT, s.ts[q] > s.cts[r]),
    )


_http = lambda c: c.http  # noqa: E731
_shared = lambda c: not c.per_post  # noqa: E731
_shared_http = lambda c: c.http and not c.per_post  # noqa: E731
_rev2025 = lambda c: c.rev2025  # noqa: E731
_stdio = lambda c: c.stdio  # noqa: E731


AUXILIARY: tuple[Property, ...] = (
    auxiliary(unsent_is_blank),
    auxiliary(inflight_names_owner),
    auxiliary(inflight_names_live, lambda c: c.design.free_on == "cancel"),
    auxiliary(live_is_running),
    auxiliary(running_is_admitted),
    auxiliary(live_owns_inflight, _shared),
    auxiliary(
        running_owns_inflight, lambda c: c.design.free_on == "handler_end" and not c.per_post
    ),
    auxiliary(stream_follows_inflight, _http),
    auxiliary(stream_names_holder, _http),
    auxiliary(open_live_has_stream, _shared_http),
    auxiliary(registries_unused, lambda c: c.per_post),
    auxiliary(answered_is_final),
    auxiliary(responded_open_answered),
    auxiliary(broken_is_closed, lambda c: c.rev2025 and c.http),
    auxiliary(waiter_is_pending, _rev2025),
    auxiliary(waiter_shown_to_asker, _rev2025),
    auxiliary(unminted_is_blank, _rev2025),
    auxiliary(waiter_runs, _rev2025),
    auxiliary(no_broken_stream, lambda c: not (c.rev2025 and c.http)),
    auxiliary(client_reuse_answered),
    auxiliary(client_ids_fresh, lambda c: not c.client_reuses),
    auxiliary(clock_ahead, _stdio),
    auxiliary(stale_cancel_ahead, _stdio),
)
AUX = {p.name: p for p in AUXILIARY}

__all__ = ["AUXILIARY", "AUX"]
