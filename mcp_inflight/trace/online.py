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


@dataclass
class Monitor:
    """Counts: ``events`` seen, ``steps`` checked, ``violations`` (the last ``keep`` of them in
    ``recent``), ``unchecked`` sessions (past the model's bound between two settled points);
    ``max_sessions`` sessions are followed at once (the least recently active is dropped)."""

    requests: int = 3
    ids: int = 3
    max_sessions: int = 4096
    keep: int = 100
    events: int = 0
    violations: int = 0
    unchecked: int = 0
    recent: list[Violation] = field(default_factory=list)
    _sessions: OrderedDict[str, tuple[Online, list[int]]] = field(default_factory=OrderedDict)
    _steps_done: int = 0
    _early: dict[Any, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return self._steps_done + sum(o.steps for o, _ in self._sessions.values())

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
        got = self._sessions.get(sid)
        if got is None:
            got = self._sessions[sid] = (Online(self.requests, self.ids), [0])
            if len(self._sessions) > self.max_sessions:
                _, (old, _) = self._sessions.popitem(last=False)
                self._steps_done += old.steps
        else:
            self._sessions.move_to_end(sid)
        online, count = got
        was = online.unchecked
        bad = online.feed(count[0], ev)
        count[0] += 1
        if online.unchecked and not was:
            self.unchecked += 1
            log.warning("session %s: past the online check's bound, no longer checked", sid)
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
            self._steps_done += online.steps
            self._sessions.pop(sid, None)

    def summary(self) -> dict[str, int]:
        return {
            "events": self.events,
            "steps": self.steps,
            "violations": self.violations,
            "unchecked_sessions": self.unchecked,
        }
