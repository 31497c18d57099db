"""The online check: the replay's check of the model, run on a server's own events as they happen.

A :class:`Monitor` is a sink for the events of :mod:`mcp_inflight.trace.tap`: it keeps one
:class:`Online` per session (the events of a POST sent before its
session existed, ``initialize``, join the session its answer names; 2026-07-28 traffic, with no
session, is not checked), counts the events, the observed
steps and the violations, and logs each violation on the logger ``mcp_inflight.trace`` with the
event that no move of the ``atomic`` design explains.  Off by default (``serve
--online-check``, ``guard(app, online=True)``).
"""

from __future__ import annotations

import functools
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..model.config import ATOMIC, Config, Design
from ..model.observe import REVISION, STATELESS, TRANSPORT, Abstractor, Observed, is_call, stateless
from ..model.observe_check import advance
from ..model.session_state import State, settled
from ..model.step import backend, start
from .format import S2C
from .scope import outside, transport_answer

log = logging.getLogger("mcp_inflight.trace")


def shown(value: Any, limit: int = 80) -> str:
    """A value from the wire as it may appear in a log line: as JSON (no line breaks or control
    characters) and cut to ``limit`` characters, so a client cannot forge or flood lines."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        text = json.dumps(repr(value)[: limit * 2])
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Violation:
    """One step the model does not explain: the session, the observed step and its event."""

    session: str
    step: Observed
    event: dict[str, Any]


def _key(v: Any) -> Any:
    """A JSON value as a dict key: a string or an integer as itself (the common ids), anything
    else as its canonical JSON text in a tuple (so no two values share a key)."""
    t = type(v)
    return v if t is str or t is int else (json.dumps(v, sort_keys=True),)


class _Model:
    """What every part checked on one bound shares: the configuration, its backend, the start
    state, and the memory of the check's steps: (frontier, observed step) -> the frontier after
    it, and frontier -> whether one of its states is settled.  A server's traffic repeats the
    same few steps from the same few frontiers, so after warm-up a step is one lookup."""

    SIZE = 50_000

    def __init__(
        self,
        design: Design,
        requests: int,
        ids: int,
        cap: int,
        revision: str = REVISION,
        transport: str = TRANSPORT,
    ) -> None:
        self.cfg = Config(design, revision, transport, ids=ids, requests=requests)
        self.b = backend(self.cfg)
        self.cap = cap
        self.depth = 3 * requests + 1
        self.start: tuple[State, ...] = (start(self.cfg),)
        self.steps: dict[tuple[Any, ...], tuple[State, ...]] = {}
        self.settled: dict[tuple[State, ...], bool] = {}

    def step(self, frontier: tuple[State, ...], o: Observed) -> tuple[State, ...]:
        """The states reached from ``frontier`` by internal moves and then ``o``: every model
        state that explains the steps so far (at most ``cap``; empty when none does)."""
        key = (frontier, o.kind, o.r, o.i, o.stream, o.of)
        got = self.steps.get(key)
        if got is None:
            nxt: dict[State, None] = {}
            for s in frontier:
                for post in advance(self.cfg, {s: None}, o, self.b, self.depth, self.cap):
                    nxt[post] = None
                    if len(nxt) >= self.cap:
                        break
                if len(nxt) >= self.cap:
                    break
            if len(self.steps) >= self.SIZE:
                self.steps.clear()
            got = self.steps[key] = tuple(nxt)
        return got

    def at_rest(self, frontier: tuple[State, ...]) -> bool:
        got = self.settled.get(frontier)
        if got is None:
            if len(self.settled) >= self.SIZE:
                self.settled.clear()
            got = self.settled[frontier] = any(bool(settled(self.b, s)) for s in frontier)
        return got


# one shared model per bound (design, requests, ids, cap, revision, transport)
_model = functools.cache(_Model)

#: the model's verdict on a simple part (see ``_Session._simple``) per bound (requests, ids,
#: transport): the steps it checks when clean, -1 when not
_SIMPLE: dict[tuple[Any, ...], int] = {}


class Online:
    """The check of one run, one event at a time, for a server that checks itself as it runs.

    Where the replay (``model/observe_check.py``'s ``check``) backtracks over a whole trace, this
    keeps the set of model states that explain every step so far (at most ``cap``; each
    observed step maps it through the internal moves and the observed move), so no step is
    ever taken back.  The model's bound is fixed (``requests`` instances, ``ids`` ids): whenever
    the run reaches a settled state (nothing unfinished, no cancel on the wire: every registry
    is empty by ``quiescent_clean``, so the session is as at its start) and every tool call's
    POST is closed, the numbering of instances and ids starts again.  A run with more than
    ``requests`` tool calls between two settled points is past the bound: it is no longer
    checked (``unchecked``).  Invariants are not evaluated: on ``atomic`` they hold in every
    reachable state (``mcp-inflight check`` and ``prove``), so a step explained is a step that
    keeps them.  After an unexplained step the check waits until every tool call seen has been
    answered, refused or abandoned by its client, and starts again from there."""

    def __init__(
        self,
        requests: int = 3,
        ids: int = 3,
        design: Design = ATOMIC,
        cap: int = 64,
        revision: str = REVISION,
        transport: str = TRANSPORT,
    ) -> None:
        self.model = _model(design, requests, ids, cap, revision, transport)
        self.stdio = transport == "stdio"
        self.cfg = self.model.cfg
        self.abstractor = Abstractor(transport=transport)
        self.unchecked = False
        self.steps = 0
        self.open_posts: set[Any] = set()
        self.frontier = self.model.start
        self.lost = False
        self.events = 0  # the events fed so far (the next one's number)
        self.restarts = 0  # fresh starts after a violation
        # stdio, after a violation: tool calls sent and ended (answered or refused) per id
        self.sent: dict[int | None, int] = {}
        self.ended: dict[int | None, int] = {}

    def _reset(self) -> None:
        if self.lost:
            self.restarts += 1
        self.abstractor.forget()
        self.frontier = self.model.start
        self.lost = False
        if self.sent:
            self.sent, self.ended = {}, {}

    def _all_ended(self) -> bool:
        """Every tool call seen since the last fresh start has ended on the wire (asked once
        every tool call's POST is closed).  Over HTTP each call is its POST, so a closed POST
        is an ended call (answered, refused, closed by its client, or closed by the server
        with its answer gone elsewhere: nothing more of it can come on its stream); on stdio,
        with no POST to tell the calls under one id apart, each id has had as many responses
        and refusals as calls (a call cancelled and never answered keeps its id unfinished)."""
        if self.stdio:
            return all(self.ended.get(i, 0) >= k for i, k in self.sent.items())
        return True

    def feed(self, n: int, ev: dict[str, Any]) -> Observed | None:
        """Check event ``ev`` (the ``n``-th of the run): the observed step no move explains,
        or None."""
        if self.unchecked:
            return None
        bad = None
        for o in self.abstractor.feed(n, ev):
            if self.stdio:
                if o.kind == "send":
                    self.sent[o.i] = self.sent.get(o.i, 0) + 1
                elif o.kind in ("respond", "refuse") and o.i is not None:
                    self.ended[o.i] = self.ended.get(o.i, 0) + 1
            if self.lost:
                continue
            if o.kind == "send" and (
                (o.r is not None and o.r >= self.cfg.requests)
                or (o.i is not None and o.i >= self.cfg.ids)
            ):
                self.unchecked = True
                return None
            self.steps += 1
            nxt = self.model.step(self.frontier, o)
            if not nxt:
                self.lost = True
                bad = o
                break
            self.frontier = nxt
        # a fresh start needs the wire at rest too: every tool call's POST closed
        kind = ev.get("kind")
        if kind == "message":
            if is_call(ev):
                if not self.stdio:  # stdio: one channel, no POST to close
                    self.open_posts.add(ev.get("exchange"))
            elif not self.lost and not self.abstractor.post_inst:
                return bad  # no tool call since the last fresh start: at its start still
        elif kind == "close":
            self.open_posts.discard(ev.get("exchange"))
        if not self.open_posts and (
            self._all_ended() if self.lost else self.model.at_rest(self.frontier)
        ):
            self._reset()
        return bad

    @property
    def idle(self) -> bool:
        """Nothing seen since the last fresh start."""
        return not self.open_posts and not self.abstractor.post_inst and not self.lost


class _Session:
    """One session's check, split by JSON-RPC id: the events of each id's tool calls (its
    POSTs, their progress tokens, cancels naming it, responses carrying it) go to an
    :class:`Online` of their own; everything else of the session (``""``) to one more.  On
    ``atomic`` requests under different ids share no registry entry (``owned_removal``,
    ``no_misrouted_*``), so each id's part is a run of the model by itself, and a message that
    crosses ids shows up in the part it names as a message on no instance's stream."""

    def __init__(self, requests: int, ids: int, transport: str = TRANSPORT) -> None:
        self.requests, self.ids, self.transport = requests, ids, transport
        self.parts: dict[Any, Online] = {}
        self.post_key: dict[Any, Any] = {}
        self.token_key: dict[Any, Any] = {}
        self.owned: dict[Any, list[tuple[dict[Any, Any], Any]]] = {}  # part -> its routes
        self.done_steps = 0
        self.restarts = 0
        self.held: dict[Any, list[dict[str, Any]]] = {}  # simple parts so far, by id

    @property
    def steps(self) -> int:
        return self.done_steps + sum(o.steps for o in self.parts.values())

    def _own(self, table: dict[Any, Any], key: Any, part: Any) -> None:
        table[key] = part
        self.owned.setdefault(part, []).append((table, key))

    def route(self, ev: dict[str, Any]) -> Any:
        ex, m = ev.get("exchange"), ev.get("message")
        if m is None:
            return self.post_key.get(ex, "")
        params = m.get("params")
        if ev.get("dir") == "client->server":
            method = m.get("method")
            if method == "tools/call" and "id" in m:
                k = _key(m["id"])
                self._own(self.post_key, ex, k)
                meta = params.get("_meta") if type(params) is dict else None
                if type(meta) is dict and "progressToken" in meta:
                    self._own(self.token_key, _key(meta["progressToken"]), k)
                return k
            if method == "notifications/cancelled":
                k = _key(params.get("requestId") if type(params) is dict else None)
                return k if k in self.parts or k in self.held else ""
            if "id" in m:
                self.post_key.setdefault(ex, "")
            return self.post_key.get(ex, "")
        if "method" not in m and "id" in m:  # a response: its POST's part, or its id's
            k, own = _key(m["id"]), self.post_key.get(ex)
            live = k in self.parts or k in self.held
            if own == "" or (own is not None and (k == own or not live)):
                return own
            return k if live else ""
        if type(params) is dict and "progressToken" in params:
            k = self.token_key.get(_key(params["progressToken"]), "")
            if k != "":
                return k
        return self.post_key.get(ex, "")

    def _simple(self, k: Any, ev: dict[str, Any]) -> bool:
        """Whether ``ev`` goes on (or starts) id ``k``'s simple part: a ``tools/call`` on a POST,
        then a response under its id on that POST, then the POST closed by the server, and
        nothing else.  Such a part is the same run of the model every time; its verdict is
        the model's, taken the first time (:data:`_SIMPLE`) and then remembered."""
        held = self.held.get(k)
        if held is None:
            if k == "" or k in self.parts or self.transport == "stdio" or not is_call(ev):
                return False
            self.held[k] = [ev]
            return True
        first = held[0]
        ex = first["exchange"]
        if ev.get("exchange") == ex:
            if len(held) == 1 and ev.get("kind") == "message" and ev.get("dir") == S2C:
                m = ev["message"]
                if "method" not in m and ("result" in m or "error" in m):
                    if m.get("id") == first["message"]["id"]:
                        held.append(ev)
                        return True
            elif len(held) == 2 and ev.get("kind") == "close" and ev.get("by") == "server":
                memo = (self.requests, self.ids, self.transport)
                known = _SIMPLE.get(memo)
                if known is None:  # the model's verdict on this shape, the first time
                    online = Online(self.requests, self.ids, transport=self.transport)
                    bad = [online.feed(n, e) for n, e in enumerate(held + [ev])]
                    clean = not any(bad) and online.idle and not online.unchecked
                    known = _SIMPLE[memo] = online.steps if clean else -1
                if known >= 0:
                    del self.held[k]
                    self.done_steps += known
                    for table, key in self.owned.pop(k, ()):
                        if table.get(key) == k:
                            del table[key]
                    return True
        return False

    def feed(self, ev: dict[str, Any]) -> tuple[Online | None, Observed | None, bool]:
        """The part the event went to, the step it does not explain, and whether that part
        went past its bound with this event."""
        k = self.route(ev)
        online = self.parts.get(k)
        if online is None:
            if self._simple(k, ev):
                return None, None, False
            online = self.parts[k] = Online(self.requests, self.ids, transport=self.transport)
            early = None
            for e in self.held.pop(k, ()):  # not a simple part after all: checked from its start
                early = early or online.feed(online.events, e)
                online.events += 1
            if early is not None:  # (never: a prefix of a simple part is a run of the model)
                return online, early, False
        was, restarts = online.unchecked, online.restarts
        bad = online.feed(online.events, ev)
        online.events += 1
        if online.restarts != restarts:
            self.restarts += 1
        if k != "" and online.idle and not online.unchecked:  # an id at rest: its part goes
            self.done_steps += online.steps
            del self.parts[k]
            for table, key in self.owned.pop(k, ()):
                if table.get(key) == k:
                    del table[key]
        return online, bad, online.unchecked and not was


@dataclass
class Monitor:
    """Counts: ``events`` seen, ``steps`` checked, ``violations`` (the last ``keep`` of them in
    ``recent``), ``unchecked`` parts (one id of one session past the model's bound between two
    settled points: more than ``requests`` calls under one id; or a session, or an exchange of
    no session yet, some of whose events never reached the check: see :meth:`gap`),
    ``dropped`` events (those never seen, as told by :meth:`gap`), ``restarts`` (parts started
    afresh after a violation, at the next point where every call they saw had ended);
    ``max_sessions`` sessions are followed at once (the least recently active is dropped)."""

    requests: int = 3
    ids: int = 1
    max_sessions: int = 4096
    keep: int = 100
    events: int = 0
    violations: int = 0
    unchecked: int = 0
    dropped: int = 0
    restarts: int = 0
    recent: list[Violation] = field(default_factory=list)
    _cut: OrderedDict[Any, None] = field(default_factory=OrderedDict)
    _sessions: OrderedDict[str, _Session] = field(default_factory=OrderedDict)
    _steps_done: int = 0
    _early: dict[Any, list[dict[str, Any]]] = field(default_factory=dict)
    _calls: set[Any] = field(default_factory=set)  # open exchanges that carry a tools/call
    _outside: set[Any] = field(default_factory=set)  # open exchanges outside the model

    @property
    def steps(self) -> int:
        return self._steps_done + sum(s.steps for s in self._sessions.values())

    def feed(self, ev: dict[str, Any]) -> None:
        self.events += 1
        kind = ev.get("kind")
        if kind == "open" or (kind == "status" and ev.get("status", 0) < 400):
            # no observed step, no tool call's POST opened or closed: the check's state after
            # the event is its state before (model/observe.py maps neither), so it is skipped
            return
        sid = ev.get("session")
        ex = ev.get("exchange")
        if self._outside and ex in self._outside:  # an exchange outside the model's account
            if kind == "close":
                self._outside.discard(ex)
            elif transport_answer(ev):  # its answer: dropped (trace/scope.py)
                return
        if kind == "message" and ex != "stdio" and is_call(ev):
            self._calls.add(ex)
        elif kind == "status":
            if outside(ev["status"], ex in self._calls):  # trace/scope.py
                self._calls.discard(ex)
                self._outside.add(ex)
                return
        elif kind == "close":
            self._calls.discard(ex)
        if self._cut:
            if sid in self._cut:
                return
            if ("exchange", ex) in self._cut:
                if sid is not None:  # the exchange's earlier events were lost: its session too
                    self._cut_off(sid)
                return
        if sid is None:  # no session named yet (initialize), or none at all (2026-07-28)
            held = self._early.get(ex)
            if kind == "close":
                self._early.pop(ex, None)
                if held and stateless(held):
                    self._stateless(held + [ev])
            elif held is not None:
                held.append(ev)
            elif ev.get("dir") == "client->server":  # a POST's request: held from its start
                if len(self._early) < self.max_sessions:
                    self._early[ex] = [ev]
                elif is_call(ev):
                    self.unchecked += 1
            return
        for e in self._early.pop(ex, ()):
            self._check(sid, e)
        self._check(sid, ev)

    def gap(self, sessions: Any = (), exchanges: Any = (), events: int = 0) -> None:
        """``events`` events were never fed (the queue in front of the check was full): those
        of ``sessions`` and of ``exchanges`` of no session yet.  Each of them is not checked
        from here on (counted in ``unchecked``, never reported clean): its state is dropped
        and its later events are skipped, since a step of it may be missing."""
        self.dropped += events
        for sid in sessions:
            self._cut_off(sid)
        for ex in exchanges:
            key = ("exchange", ex)
            if key not in self._cut:
                self._early.pop(ex, None)
                self._cut_mark(key)

    def _cut_mark(self, key: Any) -> None:
        self.unchecked += 1
        self._cut[key] = None
        if len(self._cut) > 4 * self.max_sessions:
            self._cut.popitem(last=False)

    def _cut_off(self, sid: Any, why: str = "events lost before the online check") -> None:
        if sid in self._cut:
            return
        session = self._sessions.pop(sid, None)
        if session is not None:
            self._steps_done += session.steps
        self._cut_mark(sid)
        log.warning("session %s: %s, not checked further", shown(sid), why)

    def _stateless(self, events: list[dict[str, Any]]) -> None:
        """A 2026-07-28 POST, once it is closed: a run of its own (``check_stateless``)."""
        online = Online(1, 1, revision=STATELESS)
        for n, ev in enumerate(events):
            bad = online.feed(n, ev)
            if bad is not None:
                self._violation("(none, 2026-07-28)", bad, ev)
                break
        self._steps_done += online.steps

    def _violation(self, sid: str, bad: Observed, ev: dict[str, Any]) -> None:
        self.violations += 1
        self.recent.append(Violation(sid, bad, ev))
        del self.recent[: -self.keep]
        log.warning(
            "session %s: no move of the atomic design explains %s: %s",
            shown(sid),
            shown(bad.describe(), 300),
            shown(ev, 600),
        )

    def _check(self, sid: str, ev: dict[str, Any]) -> None:
        session = self._sessions.get(sid)
        if session is None:
            transport = "stdio" if ev.get("exchange") == "stdio" else TRANSPORT
            session = self._sessions[sid] = _Session(self.requests, self.ids, transport)
            if len(self._sessions) > self.max_sessions:
                _, old = self._sessions.popitem(last=False)
                self._steps_done += old.steps
        else:
            self._sessions.move_to_end(sid)
        restarts = session.restarts
        try:
            _, bad, past = session.feed(ev)
        except (RecursionError, AttributeError, TypeError):
            # a client's message the mapping (model/observe.py) cannot read: a value nested
            # past what it can key, params that are not an object; counted, never clean
            self._cut_off(sid, "a message the check cannot read")
            return
        if session.restarts != restarts:
            self.restarts += 1
        if past:
            self.unchecked += 1
            log.warning("session %s: past the online check's bound, partly unchecked", shown(sid))
        if bad is not None:
            self._violation(sid, bad, ev)
        if ev.get("exchange") == "DELETE" and ev.get("kind") == "close":
            self._steps_done += session.steps
            self._sessions.pop(sid, None)

    def summary(self) -> dict[str, int]:
        return {
            "events": self.events,
            "steps": self.steps,
            "violations": self.violations,
            "unchecked_parts": self.unchecked,
            "dropped_events": self.dropped,
            "restarts": self.restarts,
        }
