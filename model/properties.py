"""The session model's properties by the names of the design brief: invariants, witnesses and
protocol hazards, each with the predicate that defines it, and the sensitivity table that names
the designs or mutants breaking each.

What a property is (its scopes, whose requests it protects, how a witness names its path) and
the constructors this table is built with are in ``model/property_kinds.py``.  The explorers,
the prover, the reports and the sensitivity check read this table whole, and a reviewer checks
it against the design brief's list in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .config import Config
from .lifecycle import LIVE, Life
from .logic import NONE, Logic, Outputs
from .property_kinds import CLIENT, EVERY_SENDER, SERVER, Property, hazard, invariant, witness
from .session import Action
from .session_state import REGISTRIES, WAITERS, Cmsg, Sreq, answered, quiescent


def _rev2025(c: Config) -> bool:
    return c.rev2025


def _stdio(c: Config) -> bool:
    return c.stdio


def _registry_untouched(b: Logic, pre: Any, post: Any, c: Config, field: str, owner: Any) -> Any:
    """Every entry of ``field`` that changed was owned by ``owner`` (or was empty)."""
    return b.ForAll(
        "id",
        lambda k: b.Implies(
            b.And(
                getattr(pre, field)[k] != NONE, getattr(post, field)[k] != getattr(pre, field)[k]
            ),
            getattr(pre, field)[k] == owner,
        ),
    )


def _registries(c: Config) -> Any:
    return REGISTRIES if c.http else ("inflight",)


def _unchanged(b: Logic, pre: Any, post: Any, field: str) -> Any:
    """Registry ``field`` is the same in ``pre`` and ``post``."""
    return b.ForAll("id", lambda k: getattr(post, field)[k] == getattr(pre, field)[k])


def _empty(b: Logic, s: Any, field: str) -> Any:
    """Registry ``field`` holds no entry."""
    return b.ForAll("id", lambda k: getattr(s, field)[k] == NONE)


# --- invariants ---------------------------------------------------------------------------


def unique_in_flight(b: Logic, s: Any, c: Config) -> Any:
    """Never two admitted, unfinished instances under one id in a session. Encodes the id rule
    of basic/index (an id MUST NOT match another request in flight) on the receiving side:
    the defect of overwrite-on-arrival registries. A cancelled handler still running counts:
    its id is not free until it stops. Not applicable where each POST is a scope of its own
    (2026-07-28 http, ``post_scopes``): a scope holds one request, and requests of different
    POSTs never meet."""

    def active(r: Any) -> Any:
        return b.Or(b.In(s.life[r], LIVE), b.And(s.life[r] == Life.CANCELLED, s.running[r]))

    return b.ForAll(
        "inst",
        lambda p: b.ForAll(
            "inst", lambda q: b.Implies(b.And(p != q, active(p), active(q)), s.rid[p] != s.rid[q])
        ),
    )


def _goes_only_to_own(b: Logic, out: Outputs, r: Any, kind: str) -> Any:
    """A message of ``kind`` that goes out goes on r's own stream."""
    if kind not in out:
        return True
    t, d = out[kind]
    return b.Implies(d, t == r)


def no_misrouted_notification(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """Progress and log notifications of r are written only on r's stream (Streamable HTTP:
    notifications on a response stream relate to its request; the SDK defect where A's
    progress goes to B's stream)."""
    return _goes_only_to_own(b, out, r, "progress")


def no_misrouted_server_request(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """A server-to-client request made for r goes only on r's stream, so its answer resolves r's
    waiter (2025-11-25, SEP-2260: sampling/elicitation associated with the originating
    request). Not applicable on 2026-07-28 (no server-initiated requests)."""
    return _goes_only_to_own(b, out, r, "server_request")


def no_misrouted_response(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """r's response (or refusal) is written only on r's stream, at most once (the defect where
    B's POST gets A's result)."""
    if "response" not in out:
        return True
    t, d = out["response"]
    return b.Implies(d, b.And(t == r, b.Not(pre.got_resp[t])))


def _no_crossed_reply(
    b: Logic, pre: Any, action: Action, r: Any, out: Outputs, waiting: Callable[[Any], Any]
) -> Any:
    """stdio: when a message for r goes out (carrying r's id; a refusal's id is null), no other
    request q of the client with ``waiting(q)`` is pending under r's id: the client, which
    matches by id, would take it for q's."""
    sent = [out[k][1] for k in ("progress", "server_request", "response") if k in out]
    if not sent or action.name in ("refuse", "reject"):
        return True
    return b.Implies(
        b.Or(*sent),
        b.ForAll(
            "inst",
            lambda q: b.Not(
                b.And(
                    q != r,
                    b.Not(pre.rogue[q]),
                    pre.rid[q] == pre.rid[r],
                    b.Not(pre.got_resp[q]),
                    waiting(q),
                )
            ),
        ),
    )


def no_crossed_reply_on_stdio(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """stdio, the client's view: a message the server writes for r (progress, a server-to-client
    request, the response) carries r's id on the one channel, and the client matches it to its
    pending request under that id; so no other admitted request of the client may be pending
    under r's id when it is written (the python-sdk symptom of a client reusing id 1: its
    responses cross-wired). The server-side routing invariants cannot see this on stdio, where
    every message carries its handler's id. A refusal is not matched (its id is null); a
    request the server has cancelled is the cancel hazards' business, one not yet admitted
    ``crossed_reply_is_impossible``'s. A request turned away after the session ended is
    answered as a refusal is (id null)."""
    return _no_crossed_reply(b, pre, action, r, out, lambda q: b.In(pre.life[q], LIVE))


def crossed_reply_is_impossible(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """stdio, the client's view: no message written for r reaches another request of the
    client that it still waits on (sent, not answered, not cancelled by it). Not keepable: a
    second sender's request admitted under an id that the client then sends writes under that
    id while the client's request is still on the wire or waiting to be refused, and the
    client, matching by id, takes it for its own; the server has not read the client's request
    yet."""
    return _no_crossed_reply(
        b,
        pre,
        action,
        r,
        out,
        lambda q: b.And(pre.life[q] != Life.UNSENT, pre.cmsg[q] == Cmsg.NONE),
    )


def owned_removal(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """Finishing, cancelling, unwinding or a broken stream removes only registry entries owned
    by that instance or stream (the defect where aborting A's connection closes B's stream,
    or the first to finish deletes the shared entry). An admit, which writes both registries,
    overwrites no entry of another instance (the new handler taking a live handler's slot)."""
    if not (action.removal or action.name == "admit") or action.name == "refuse":
        return True
    return b.And(*[_registry_untouched(b, pre, post, c, f, r) for f in _registries(c)])


def cancel_hits_target(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """A client's cancel arriving while the instance it means is live cancels that instance and
    nothing else (basic/utilities/cancellation; the defect where notifications/cancelled hits
    the duplicate)."""
    if action.name != "deliver_cancel":
        return True
    return b.Implies(
        b.And(b.Not(pre.rogue[r]), b.In(pre.life[r], LIVE)),
        b.And(
            post.life[r] == Life.CANCELLED,
            b.ForAll("inst", lambda q: b.Implies(q != r, post.life[q] == pre.life[q])),
        ),
    )


def no_orphan(b: Logic, s: Any, c: Config) -> Any:
    """An admitted, live client instance with an open stream can be reached by its routing
    entries (its messages and response can be delivered): the race of a check separate from
    the claims. Not applicable where each POST is a scope of its own (2026-07-28 http,
    ``post_scopes``): there the POST itself is its request's route, and no entry is claimed."""

    def reachable(r: Any) -> Any:
        k = s.rid[r]
        return b.And(s.inflight[k] == r, (s.stream[k] == r) if c.http else True)

    return b.ForAll(
        "inst",
        lambda r: b.Implies(
            b.And(b.Not(s.rogue[r]), s.life[r] == Life.IN_FLIGHT, s.open[r]), reachable(r)
        ),
    )


def refusal_is_inert(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """Refusing a duplicate changes no registry and writes exactly one error, on the duplicate's
    own channel."""
    if action.name != "refuse":
        return True
    same = [_unchanged(b, pre, post, f) for f in _registries(c)]
    t, d = out["response"]
    return b.And(t == r, d, post.got_resp[r], *same)


def no_refusal_across_posts(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """2026-07-28 http: no request is refused because of another POST's request. With no
    sessions nothing says that two POSTs come from one sender (the id rule binds a sender to
    its own ids), and clients number their ids alike, so a registry shared by every POST lets
    any client's request in flight turn away another client's request under the same id."""
    return action.name != "refuse"


def quiescent_clean(b: Logic, s: Any, c: Config) -> Any:
    """When nothing is unfinished, every registry is empty: no leaked in-flight entry, stream
    slot or server-to-client request waiter."""
    waiters = [_empty(b, s, WAITERS)] if c.rev2025 else []
    return b.Implies(quiescent(b, s), b.And(*[_empty(b, s, f) for f in _registries(c)], *waiters))


def server_ids_unique(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """The server's own request ids never collide: it never mints an id that has a waiter, or
    under which a request went out that the client may still answer (the server owns the
    uniqueness of the ids it mints, as the client owns its own)."""
    if action.name != "server_request":
        return True
    answerable = b.And(b.In(pre.sq[i], (Sreq.PENDING, Sreq.FAILED)), pre.shown[i] != NONE)
    return b.And(pre.waiter[i] == NONE, b.Not(answerable))


def answer_reaches_asker(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """An answer to a server-to-client request reaches a handler only if it comes from the
    sender of that handler's request: the rogue (anyone holding the session id) cannot answer
    the client's elicitation, whether the request was misrouted to its stream or its id was
    guessed."""
    if action.name != "answer":
        return True
    w, d = out["answer"]
    return b.Implies(b.And(d, b.Not(pre.rogue[w])), b.Not(pre.rogue[r]))


def answer_resolves_once(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """An answer resolves only the waiter of its id, and only once: a second answer to the same
    server-to-client request (a retransmission, the rogue's) reaches no handler."""
    if action.name != "answer":
        return True
    w, d = out["answer"]
    return b.Implies(d, b.And(w == pre.waiter[i], pre.sq[i] == Sreq.PENDING))


def no_waiter_outlives_request(b: Logic, s: Any, c: Config) -> Any:
    """Every waiter for a server-to-client request belongs to a handler that still runs: none is
    left behind when its request responds, is cancelled, or the session ends."""
    return b.ForAll("id", lambda k: b.Implies(s.waiter[k] != NONE, s.running[s.waiter[k]]))


def nothing_after_end(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """Once the session has ended (DELETE, idle expiry, shutdown) nothing is written for its
    requests: no progress, server-to-client request or response; a request read afterwards gets
    only its own error (http: 404)."""
    if action.name in ("refuse", "reject"):
        return True
    sent = [out[k][1] for k in ("progress", "server_request", "response") if k in out]
    return b.Implies(pre.ended, b.Not(b.Or(*sent)))


def no_hung_request(b: Logic, s: Any, c: Config) -> Any:
    """When nothing is unfinished, every client request whose stream is still open has received
    its response, its refusal or its cancellation: no POST waits forever (measured on the
    Python SDK). Once the session has ended its streams end with it (http: every stream of the
    session is closed and later requests get 404; stdio: the server stops), so no request
    waits on them."""
    return b.Implies(
        b.And(quiescent(b, s), b.Not(s.ended)),
        b.ForAll(
            "inst",
            lambda r: b.Implies(
                b.And(b.Not(s.rogue[r]), s.life[r] != Life.UNSENT, s.open[r]),
                b.Or(answered(b, s, r), b.In(s.life[r], (Life.REFUSED, Life.CANCELLED))),
            ),
        ),
    )


# --- witnesses ----------------------------------------------------------------------------


def _same_id_pair(b: Logic, s: Any, both: Callable[[Any, Any], Any]) -> Any:
    """Two distinct instances p, q under one id with ``both(p, q)``."""
    return b.Exists(
        "inst",
        lambda p: b.Exists("inst", lambda q: b.And(p != q, s.rid[p] == s.rid[q], both(p, q))),
    )


def sequential_reuse(b: Logic, s: Any, c: Config) -> Any:
    """The client's id is admitted again after its response (the reusing client's id rule
    permits it, 2026-07-28's and common practice; a design that forbids it is wrong). Not
    applicable to the fresh client, which never reuses an id."""
    return _same_id_pair(
        b,
        s,
        lambda p, q: b.And(
            b.Not(s.rogue[p]),
            b.Not(s.rogue[q]),
            s.life[p] == Life.RESPONDED,
            b.In(s.life[q], (Life.IN_FLIGHT, Life.RESPONDED)),
        ),
    )


def _some_life(b: Logic, s: Any, state: Life) -> Any:
    return b.Exists("inst", lambda r: s.life[r] == state)


def duplicate_refused(b: Logic, s: Any, c: Config) -> Any:
    """Some duplicate is refused by the server, as an id in flight (not turned away because
    the session has ended)."""
    return _some_life(b, s, Life.REFUSED)


def duplicate_served(b: Logic, s: Any, c: Config) -> Any:
    """Two POSTs under one id are served at once, each in a scope of its own (2026-07-28 http
    with a scope per POST: they may come from two clients)."""
    return _same_id_pair(
        b, s, lambda p, q: b.And(s.life[p] == Life.IN_FLIGHT, s.life[q] == Life.IN_FLIGHT)
    )


def cancelled(b: Logic, s: Any, c: Config) -> Any:
    """Some request is cancelled by a cancel the server gets (``notifications/cancelled``, or
    the close of its stream where that is a cancel), not by the session's end."""
    return _some_life(b, s, Life.CANCELLED)


def stream_broken(b: Logic, s: Any, c: Config) -> Any:
    """Some POST stream breaks while its handler goes on (2025-11-25 http only)."""
    return _some_life(b, s, Life.STREAM_BROKEN)


def server_request_answered(b: Logic, s: Any, c: Config) -> Any:
    """Some server-to-client request is answered (2025-11-25 only)."""
    return b.Exists("id", lambda k: s.sq[k] == Sreq.ANSWERED)


def two_server_requests_pending(b: Logic, s: Any, c: Config) -> Any:
    """One handler waits on two server-to-client requests at once (say an elicitation and a
    sampling, each under its own server id; 2025-11-25 only)."""
    return b.Exists(
        "id",
        lambda p: b.Exists(
            "id",
            lambda q: b.And(p != q, s.waiter[p] != NONE, s.waiter[p] == s.waiter[q]),
        ),
    )


def session_ended(b: Logic, s: Any, c: Config) -> Any:
    """The session ends while one of its requests is cancelled by it."""
    return b.And(s.ended, b.Exists("inst", lambda r: s.life[r] == Life.CANCELLED))


# --- hazards ------------------------------------------------------------------------------


def _stale_cancel_inert(b: Logic, pre: Any, post: Any, action: Action, r: Any) -> Any:
    """A client's cancel delivered after the instance it means has finished changes no request
    of the client."""
    if action.name != "deliver_cancel":
        return True
    return b.Implies(
        b.And(b.Not(pre.rogue[r]), b.Not(b.In(pre.life[r], LIVE))),
        b.ForAll("inst", lambda q: b.Implies(b.Not(pre.rogue[q]), post.life[q] == pre.life[q])),
    )


def stale_cancel_is_inert(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """A client's cancel that arrives after the instance it means has finished cancels no other
    request of the client (cancellation: both sides MUST handle the race where the cancel
    arrives after the response). A hazard on 2025-11-25 http only, where a POST and a cancel
    have no order: a later POST reusing the id may overtake the earlier cancel. Only a client
    that reuses an answered id can meet it: the fresh client (2025-11-25's id rule) never sends
    the id again, so its stale cancel names no request of its own."""
    return _stale_cancel_inert(b, pre, post, action, r)


def stale_cancel_is_inert_in_order(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """Where the transport orders a cancel before a later request under the same id, a client's
    cancel that arrives after the instance it means has finished cancels no other request of
    the client: on stdio one channel carries both in send order, and a server that acts on
    them in that order meets the cancel before the request that reuses the id; on 2026-07-28
    http the cancel is the close of the finished request's own POST."""
    return _stale_cancel_inert(b, pre, post, action, r)


def _other_sender_untouched(b: Logic, pre: Any, post: Any, r: Any) -> Any:
    return b.ForAll(
        "inst", lambda q: b.Implies(pre.rogue[q] != pre.rogue[r], post.life[q] == pre.life[q])
    )


def cancel_stays_with_sender(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """A sender's cancel (on 2026-07-28 http: the close of its own response stream) never
    cancels another sender's request. There a cancel names its connection, so a server can
    keep it; the defect is looking the id up instead."""
    if action.name != "deliver_cancel":
        return True
    return _other_sender_untouched(b, pre, post, r)


def foreign_cancel_is_inert(
    b: Logic, pre: Any, post: Any, c: Config, action: Action, r: Any, i: Any, out: Outputs
) -> Any:
    """One sender's cancel never cancels another sender's request. Not keepable where
    notifications/cancelled carries only the id (stdio, 2025-11-25 http): a second sender in the
    session that cancels an id the client has in flight cancels the client's request, and no
    server can tell the senders apart."""
    if action.name != "deliver_cancel":
        return True
    return _other_sender_untouched(b, pre, post, r)


def _close_is_cancel(c: Config) -> bool:
    return c.close_is_cancel


def _cancel_by_id(c: Config) -> bool:
    return not c.close_is_cancel


def _rev2025_http(c: Config) -> bool:
    return c.rev2025 and c.http


def _client_reuses(c: Config) -> bool:
    return c.client_reuses


def _ordered_cancel(c: Config) -> bool:
    return not (c.rev2025 and c.http)


def _per_post(c: Config) -> bool:
    return c.per_post


def _shared_scope(c: Config) -> bool:
    """The requests of the profile share the id-keyed registries (all but per-POST scopes)."""
    return not c.per_post


#: What each hazard needs.
REUSING_CLIENT = "a client that reuses an answered id (the reusing client; not the fresh one)"
SECOND_SENDER = "two senders in one session sending one id (the client and the rogue)"

PROPERTIES: tuple[Property, ...] = (
    invariant(unique_in_flight, applies=_shared_scope),
    invariant(no_misrouted_notification, "step"),
    invariant(no_misrouted_server_request, "step", _rev2025),
    invariant(no_misrouted_response, "step"),
    invariant(no_crossed_reply_on_stdio, "step", _stdio, CLIENT),
    invariant(owned_removal, "step"),
    invariant(cancel_hits_target, "step", protects=CLIENT),
    invariant(no_orphan, applies=_shared_scope, protects=CLIENT),
    invariant(refusal_is_inert, "step"),
    invariant(quiescent_clean, protects=SERVER),
    invariant(server_ids_unique, "step", _rev2025, SERVER),
    invariant(answer_reaches_asker, "step", _rev2025, CLIENT),
    invariant(answer_resolves_once, "step", _rev2025),
    invariant(no_waiter_outlives_request, "state", _rev2025, SERVER),
    invariant(nothing_after_end, "step"),
    invariant(no_hung_request, protects=CLIENT),
    invariant(cancel_stays_with_sender, "step", _close_is_cancel),
    invariant(no_refusal_across_posts, "step", _close_is_cancel),
    invariant(stale_cancel_is_inert_in_order, "step", _ordered_cancel, CLIENT),
    witness(sequential_reuse, ("admit",), _client_reuses),
    witness(duplicate_refused, ("refuse",), _shared_scope),
    witness(duplicate_served, ("admit",), _per_post),
    witness(cancelled, ("deliver_cancel",)),
    witness(stream_broken, ("break_stream",), _rev2025_http),
    witness(server_request_answered, ("answer",), _rev2025),
    witness(two_server_requests_pending, ("server_request",), _rev2025),
    witness(session_ended, ("end_request",)),
    hazard(stale_cancel_is_inert, REUSING_CLIENT, applies=_rev2025_http),
    hazard(foreign_cancel_is_inert, SECOND_SENDER, "step", _cancel_by_id, EVERY_SENDER),
    hazard(crossed_reply_is_impossible, SECOND_SENDER, "step", _stdio),
)
PROPERTY = {p.name: p for p in PROPERTIES}
#: Step invariants that judge one action only: where that action is not part of a design or
#: profile (no refusal in ``unguarded``; none on a 2026-07-28 per-POST scope), they fold to true
#: and say nothing, which the prover's vacuity check then accepts instead of failing.
SPEAKS_OF: dict[str, str] = {"refusal_is_inert": "refuse", "no_refusal_across_posts": "refuse"}

#: Sensitivity: the designs or mutants (``model/config.py``) that must break each invariant and
#: liveness property (``proofs/liveness.py``), ``design@revision/transport`` where one profile
#: suffices (the smallest where it breaks), at ``check``'s default bound.  ``check`` runs them
#: and fails when one no longer breaks its property (the property got weaker) or a property has
#: no entry (nothing shows it can fail).
BROKEN_BY: dict[str, tuple[str, ...]] = {
    "unique_in_flight": ("unguarded@2026-07-28/stdio",),
    "no_misrouted_notification": ("unguarded@2026-07-28/http",),
    "no_misrouted_server_request": ("unguarded@2025-11-25/http",),
    "no_misrouted_response": ("unguarded@2026-07-28/http",),
    "no_crossed_reply_on_stdio": ("unguarded@2026-07-28/stdio",),
    "owned_removal": ("atomic-free-on-cancel@2026-07-28/stdio",),
    "cancel_hits_target": ("unguarded@2026-07-28/stdio",),
    "no_orphan": ("check_then_claim@2026-07-28/http",),
    "refusal_is_inert": ("check_then_claim@2026-07-28/http",),
    "quiescent_clean": ("atomic-leaks-waiters@2025-11-25/stdio",),
    "server_ids_unique": ("atomic-reused-server-ids@2025-11-25/stdio",),
    "answer_reaches_asker": ("atomic-guessable-server-ids@2025-11-25/stdio",),
    "answer_resolves_once": ("atomic-keeps-answered-waiter@2025-11-25/stdio",),
    "no_waiter_outlives_request": ("atomic-leaks-waiters@2025-11-25/stdio",),
    "nothing_after_end": ("atomic-writes-after-end@2026-07-28/http",),
    "no_hung_request": ("unguarded@2026-07-28/http",),
    "cancel_stays_with_sender": ("unguarded@2026-07-28/http",),
    "no_refusal_across_posts": ("atomic-shared-registry@2026-07-28/http",),
    "stale_cancel_is_inert_in_order": ("atomic-cancels-out-of-order@2026-07-28/stdio",),
    "settles": ("atomic-runs-after-respond@2026-07-28/http",),
    "no_deadlock": ("atomic-runs-after-respond@2026-07-28/http",),
    "requests_answered": ("atomic-waits-on-answer@2025-11-25/stdio",),
}
INVARIANTS = tuple(p for p in PROPERTIES if p.kind == "invariant")
WITNESSES = tuple(p for p in PROPERTIES if p.kind == "witness")
HAZARDS = tuple(p for p in PROPERTIES if p.kind == "hazard")
