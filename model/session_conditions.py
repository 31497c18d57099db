"""The session model's named conditions, and the routing, ordering and release rules they share.

A guard of an action (``model/session.py``) is the trigger's source set and the conditions named
by the lifecycle table (``model/lifecycle.py``) and by the action; each name is looked up in
``CONDITIONS`` here.  Beside them, the server's rules that conditions and effects both call:
where a message of a request goes (``route``, ``deliverable``), how a registry entry is freed
(``release``, guarded by identity where the design guards it), how a send is stamped and what
order stdio keeps (``stamp``, ``in_order``).

The client's id rule is that of its discipline (``Config.client``, ``model/config.py``): the
*reusing* client reuses an id once answered (the rule of 2026-07-28, and common practice on
2025-11-25, where it is not compliant), the *fresh* client never reuses an id in the session
(the rule of 2025-11-25).  Each property says whose requests it protects
(``Property.protects``), each hazard which sender it needs (``Property.needs``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .config import Config
from .lifecycle import LIVE, Life
from .logic import NONE, Logic, Write
from .session_state import Cmsg, Sreq, Step, answered

# --- routing, ordering and release -------------------------------------------------------


def route(b: Logic, s: Any, c: Config, r: Any) -> Any:
    """The stream the server's transport picks for a message of r (real state only).

    http: the POST stream slot under r's id.  stdio: the one channel, labelled with the id the
    handler holds, so the route is r itself.  A POST of its own scope (``Config.per_post``): its
    own response stream, r itself.
    """
    if c.stdio or c.per_post:
        return r
    return s.stream[s.rid[r]]


def deliverable(b: Logic, s: Any, c: Config, r: Any, t: Any) -> Any:
    """A message of r routed to t goes out (rather than being dropped)."""
    live = b.Not(s.ended) if c.design.end_stops_writes else True
    if c.design.guard_write:
        return b.And(t == r, s.open[r], b.In(s.life[r], LIVE), live)
    return b.And(t != NONE, s.open[t], live)


def release(
    b: Logic, s: Any, c: Config, site: str, field: str, key: Any, owner: Any, when: Any = True
) -> Write:
    """Free ``field[key]``; guarded by identity at ``site`` if the design guards it."""
    if c.design.guards(site):
        return Write(field, key, NONE, b.And(when, getattr(s, field)[key] == owner))
    return Write(field, key, NONE, when)


def stamp(b: Logic, s: Any, c: Config, field: str, r: Any) -> list[Write]:
    """Record a send time (stdio only: http has no order to keep)."""
    if not c.stdio:
        return []
    return [Write(field, r, s.clock), Write("clock", None, s.clock + 1)]


def in_order(b: Logic, s: Any, c: Config, t: Any) -> Any:
    """stdio: no undelivered message was sent before time t (a server whose cancels take a path
    of their own, ``Design.cancels_in_order`` off, lets requests overtake them)."""
    if not c.stdio:
        return True
    if not c.design.cancels_in_order:
        return b.ForAll("inst", lambda q: b.Implies(s.life[q] == Life.SENT, s.ts[q] >= t))
    return b.ForAll(
        "inst",
        lambda q: b.And(
            b.Implies(s.life[q] == Life.SENT, s.ts[q] >= t),
            b.Implies(s.cmsg[q] == Cmsg.WIRE, s.cts[q] >= t),
        ),
    )


# --- named conditions (the lifecycle table and the actions refer to these by name) ---------
# Each is fn(b, s, c, r, i) -> bool expression; ``i`` is only meaningful for send.


#: The one condition that is not symmetric in instances, on purpose: sends fill the instance
#: slots in order, so of the interchangeable unsent slots only one is ever taken (a reduction of
#: its own).  The declared symmetry check (``proofs/declared_symmetry.py``) renames instances
#: only among the sent ones, which is what makes the order lose nothing.
SLOT_ORDER = "next_free_slot"


def _next_free_slot(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Any:
    """Sends fill instance slots in order (a slot is a request instance's arrival number)."""
    return b.ForAll("inst", lambda q: b.Implies(q < r, s.life[q] != Life.UNSENT))


def _client_id_rule(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Any:
    """The client's id rule (basic/index), by its discipline (``Config.client``): the reusing
    client sends id i only once every earlier request of its own under i was answered (the rule
    of 2026-07-28); the fresh client never sends an id it has used in the session (the rule of
    2025-11-25)."""

    def earlier(q: Any) -> Any:
        return b.And(b.Not(s.rogue[q]), s.life[q] != Life.UNSENT, s.rid[q] == i)

    if c.client_reuses:
        return b.ForAll("inst", lambda q: b.Implies(earlier(q), answered(b, s, q)))
    return b.ForAll("inst", lambda q: b.Not(earlier(q)))


def _server_request_seen(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Any:
    """The sender of r can answer server request i: it went out on r's stream, or (ids the
    rogue can guess, such as a counter's) r is the rogue's and i was minted at all."""
    seen = b.And(s.sq[i] != Sreq.NONE, s.shown[i] == r)  # (forgotten once nothing waits)
    if c.design.unguessable_server_ids:
        return seen
    return b.Or(seen, b.And(s.rogue[r], s.sq[i] != Sreq.NONE))


def _may_stop_waiting(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Any:
    """A handler may stop waiting on its server request i at any time (a timeout, as MCP asks of
    every sender; a cancel unwinding the await) -- unless a liveness bug of the design keeps it
    waiting: on an answer that has not come, or on a request that was never sent."""
    parts = []
    if c.design.waits_on_answer:
        parts.append(s.sq[i] != Sreq.PENDING)
    if c.design.waits_on_lost:
        parts.append(s.sq[i] != Sreq.FAILED)
    return b.And(*parts)


#: A named condition: ``fn(b, s, c, r, i)``.
Condition = Callable[[Logic, Any, Config, Any, Any], Any]


CONDITIONS: dict[str, Condition] = {
    "next_free_slot": _next_free_slot,
    "client_obeys_id_rule": _client_id_rule,
    "in_channel_order": lambda b, s, c, r, i: in_order(b, s, c, s.ts[r]),
    "split_claim": lambda b, s, c, r, i: c.design.claim == "split",
    "unchecked": lambda b, s, c, r, i: s.step[r] == Step.UNCHECKED,
    "checked": lambda b, s, c, r, i: s.step[r] == Step.CHECKED,
    # a POST of its own scope holds no other request, so its id is never found in flight there
    "id_not_in_flight": lambda b, s, c, r, i: True if c.per_post else s.inflight[s.rid[r]] == NONE,
    "id_in_flight": lambda b, s, c, r, i: False if c.per_post else s.inflight[s.rid[r]] != NONE,
    "claim_complete": lambda b, s, c, r, i: (
        (s.step[r] == Step.CLAIMED) if c.design.claim == "split" else True
    ),
    "claim_ok": lambda b, s, c, r, i: (
        True if c.design.claim == "overwrite" or c.per_post else s.inflight[s.rid[r]] == NONE
    ),
    "refuses_duplicates": lambda b, s, c, r, i: c.design.refuses,
    "at_decision_point": lambda b, s, c, r, i: (
        b.In(s.step[r], (Step.UNCHECKED, Step.CLAIMED)) if c.design.claim == "split" else True
    ),
    "handler_running": lambda b, s, c, r, i: s.running[r],
    "stream_open": lambda b, s, c, r, i: s.open[r],
    "fresh_server_id": lambda b, s, c, r, i: (
        (s.sq[i] == Sreq.NONE) if c.design.fresh_server_ids else True
    ),
    "server_request_seen": _server_request_seen,
    "waits_on_it": lambda b, s, c, r, i: s.waiter[i] == r,
    "may_stop_waiting": _may_stop_waiting,
    "no_waiter": lambda b, s, c, r, i: (
        b.ForAll("id", lambda k: s.waiter[k] != r) if c.design.releases_waiters else True
    ),
    "session_live": lambda b, s, c, r, i: b.Not(s.ended),
    "session_ended": lambda b, s, c, r, i: s.ended,
    "cancel_not_sent": lambda b, s, c, r, i: s.cmsg[r] == Cmsg.NONE,
    "believed_in_progress": lambda b, s, c, r, i: b.And(
        s.life[r] != Life.UNSENT, b.Not(answered(b, s, r))
    ),
    "close_needs_open_stream": lambda b, s, c, r, i: s.open[r] if c.close_is_cancel else True,
    "cancel_on_wire": lambda b, s, c, r, i: s.cmsg[r] == Cmsg.WIRE,
    "cancel_in_channel_order": lambda b, s, c, r, i: (
        in_order(b, s, c, s.cts[r]) if c.design.cancels_in_order else True
    ),
    "close_after_request": lambda b, s, c, r, i: (
        (s.life[r] != Life.SENT) if c.close_is_cancel else True
    ),
}
