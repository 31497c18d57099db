"""Invariants, witnesses and protocol hazards, by the names of the design brief.

Each property is a predicate written against the state interface (``model/logic.py``):

* ``scope="state"``: ``fn(b, s, c)`` must hold in every reachable state (invariant, hazard) or
  in some reachable state (witness);
* ``scope="step"``: ``fn(b, pre, post, c, action, r, i, out)`` must hold on every transition,
  where ``out`` is the action's output (where each message it writes goes, ``Action.output``);
  it is written so that it is vacuously true for actions it does not speak of.

``applies(c)`` says whether the property means anything on a profile; one that does not apply
is reported as such and counts neither way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .config import Config
from .lifecycle import LIVE, Life
from .logic import NONE
from .session import (REGISTRIES, SREQ_ANSWERED, SREQ_PENDING, answered, quiescent)


@dataclass(frozen=True)
class Property:
    name: str
    kind: str   # "invariant" | "witness" | "hazard"
    scope: str  # "state" | "step"
    fn: Callable
    applies: Callable[[Config], bool]
    doc: str


_always = lambda c: True  # noqa: E731


def _registry_untouched(b, pre, post, c, field, owner):
    """Every entry of ``field`` that changed was owned by ``owner`` (or was empty)."""
    return b.ForAll("id", lambda k: b.Implies(
        b.And(getattr(pre, field)[k] != NONE, getattr(post, field)[k] != getattr(pre, field)[k]),
        getattr(pre, field)[k] == owner))


def _registries(c: Config):
    return REGISTRIES if c.http else ("inflight",)


# --- invariants ---------------------------------------------------------------------------

def unique_in_flight(b, s, c):
    return b.ForAll("inst", lambda p: b.ForAll("inst", lambda q: b.Implies(
        b.And(p != q, b.In(s.life[p], LIVE), b.In(s.life[q], LIVE)), s.rid[p] != s.rid[q])))


def _goes_only_to_own(kind):
    def prop(b, pre, post, c, action, r, i, out):
        if kind not in out:
            return True
        t, d = out[kind]
        return b.Implies(d, t == r)
    return prop


no_misrouted_notification = _goes_only_to_own("progress")
no_misrouted_server_request = _goes_only_to_own("server_request")


def no_misrouted_response(b, pre, post, c, action, r, i, out):
    if "response" not in out:
        return True
    t, d = out["response"]
    return b.Implies(d, b.And(t == r, b.Not(pre.got_resp[t])))


def owned_removal(b, pre, post, c, action, r, i, out):
    if not action.removal or action.name == "refuse":
        return True
    return b.And(*[_registry_untouched(b, pre, post, c, f, r) for f in _registries(c)])


def cancel_hits_target(b, pre, post, c, action, r, i, out):
    if action.name != "deliver_cancel":
        return True
    return b.Implies(
        b.And(b.Not(pre.rogue[r]), b.In(pre.life[r], LIVE)),
        b.And(post.life[r] == Life.CANCELLED,
              b.ForAll("inst", lambda q: b.Implies(q != r, post.life[q] == pre.life[q]))))


def no_orphan(b, s, c):
    def reachable(r):
        k = s.rid[r]
        return b.And(s.inflight[k] == r, (s.stream[k] == r) if c.http else True)
    return b.ForAll("inst", lambda r: b.Implies(
        b.And(b.Not(s.rogue[r]), s.life[r] == Life.IN_FLIGHT, s.open[r]), reachable(r)))


def refusal_is_inert(b, pre, post, c, action, r, i, out):
    if action.name != "refuse":
        return True
    same = [b.ForAll("id", lambda k, f=f: getattr(post, f)[k] == getattr(pre, f)[k])
            for f in _registries(c)]
    t, d = out["response"]
    return b.And(t == r, d, post.got_resp[r], *same)


def quiescent_clean(b, s, c):
    return b.Implies(quiescent(b, s), b.And(
        *[b.ForAll("id", lambda k, f=f: getattr(s, f)[k] == NONE) for f in _registries(c)],
        b.ForAll("inst", lambda r: s.sreq[r] != SREQ_PENDING)))


def no_hung_request(b, s, c):
    return b.Implies(quiescent(b, s), b.ForAll("inst", lambda r: b.Implies(
        b.And(b.Not(s.rogue[r]), s.life[r] != Life.UNSENT, s.open[r]),
        b.Or(answered(b, s, r), b.In(s.life[r], (Life.REFUSED, Life.CANCELLED))))))


# --- witnesses ----------------------------------------------------------------------------

def sequential_reuse(b, s, c):
    return b.Exists("inst", lambda p: b.Exists("inst", lambda q: b.And(
        p != q, b.Not(s.rogue[p]), b.Not(s.rogue[q]), s.rid[p] == s.rid[q],
        s.life[p] == Life.RESPONDED, b.In(s.life[q], (Life.IN_FLIGHT, Life.RESPONDED)))))


def _some_life(state):
    return lambda b, s, c: b.Exists("inst", lambda r: s.life[r] == state)


def server_request_answered(b, s, c):
    return b.Exists("inst", lambda r: s.sreq[r] == SREQ_ANSWERED)


# --- hazards ------------------------------------------------------------------------------

def stale_cancel_is_inert(b, pre, post, c, action, r, i, out):
    if action.name != "deliver_cancel":
        return True
    return b.Implies(
        b.And(b.Not(pre.rogue[r]), b.Not(b.In(pre.life[r], LIVE))),
        b.ForAll("inst", lambda q: b.Implies(b.Not(pre.rogue[q]), post.life[q] == pre.life[q])))


_rev2025 = lambda c: c.rev2025  # noqa: E731

PROPERTIES: tuple[Property, ...] = (
    Property("unique_in_flight", "invariant", "state", unique_in_flight, _always,
             "Never two admitted, unfinished instances under one id in a session. Encodes the id "
             "rule of basic/index (an id MUST NOT match another request in flight) on the "
             "receiving side: the defect of overwrite-on-arrival registries."),
    Property("no_misrouted_notification", "invariant", "step", no_misrouted_notification, _always,
             "Progress and log notifications of r are written only on r's stream (Streamable "
             "HTTP: notifications on a response stream relate to its request; the SDK defect "
             "where A's progress goes to B's stream)."),
    Property("no_misrouted_server_request", "invariant", "step", no_misrouted_server_request,
             _rev2025,
             "A server-to-client request made for r goes only on r's stream, so its answer "
             "resolves r's waiter (2025-11-25, SEP-2260: sampling/elicitation associated with the "
             "originating request). Not applicable on 2026-07-28 (no server-initiated requests)."),
    Property("no_misrouted_response", "invariant", "step", no_misrouted_response, _always,
             "r's response (or refusal) is written only on r's stream, at most once (the defect "
             "where B's POST gets A's result)."),
    Property("owned_removal", "invariant", "step", owned_removal, _always,
             "Finishing, cancelling, unwinding or a broken stream removes only registry entries "
             "owned by that instance or stream (the defect where aborting A's connection "
             "closes B's stream, or the first to finish deletes the shared entry)."),
    Property("cancel_hits_target", "invariant", "step", cancel_hits_target, _always,
             "A client's cancel arriving while the instance it means is live cancels that "
             "instance and nothing else (basic/utilities/cancellation; the defect where "
             "notifications/cancelled hits the duplicate)."),
    Property("no_orphan", "invariant", "state", no_orphan, _always,
             "An admitted, live client instance with an open stream can be reached by its "
             "routing entries (its messages and response can be delivered): the race of a "
             "check separate from the claims."),
    Property("refusal_is_inert", "invariant", "step", refusal_is_inert, _always,
             "Refusing a duplicate changes no registry and writes exactly one error, on the "
             "duplicate's own channel."),
    Property("quiescent_clean", "invariant", "state", quiescent_clean, _always,
             "When nothing is unfinished, every registry is empty: no leaked in-flight entry, "
             "stream slot or pending server-to-client request."),
    Property("no_hung_request", "invariant", "state", no_hung_request, _always,
             "When nothing is unfinished, every client request whose stream is still open has "
             "received its response, its refusal or its cancellation: no POST waits forever "
             "(measured on the Python SDK)."),
    Property("sequential_reuse", "witness", "state", sequential_reuse, _always,
             "An id is admitted again after its response (the id rule permits it; a design that "
             "forbids it is wrong)."),
    Property("duplicate_refused", "witness", "state", _some_life(Life.REFUSED), _always,
             "Some duplicate is refused."),
    Property("cancelled", "witness", "state", _some_life(Life.CANCELLED), _always,
             "Some request is cancelled."),
    Property("stream_broken", "witness", "state", _some_life(Life.STREAM_BROKEN),
             lambda c: c.rev2025 and c.http,
             "Some POST stream breaks while its handler goes on (2025-11-25 http only)."),
    Property("server_request_answered", "witness", "state", server_request_answered, _rev2025,
             "Some server-to-client request is answered (2025-11-25 only)."),
    Property("stale_cancel_is_inert", "hazard", "step", stale_cancel_is_inert, _always,
             "A client's cancel that arrives after the instance it means has finished cancels no "
             "other request of the client (cancellation: both sides MUST handle the race where "
             "the cancel arrives after the response)."),
)
PROPERTY = {p.name: p for p in PROPERTIES}
INVARIANTS = tuple(p for p in PROPERTIES if p.kind == "invariant")
WITNESSES = tuple(p for p in PROPERTIES if p.kind == "witness")
HAZARDS = tuple(p for p in PROPERTIES if p.kind == "hazard")
