"""The session level: state, conditions and actions.  Everything that moves the model is here.

Like h11's ``_state.py``, this file is the whole of the rules: the explorer
(``proofs/explore.py``), the z3 prover, the diagrams and the runtime core (``impl/``) read
these definitions and add none of their own.  Guards and effects are written against the state
interface of ``model/logic.py`` so that a concrete and a symbolic backend read the same text.

State (``FIELDS``) -- keyed by request instance (``inst``), by id (``id``), or scalar:

* real server state: ``life`` (lifecycle, ``model/lifecycle.py``), ``rid`` (the request's
  id), ``running`` (its handler runs), ``open`` (its response channel is open), ``step``
  (check_then_claim's progress through check and claims), ``inflight`` and ``stream`` (the
  id-keyed registries: in-flight entry with the cancel handle, and the POST stream slot on http),
  ``waiter`` (the server's registry of its own requests to the client, keyed by the ids it
  mints: which handler waits for each answer), ``ended`` (the session has ended: DELETE, idle
  expiry or shutdown);
* the wire: ``ts``/``cts`` (send times of a request and of its cancel; stdio delivers in send
  order, http in any order), ``cmsg`` (the cancel message: none, on the wire, delivered),
  ``clock``, ``sq`` (what became of the server-to-client request under each server-minted id:
  the server mints ids from a counter of its own, so an id it takes is one never minted before in
  the session, and the runtime keeps no table of them);
* ghosts, never read by a server rule: ``rogue`` (who sent it: the client, which obeys its id
  rule, or a rogue in the same session, which may send any id), ``got_resp`` (the client's
  view: this instance's channel has received a response or a refusal) and ``shown`` (the request
  on whose stream a server-to-client request went out: its sender is the one who saw it).  A cancel message
  *means* the instance it is indexed by.

The client's id rule is that of its discipline (``Config.client``, ``model/config.py``): the
*reusing* client reuses an id once answered (the rule of 2026-07-28, and common practice on
2025-11-25, where it is not compliant), the *fresh* client never reuses an id in the session
(the rule of 2025-11-25).  Each property says whose requests it protects
(``Property.protects``), each hazard which sender it needs (``Property.needs``).

Why one file of this length: the state, the named conditions, the server's rules and the
action table refer to one another at every line (a condition reads fields, an action names
conditions and effects, an effect calls the server rules), and the one-place rule above is the
point; split, a reader would need every part to read any.  The sections run in that order.

Where a message goes is not state but the *output* of an action (``Action.output``): the stream
the server's transport writes it on and whether it goes out at all.  The runtime adapters act on
these outputs; the routing invariants (``model/properties.py``) judge them on every transition.

Server-minted ids share the abstract id sort with the clients' ids (``--ids`` bounds both):
the two are separate namespaces (``inflight``/``stream`` are keyed by the clients' ids,
``waiter``/``sq``/``shown`` by the server's), and no rule compares a value of one with a value
of the other, so renaming ids stays a symmetry of the model.  A handler may make any number of
server-to-client requests, one after another or several at once, each under a fresh id; it
stops waiting on each (answered, timed out, or unwound by a cancel) before it ends.

2026-07-28 Streamable HTTP has no sessions: a server that serves each POST as a scope of its own
(``Design.post_scopes``, ``Config.per_post``; ``atomic`` does, as the runtime does) holds in a
scope only the one request its POST carries, so that request's in-flight entry and stream slot
are the POST itself: its messages go on its own response stream (``route``), the close of that
stream cancels it (``on_cancel``), no id is ever found in flight there (nothing to refuse), and
the id-keyed registries ``inflight`` and ``stream`` stay empty.  What the scopes share is the
process: its end (``end_session``: shutdown ends every POST) and nothing keyed by id.  A design
without ``post_scopes`` keeps one id-keyed registry for every POST of the profile.

The standalone GET stream of 2025-11-25 is not keyed by any request id in any design here, so
no request action touches it; it is left out of the explored state (the runtime keeps it in a
slot of its own, and its tests send an id that names it).  ``_meta.progressToken`` is taken to
be the request id, as the official clients mint it, so the progress-token registry coincides
with ``inflight``.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from . import lifecycle as lc
from .config import Config
from .declare import FAIRNESS
from .lifecycle import LIVE, Domain, Life
from .logic import NONE, Logic, Outputs, Write

# --- value domains ------------------------------------------------------------------------


class Step(Domain):
    """check_then_claim's progress through the transport's check and the claims."""

    UNCHECKED = 0
    CHECKED = 1
    CLAIMED = 2

    @property
    def label(self) -> str:
        return "stream claimed" if self is Step.CLAIMED else self.name.lower()


class Sreq(Domain):
    """The fate of the server-to-client request under one server-minted id."""

    NONE = 0  # not minted in this session
    PENDING = 1  # written on a stream; no answer has reached the server yet
    ANSWERED = 2  # an answer reached the server while a handler waited on it
    FAILED = 3  # dropped (no live stream), or its handler stopped waiting unanswered


class Cmsg(Domain):
    """An instance's cancel message."""

    NONE = 0
    WIRE = 1  # sent, not yet read by the server
    DELIVERED = 2

    @property
    def label(self) -> str:
        return "on wire" if self is Cmsg.WIRE else self.name.lower()


@dataclass(frozen=True)
class Field:
    """One field of the state.  ``domain``: the enumeration of its values, for a field of a
    finite sort; the renderers, the prover's typing and the drawings read its range from it."""

    name: str
    key: str | None  # "inst", "id" or None (scalar)
    sort: str  # "life", "id", "inst?", "bool", "step", "sreq", "cmsg", "time"
    ghost: bool
    wire: bool
    default: object
    doc: str
    domain: type[Domain] | None = None


FIELDS: tuple[Field, ...] = (
    Field("life", "inst", "life", False, False, Life.UNSENT, "lifecycle state", Life),
    Field("rid", "inst", "id", False, False, 0, "the request's JSON-RPC id"),
    Field("rogue", "inst", "bool", True, False, False, "sent by the rogue, not the client"),
    Field("running", "inst", "bool", False, False, False, "its handler is running"),
    Field("open", "inst", "bool", False, False, False, "its response channel is open"),
    Field(
        "step",
        "inst",
        "step",
        False,
        False,
        Step.UNCHECKED,
        "check_then_claim: unchecked, checked, stream claimed",
        Step,
    ),
    Field(
        "got_resp",
        "inst",
        "bool",
        True,
        False,
        False,
        "its channel has received a response or refusal (the client's view)",
    ),
    Field(
        "cmsg",
        "inst",
        "cmsg",
        False,
        True,
        Cmsg.NONE,
        "its cancel: none, on the wire, delivered",
        Cmsg,
    ),
    Field("ts", "inst", "time", False, True, 0, "send time of the request (stdio order)"),
    Field("cts", "inst", "time", False, True, 0, "send time of its cancel (stdio order)"),
    Field(
        "inflight",
        "id",
        "inst?",
        False,
        False,
        NONE,
        "in-flight entry (handler, cancel handle) per id",
    ),
    Field("stream", "id", "inst?", False, False, NONE, "POST stream slot per id (http)"),
    Field(
        "waiter",
        "id",
        "inst?",
        False,
        False,
        NONE,
        "per server-minted id: the handler waiting for the answer to that server-to-client request",
    ),
    Field(
        "sq",
        "id",
        "sreq",
        False,
        True,
        Sreq.NONE,
        "per server-minted id: none (not minted), pending, answered, failed",
        Sreq,
    ),
    Field(
        "shown",
        "id",
        "inst?",
        True,
        False,
        NONE,
        "per server-minted id: the request whose stream carried it (whose sender saw it), or none",
    ),
    Field("clock", None, "time", False, True, 0, "next send time (stdio)"),
    Field("ended", None, "bool", False, False, False, "the session has ended"),
)
FIELD = {f.name: f for f in FIELDS}
REGISTRIES = ("inflight", "stream")
#: The server's registry of its own requests to the client (keyed by the ids it mints).
WAITERS = "waiter"

if TYPE_CHECKING:
    #: A state: a namedtuple with one attribute per field of ``FIELDS`` (built at run time, so
    #: a type checker knows it only as a value read by attribute).
    State = Any
else:
    State = namedtuple("State", [f.name for f in FIELDS])


def initial(cfg: Config) -> State:
    vals = []
    for f in FIELDS:
        n = cfg.requests if f.key == "inst" else cfg.ids if f.key == "id" else None
        vals.append(f.default if n is None else (f.default,) * n)
    return State(*vals)


def domains(cfg: Config) -> dict[str, range]:
    return {"inst": range(cfg.requests), "id": range(cfg.ids)}


# --- derived notions (read-only helpers used by conditions, effects and properties) ---------


def answered(b: Logic, s: Any, r: Any) -> Any:
    """Instance r's channel has received a response (its own or, if misrouted, another's)."""
    return s.got_resp[r]


def unfinished(b: Logic, s: Any, r: Any) -> Any:
    """r is on the wire, being admitted, live, or a cancelled handler still unwinding."""
    return b.Or(b.In(s.life[r], (Life.SENT, Life.RECEIVED) + LIVE), s.running[r])


def quiescent(b: Logic, s: Any) -> Any:
    return b.ForAll("inst", lambda r: b.Not(unfinished(b, s, r)))


def settled(b: Logic, s: Any) -> Any:
    """Nothing left to do: nothing unfinished and no cancel on the wire (a state with no enabled
    action that is not settled is a deadlock)."""
    return b.And(quiescent(b, s), b.ForAll("inst", lambda r: s.cmsg[r] != Cmsg.WIRE))


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
#: its own).  ``proofs/symmetry.py`` checks every rule without it, and that unsent slots are
#: interchangeable (all at their initial values), which is what makes the order lose nothing.
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
#: An action's writes: ``fn(b, s, c, r, i, out)``.
Effect = Callable[[Logic, Any, Config, Any, Any, Outputs], list[Write]]
#: An action's outputs: ``fn(b, s, c, r, i)``.
Output = Callable[[Logic, Any, Config, Any, Any], Outputs]


def _no_output(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Outputs:
    return {}


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


# --- server rules (real state only: the runtime core calls these) ---------------------------


def on_cancel(b: Logic, s: Any, c: Config, i: Any, conn: Any) -> tuple[Any, Any, list[Write]]:
    """The server handles a cancel for id ``i`` (stdio, 2025-11-25 http: notifications/cancelled
    carries only the id) or the close of connection ``conn`` (2026-07-28 http).

    Returns ``(target, hit, writes)``: the instance the server cancels (if ``hit``).  A cancel for
    an unknown or finished id is ignored (basic/utilities/cancellation).  A POST of its own
    scope holds only its request, so a close there reaches that request however it is looked up.
    """
    trigger = "stream_closed" if c.close_is_cancel else "cancel"
    if c.close_is_cancel and (c.design.cancel_by_connection or c.per_post):
        tgt = conn
    else:
        tgt = s.inflight[i]
    hit = b.And(tgt != NONE, b.In(s.life[tgt], lc.sources(c.revision, trigger)))
    writes = [Write("life", tgt, lc.dest(c.revision, trigger), hit)]
    if c.design.free_on == "cancel":
        writes.append(release(b, s, c, "cancel", "inflight", s.rid[tgt], tgt, hit))
    return tgt, hit, writes


def _release_all(b: Logic, s: Any, c: Config, site: str, r: Any) -> list[Write]:
    out = [release(b, s, c, site, "inflight", s.rid[r], r)]
    if c.http:
        out.append(release(b, s, c, site, "stream", s.rid[r], r))
    return out


# --- actions --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """One kind of step.  ``guard`` = the trigger's source set on ``r`` (if any) and every named
    condition (the trigger's, from the lifecycle table, then ``extra``); ``effect`` returns the
    writes.  ``side`` says who takes it: ``client`` (either sender), ``wire``, ``server``.
    ``removal`` marks the sites that ``owned_removal`` watches; the owner is ``r``.
    ``obligations`` names the conditions a server does not evaluate: the sender's to keep, which
    the server cannot see (an answer comes from whoever saw the request), or the server's own,
    kept by construction (a server id is fresh because the server mints it from a counter); the
    runtime runs the action without them.
    ``fair`` (declared by every action, the vocabulary of ``model/declare.py``): ``weak``, a
    liveness property may rest on it (a move of it that stays enabled is eventually taken), or
    ``none``, nothing forces it (the senders owe nothing; a stream breaking is the network's
    doing; the session's end may never come).  The side does not decide it.
    """

    name: str
    side: str
    params: tuple[str, ...]
    trigger: str | None
    extra: tuple[str, ...]
    effect: Effect
    applies: Callable[[Config], bool]
    story: str
    removal: bool = False
    output: Output = _no_output
    obligations: tuple[str, ...] = ()
    fair: str = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.fair not in FAIRNESS:
            raise ValueError(f"{self.name}: fairness must be one of {FAIRNESS}, not {self.fair!r}")

    def run(
        self, b: Logic, s: Any, c: Config, r: Any, i: Any = None
    ) -> tuple[Any, Outputs, list[Write]]:
        """(guard, outputs, writes) on pre-state ``s``; outputs and writes mean something only
        when the guard holds.  Outputs map a message kind (``progress``, ``server_request``,
        ``response``) to ``(stream, goes_out)``: what a transport adapter must do."""
        out = self.output(b, s, c, r, i)
        return self.guard(b, s, c, r, i), out, self.effect(b, s, c, r, i, out)

    def conditions(self, c: Config) -> tuple[str, ...]:
        base = () if self.trigger is None else lc.row(c.revision, self.trigger).conditions
        return base + self.extra

    def sources(self, c: Config) -> tuple[Life, ...] | None:
        return None if self.trigger is None else lc.sources(c.revision, self.trigger)

    def server_conditions(self, c: Config) -> tuple[str, ...]:
        """The conditions a server evaluates (all but the sender's obligations)."""
        return tuple(n for n in self.conditions(c) if n not in self.obligations)

    def guard(
        self,
        b: Logic,
        s: Any,
        c: Config,
        r: Any,
        i: Any = None,
        server: bool = False,
        skip: tuple[str, ...] = (),
    ) -> Any:
        """The guard; ``server=True``: as a server evaluates it, without the obligations;
        ``skip``: without the conditions named (the symmetry check leaves out ``SLOT_ORDER``)."""
        parts = []
        src = self.sources(c)
        if src is not None:
            parts.append(b.In(s.life[r], src))
        names = self.server_conditions(c) if server else self.conditions(c)
        parts.extend(CONDITIONS[n](b, s, c, r, i) for n in names if n not in skip)
        return b.And(*parts)


def _fire(c: Config, trigger: str, r: Any) -> Write:
    return Write("life", r, lc.dest(c.revision, trigger))


def _send_effect(rogue: bool) -> Effect:
    def effect(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
        return [
            _fire(c, "send", r),
            Write("rid", r, i),
            Write("rogue", r, rogue),
            Write("open", r, True),
        ] + stamp(b, s, c, "ts", r)

    return effect


def _arrive(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    return [_fire(c, "arrive", r)]


def _check(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    return [Write("step", r, Step.CHECKED if c.http else Step.CLAIMED)]


def _claim_stream(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    if c.per_post:
        return [Write("step", r, Step.CLAIMED)]
    return [Write("step", r, Step.CLAIMED), Write("stream", s.rid[r], r)]


def _admit(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    ws = [_fire(c, "admit", r), Write("running", r, True)]
    if c.per_post:  # the POST is its request's entry and slot: nothing keyed by id
        return ws
    ws.append(Write("inflight", s.rid[r], r))
    if c.http and c.design.claim != "split":
        ws.append(Write("stream", s.rid[r], r))
    return ws


def _out_own(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Outputs:
    """A refusal is the reply to the request itself: on http its own POST; on stdio an error
    with ``id: null`` whose ``data`` names the id, so no pending request of the client matches it."""
    return {"response": (r, True)}


def _out_routed(kind: str) -> Output:
    def output(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Outputs:
        t = route(b, s, c, r)
        return {kind: (t, deliverable(b, s, c, r, t))}

    return output


def _refuse(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    out_writes = [_fire(c, "refuse", r), Write("got_resp", r, True)]
    if c.http and c.design.claim == "split":
        out_writes.append(
            release(b, s, c, "refuse", "stream", s.rid[r], r, s.step[r] == Step.CLAIMED)
        )
    return out_writes


def _emit(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    return []


def _server_request(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    """r's handler mints id i and writes its request where the transport routes it; it waits on
    i only if the request went out (a dropped one fails at once), unless the design waits on
    lost requests."""
    t, d = out["server_request"]
    return [
        Write("sq", i, b.Ite(d, Sreq.PENDING, Sreq.FAILED)),
        Write("waiter", i, r, True if c.design.waits_on_lost else d),
        Write("shown", i, t, d),
    ]


def _out_answer(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Outputs:
    """An answer to server id i goes to the handler waiting on i, if any (else it is ignored)."""
    w = s.waiter[i]
    return {"answer": (w, w != NONE)}


def _answer(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    _, d = out["answer"]
    ws = [Write("sq", i, Sreq.ANSWERED, d)]
    if c.design.answer_clears_waiter:
        # with no waiter left a later answer is ignored whoever sends it: who saw the request
        # no longer matters (and is forgotten, which keeps the explored state small)
        ws += [Write("waiter", i, NONE, d), Write("shown", i, NONE, d)]
    return ws


def _withdraw(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    return [
        Write("waiter", i, NONE),
        Write("shown", i, NONE),
        Write("sq", i, Sreq.FAILED, s.sq[i] == Sreq.PENDING),
    ]


def _end_session(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    return [Write("ended", None, True)]


def _end_request(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    """A cancel by the session's end: as a delivered cancel, it frees the id where the design
    frees it on the cancel."""
    ws = [_fire(c, "end", r)]
    if c.design.free_on == "cancel":
        ws.append(release(b, s, c, "cancel", "inflight", s.rid[r], r))
    return ws


def _reject(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    return [_fire(c, "reject", r)] + _refuse(b, s, c, r, i, out)[1:]


def _respond(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    t, d = out["response"]
    return [
        _fire(c, "respond", r),
        Write("running", r, not c.design.stops_on_respond),
        Write("got_resp", t, True, d),
    ] + _release_all(b, s, c, "respond", r)


def _send_cancel(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    ws = [Write("cmsg", r, Cmsg.WIRE)] + stamp(b, s, c, "cts", r)
    if c.close_is_cancel:
        ws.append(Write("open", r, False))
    return ws


def _deliver_cancel(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    _, _, writes = on_cancel(b, s, c, s.rid[r], r)
    return [Write("cmsg", r, Cmsg.DELIVERED)] + writes


def _unwind(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    ws = [Write("running", r, False)]
    if c.design.free_on == "handler_end":
        ws.append(release(b, s, c, "unwind", "inflight", s.rid[r], r))
    if c.http:
        ws.append(release(b, s, c, "unwind", "stream", s.rid[r], r))
    return ws


def _break(b: Logic, s: Any, c: Config, r: Any, i: Any, out: Outputs) -> list[Write]:
    return [
        _fire(c, "stream_closed", r),
        Write("open", r, False),
        release(b, s, c, "break", "stream", s.rid[r], r),
    ]


def _always(c: Config) -> bool:
    return True


ACTIONS: tuple[Action, ...] = (
    Action(
        "client_sends",
        "client",
        ("r", "i"),
        "send",
        ("client_obeys_id_rule",),
        _send_effect(False),
        _always,
        "client sends tools/call id={i} (instance {r})",
        fair="none",
    ),
    Action(
        "rogue_sends",
        "client",
        ("r", "i"),
        "send",
        (),
        _send_effect(True),
        _always,
        "rogue sends tools/call id={i} (instance {r})",
        fair="none",
    ),
    Action(
        "arrive",
        "wire",
        ("r",),
        "arrive",
        (),
        _arrive,
        _always,
        "server reads {r}'s request (id={id})",
        fair="weak",
    ),
    Action(
        "check",
        "server",
        ("r",),
        "check",
        (),
        _check,
        lambda c: c.design.claim == "split",
        "transport checks id={id} for {r}: not in flight",
        fair="weak",
    ),
    Action(
        "claim_stream",
        "server",
        ("r",),
        "claim_stream",
        (),
        _claim_stream,
        lambda c: c.design.claim == "split" and c.http,
        "transport stores {r}'s stream under id={id}",
        fair="weak",
    ),
    Action(
        "admit",
        "server",
        ("r",),
        "admit",
        (),
        _admit,
        _always,
        "server admits {r} (id={id})",
        fair="weak",
    ),
    Action(
        "refuse",
        "server",
        ("r",),
        "refuse",
        (),
        _refuse,
        lambda c: c.design.refuses and not c.per_post,  # a POST's own scope: nothing to refuse
        "server refuses {r}: id={id} is in flight",
        removal=True,
        output=_out_own,
        fair="weak",
    ),
    Action(
        "emit",
        "server",
        ("r",),
        None,
        ("handler_running",),
        _emit,
        _always,
        "{r} emits progress/log",
        output=_out_routed("progress"),
        fair="weak",
    ),
    Action(
        "server_request",
        "server",
        ("r", "i"),
        None,
        ("handler_running", "fresh_server_id"),
        _server_request,
        lambda c: c.rev2025,
        "{r} sends elicitation/create to the client under server id {i}",
        output=_out_routed("server_request"),
        obligations=("fresh_server_id",),
        fair="weak",
    ),
    Action(
        "answer",
        "client",
        ("r", "i"),
        None,
        ("server_request_seen",),
        _answer,
        lambda c: c.rev2025,
        "{sender} of {r} answers server request {i}",
        output=_out_answer,
        obligations=("server_request_seen",),
        # the client's: it owes the server no answer (a handler may stop waiting instead)
        fair="none",
    ),
    Action(
        "withdraw",
        "server",
        ("r", "i"),
        None,
        ("waits_on_it", "may_stop_waiting"),
        _withdraw,
        lambda c: c.rev2025,
        "{r} stops waiting on server request {i}",
        fair="weak",
    ),
    Action(
        "respond",
        "server",
        ("r",),
        "respond",
        ("no_waiter",),
        _respond,
        _always,
        "{r} responds",
        removal=True,
        output=_out_routed("response"),
        fair="weak",
    ),
    Action(
        "send_cancel",
        "client",
        ("r",),
        None,
        ("cancel_not_sent", "believed_in_progress", "close_needs_open_stream"),
        _send_cancel,
        _always,
        "{sender} cancels {r} (id={id})",
        fair="none",
    ),
    Action(
        "deliver_cancel",
        "wire",
        ("r",),
        None,
        ("cancel_on_wire", "cancel_in_channel_order", "close_after_request"),
        _deliver_cancel,
        _always,
        "server gets the cancel meant for {r} (id={id})",
        removal=True,
        fair="weak",
    ),
    Action(
        "unwind",
        "server",
        ("r",),
        "unwind",
        ("no_waiter",),
        _unwind,
        _always,
        "cancelled handler {r} stops",
        removal=True,
        fair="weak",
    ),
    Action(
        "break_stream",
        "server",
        ("r",),
        "stream_closed",
        (),
        _break,
        lambda c: c.rev2025 and c.http,
        "{r}'s POST stream breaks",
        removal=True,
        # the network's doing, not a step the server owes: were it fair, every waiting POST
        # would end up broken, and a broken stream counts as an end of the request
        fair="none",
    ),
    Action(
        "end_session",
        "server",
        ("r",),
        None,
        ("session_live",),
        _end_session,
        _always,
        "the session ends (DELETE, idle expiry or shutdown)",
        # the client's DELETE, an idle timer or a shutdown, which may never come: were it fair,
        # every request would end up cancelled by it (what the server owes after it is fair)
        fair="none",
    ),
    Action(
        "end_request",
        "server",
        ("r",),
        "end",
        (),
        _end_request,
        _always,
        "the session's end cancels {r}",
        removal=True,
        fair="weak",
    ),
    Action(
        "reject",
        "server",
        ("r",),
        "reject",
        (),
        _reject,
        _always,
        "server turns {r} away: the session has ended",
        output=_out_own,
        fair="weak",
    ),
)
ACTION = {a.name: a for a in ACTIONS}


#: The actions a server takes (its own steps, the client's answer to its request, and the wire's
#: delivery of a request), as the runtime core runs them, guard and effect.
SERVER_ACTIONS: tuple[str, ...] = (
    "arrive",
    "admit",
    "refuse",
    "emit",
    "server_request",
    "answer",
    "withdraw",
    "respond",
    "unwind",
    "break_stream",
    "end_session",
    "end_request",
    "reject",
)
#: The client steps whose *effects* a server applies when a message comes in (``send``: the
#: request is on the wire, the id and an open channel recorded) or a stream closes (``close``);
#: their guards are the sender's obligations, which a server cannot check.
SERVER_EFFECTS: dict[str, str] = {"send": "rogue_sends", "close": "send_cancel"}


@cache
def actions_for(cfg: Config) -> tuple[Action, ...]:
    return tuple(a for a in ACTIONS if a.applies(cfg))


def canonical_clock(c: Config, s: State) -> State:
    """Renumber send times: only the order of *undelivered* messages is ever read (``in_order``),
    so times are replaced by their rank among undelivered messages and the rest set to 0.  This
    keeps the concrete state space finite on stdio; it is an exact abstraction (every guard and
    property gives the same answer before and after), not a rule.
    """
    if not c.stdio:
        return s
    pending = sorted(
        [(s.ts[r], 0, r) for r in range(c.requests) if s.life[r] == Life.SENT]
        + [(s.cts[r], 1, r) for r in range(c.requests) if s.cmsg[r] == Cmsg.WIRE]
    )
    ts = [0] * c.requests
    cts = [0] * c.requests
    for rank, (_, kind, r) in enumerate(pending):
        (ts if kind == 0 else cts)[r] = rank
    return s._replace(ts=tuple(ts), cts=tuple(cts), clock=len(pending))
