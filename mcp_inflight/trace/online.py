"""The online check: the replay's check of the model, run on a server's own events as they happen.

A :class:`Monitor` is a sink for the events of :mod:`mcp_inflight.trace.tap`: it keeps one
:class:`~mcp_inflight.model.observe.Online` per session (the events of a POST sent before its
session existed, ``initialize``, join the session its answer names; 2026-07-28 traffic, with no
session, is not checked), counts the events, the observed
steps and the violations, and logs each violation on the logger ``mcp_inflight.trace`` with the
event that no move of the ``atomic`` design explains.  Off by default (``serve
--online-check``, ``guard(app, online=True)``).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..model.observe import Observed, Online

log = logging.getLogger("mcp_inflight.trace")


@dataclass
class Violation:
    """One step the model does not explain: the session, the observed step and its event."""

    session: str
    step: Observed
    event: dict[str, Any]


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


class _Session:
    """One session's check, split by JSON-RPC id: the events of each id's tool calls (its
    POSTs, their progress tokens, cancels naming it, responses carrying it) go to an
    :class:`Online` of their own; everything else of the session (``""``) to one more.  On
    ``atomic`` requests under different ids share no registry entry (``owned_removal``,
    ``no_misrouted_*``), so each id's part is a run of the model by itself, and a message that
    crosses ids shows up in the part it names as a message on no instance's stream."""

    def __init__(self, requests: int, ids: int) -> None:
        self.requests, self.ids = requests, ids
        self.parts: dict[str, tuple[Online, list[int]]] = {}
        self.post_key: dict[Any, str] = {}
        self.token_key: dict[str, str] = {}
        self.done_steps = 0

    @property
    def steps(self) -> int:
        return self.done_steps + sum(o.steps for o, _ in self.parts.values())

    def route(self, ev: dict[str, Any]) -> str:
        ex, m = ev.get("exchange"), ev.get("message")
        if not isinstance(m, dict):
            return self.post_key.get(ex, "")
        params = m.get("params") if isinstance(m.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        if ev.get("dir") == "client->server":
            if m.get("method") == "tools/call" and "id" in m:
                k = self.post_key[ex] = _key(m["id"])
                if "progressToken" in meta:
                    self.token_key[_key(meta["progressToken"])] = k
                return k
            if m.get("method") == "notifications/cancelled":
                k = _key(params.get("requestId"))
                return k if k in self.parts else ""
            if "id" in m:
                self.post_key.setdefault(ex, "")
            return self.post_key.get(ex, "")
        if "method" not in m and "id" in m:  # a response: its POST's part, or its id's
            k, own = _key(m["id"]), self.post_key.get(ex)
            if own == "" or (own is not None and (k == own or k not in self.parts)):
                return own
            return k if k in self.parts else ""
        elif "progressToken" in params:
            k = self.token_key.get(_key(params["progressToken"]), "")
            if k:
                return k
        return self.post_key.get(ex, "")

    def feed(self, ev: dict[str, Any]) -> tuple[Online, Observed | None, bool]:
        """The part the event went to, the step it does not explain, and whether that part
        went past its bound with this event."""
        k = self.route(ev)
        got = self.parts.get(k)
        if got is None:
            got = self.parts[k] = (Online(self.requests, self.ids), [0])
        online, count = got
        was = online.unchecked
        bad = online.feed(count[0], ev)
        count[0] += 1
        if k and online.idle and not online.unchecked:  # an id at rest: its part goes
            self.done_steps += online.steps
            del self.parts[k]
            self.post_key = {e: v for e, v in self.post_key.items() if v != k}
            self.token_key = {t: v for t, v in self.token_key.items() if v != k}
        return online, bad, online.unchecked and not was


@dataclass
class Monitor:
    """Counts: ``events`` seen, ``steps`` checked, ``violations`` (the last ``keep`` of them in
    ``recent``), ``unchecked`` parts (one id of one session past the model's bound between two
    settled points: more than ``requests`` calls under one id); ``max_sessions`` sessions are
    followed at once (the least recently active is dropped)."""

    requests: int = 3
    ids: int = 1
    max_sessions: int = 4096
    keep: int = 100
    events: int = 0
    violations: int = 0
    unchecked: int = 0
    recent: list[Violation] = field(default_factory=list)
    _sessions: OrderedDict[str, _Session] = field(default_factory=OrderedDict)
    _steps_done: int = 0
    _early: dict[Any, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return self._steps_done + sum(s.steps for s in self._sessions.values())

    def feed(self, ev: dict[str, Any]) -> None:
        self.events += 1
        sid = ev.get("session")
        ex = ev.get("exchange")
        if sid is None:  # before the server named the session (initialize): held for it
            if ev.get("kind") == "close":
                self._early.pop(ex, None)
            elif len(self._early) < self.max_sessions:
                self._early.setdefault(ex, []).append(ev)
            return
        for e in self._early.pop(ex, ()):
            self._check(sid, e)
        self._check(sid, ev)

    def _check(self, sid: str, ev: dict[str, Any]) -> None:
        session = self._sessions.get(sid)
        if session is None:
            session = self._sessions[sid] = _Session(self.requests, self.ids)
            if len(self._sessions) > self.max_sessions:
                _, old = self._sessions.popitem(last=False)
                self._steps_done += old.steps
        else:
            self._sessions.move_to_end(sid)
        _, bad, past = session.feed(ev)
        if past:
            self.unchecked += 1
            log.warning("session %s: past the online check's bound, partly unchecked", sid)
        if bad is not None:
            self.violations += 1
            self.recent.append(Violation(sid, bad, ev))
            del self.recent[: -self.keep]
            log.warning(
                "session %s: no move of the atomic design explains %s: %s",
                sid,
                bad.describe(),
                ev,
            )
        if ev.get("exchange") == "DELETE" and ev.get("kind") == "close":
            self._steps_done += session.steps
            self._sessions.pop(sid, None)

    def summary(self) -> dict[str, int]:
        return {
            "events": self.events,
            "steps": self.steps,
            "violations": self.violations,
            "unchecked_parts": self.unchecked,
        }
