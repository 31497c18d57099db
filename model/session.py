"""The session model's actions: every step of a session, its guard, effect and output.

Like h11's ``_state.py``, the session model is the whole of the rules: the explorer
(``proofs/explorer.py``, on the session's declaration), the z3 prover, the diagrams and the
runtime core (``impl/``) read
these definitions and add none of their own.  Guards and effects are written against the state
interface of ``model/logic.py`` so that a concrete and a symbolic backend read the same text.
The rules are three modules, read in this order, each importing only the ones before it:
``model/session_state.py`` (the fields, their domains, views of a state), then
``model/session_conditions.py`` (the named conditions and the routing, ordering and release
rules they share), then this one (the action table, each action's effect and output, the
server's cancel rule, and which actions a server takes).

Where a message goes is not state but the *output* of an action (``Action.output``): the stream
the server's transport writes it on and whether it goes out at all.  The runtime adapters act on
these outputs; the routing invariants (``model/properties.py``) judge them on every transition.

A handler may make any number of server-to-client requests, one after another or several at
once, each under a fresh id; it stops waiting on each (answered, timed out, or unwound by a
cancel) before it ends.

2026-07-28 Streamable HTTP has no sessions: a server that serves each POST as a scope of its own
(``Design.post_scopes``, ``Config.per_post``; ``atomic`` does, as the runtime does) holds in a
scope only the one request its POST carries, so that request's in-flight entry and stream slot
are the POST itself: its messages go on its own response stream (``route``), the close of that
stream cancels it (``on_cancel``), no id is ever found in flight there (nothing to refuse), and
the id-keyed registries ``inflight`` and ``stream`` stay empty.  What the scopes share is the
process: its end (``end_session``: shutdown ends every POST) and nothing keyed by id.  A design
without ``post_scopes`` keeps one id-keyed registry for every POST of the profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from . import lifecycle as lc
from .config import Config
from .declare import FAIRNESS
from .lifecycle import Life
from .logic import NONE, Logic, Outputs, Write
from .session_conditions import CONDITIONS, deliverable, release, route, stamp
from .session_state import Cmsg, Sreq, Step

#: An action's writes: ``fn(b, s, c, r, i, out)``.
Effect = Callable[[Logic, Any, Config, Any, Any, Outputs], list[Write]]
#: An action's outputs: ``fn(b, s, c, r, i)``.
Output = Callable[[Logic, Any, Config, Any, Any], Outputs]


def _no_output(b: Logic, s: Any, c: Config, r: Any, i: Any) -> Outputs:
    return {}


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
