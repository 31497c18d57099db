"""Resumable SSE streams (2025-11-25 Streamable HTTP): the event store and its bounded default.

Every event the HTTP adapter writes on a session's stream (a POST's response stream or the
standalone GET stream) is first given to the store, which keeps it and returns its event id.  A
client whose connection dropped sends ``GET`` with ``Last-Event-ID``; the adapter asks the store
for the events after that id, on that id's stream only, and writes them before the stream's
later events.

Event ids.  ``<tag>.<stream>.<n>``: ``tag`` is random per session (so an id of another session
is recognised as foreign, never read as one of this session's), ``stream`` is the adapter's name
for the stream (``p3``: the session's third POST stream; ``g1``: its first standalone stream;
never a request id, which a client chooses and may reuse), and ``n`` counts the session's
events, over all its streams.  So an id is unique within its session and names its stream, and
ids of two sessions never coincide.

The interface (:class:`EventStore`) is three calls, all synchronous and cheap:

* ``append(session, stream, data) -> event id``: keep one event (``data``: the JSON-RPC message
  as bytes; ``b""`` for a priming event);
* ``replay(session, last_event_id) -> (stream, [(event id, data), ...])``: the events of
  ``last_event_id``'s stream that came after it, oldest first; raises :class:`ReplayRefused`
  when the id is malformed, of another session, names no event of the session, or when an
  event of the session newer than it was dropped (once dropped, the store cannot tell whether
  it was of that stream, and a replay with a hole would lose messages silently);
* ``forget(session)``: the session ended; drop all it kept.

:class:`MemoryEventStore` is the default: in the process's memory, bounded.  What it drops:

* per session, at most ``max_per_session`` events: the session's oldest event is dropped to make
  room (whichever of its streams it belongs to);
* in total, at most ``max_events`` events and ``max_bytes`` bytes of data: the oldest event of
  all sessions is dropped to make room;
* everything of a session on ``forget`` (the session was deleted, expired, or the server
  stopped).

Events are not dropped when their stream ends: the store cannot know whether the client got the
response before its connection dropped.  A resume whose events were dropped is refused rather
than served with a gap.  Nothing is written to disk and nothing survives a restart; a store
shared by several processes (Redis, a database) would implement the same three calls.
"""

from __future__ import annotations

import secrets
from collections import deque
from typing import Protocol

__all__ = ["EventStore", "MemoryEventStore", "ReplayRefused"]


class ReplayRefused(Exception):
    """A ``Last-Event-ID`` the store cannot resume from; the message says why."""


class EventStore(Protocol):
    def append(self, session: str, stream: str, data: bytes) -> str: ...

    def replay(self, session: str, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]]: ...

    def forget(self, session: str) -> None: ...


class _Kept:
    """One session's events.  Events are dropped oldest first (by either bound), so what is
    kept is always every event numbered above ``floor``: one number says what is gone."""

    __slots__ = ("tag", "seq", "streams", "order", "floor")

    def __init__(self) -> None:
        self.tag = secrets.token_hex(4)
        self.seq = 0  # the last event number given out
        self.streams: dict[str, dict[int, bytes]] = {}  # stream -> n -> data (none empty)
        self.order: deque[tuple[str, int]] = deque()  # (stream, n) kept, oldest first
        self.floor = 0  # every event numbered up to this one has been dropped


class MemoryEventStore:
    """The bounded in-memory :class:`EventStore`; the module text says what it drops."""

    def __init__(
        self,
        max_per_session: int = 1000,
        max_events: int = 100_000,
        max_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        if min(max_per_session, max_events, max_bytes) < 1:
            raise ValueError("the event store's bounds must be positive")
        self.max_per_session = max_per_session
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._sessions: dict[str, _Kept] = {}
        self._order: deque[tuple[_Kept, str, int]] = deque()  # every event, oldest first
        self.events = 0  # events kept, over all sessions
        self.bytes = 0  # their data's size

    def _drop(self, k: _Kept, stream: str, n: int) -> bool:
        events = k.streams.get(stream)
        if events is None or n not in events:
            return False  # already dropped (an entry of the global deque outlives its event)
        data = events.pop(n)
        if not events:
            del k.streams[stream]
        k.floor = n
        self.events -= 1
        self.bytes -= len(data)
        return True

    def append(self, session: str, stream: str, data: bytes) -> str:
        k = self._sessions.get(session)
        if k is None:
            k = self._sessions[session] = _Kept()
        n = k.seq = k.seq + 1
        events = k.streams.get(stream)
        if events is None:
            events = k.streams[stream] = {}
        events[n] = data
        order = k.order
        order.append((stream, n))
        self._order.append((k, stream, n))
        self.events += 1
        self.bytes += len(data)
        if len(order) > self.max_per_session:
            # the session's oldest events make room (``_drop``, inline: on a busy session this
            # runs on every append once its bound is reached)
            streams = k.streams
            everyone = self._order
            while len(order) > self.max_per_session:
                s, m = order.popleft()
                kept = streams.get(s)
                if kept is None:
                    continue
                old = kept.pop(m, None)
                if old is None:
                    continue  # already dropped by the bound in total
                if not kept:
                    del streams[s]
                k.floor = m
                self.events -= 1
                self.bytes -= len(old)
                # the oldest of all, when it is this one, leaves the order of all too (so a
                # store of one busy session never has to compact it)
                first = everyone[0]
                if first[0] is k and first[2] == m:
                    everyone.popleft()
        if self.events > self.max_events or self.bytes > self.max_bytes:
            while self.events > self.max_events or self.bytes > self.max_bytes:
                owner, s, m = self._order.popleft()
                if self._drop(owner, s, m):
                    owner.order.popleft()  # the oldest of all is its session's oldest
        if len(self._order) > 2 * self.events + 1024:  # entries of dropped events: compact
            self._order = deque(e for e in self._order if e[2] in e[0].streams.get(e[1], ()))
        return f"{k.tag}.{stream}.{n}"

    def replay(self, session: str, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]]:
        k = self._sessions.get(session)
        tag, _, rest = last_event_id.partition(".")
        stream, _, num = rest.partition(".")
        if not (tag and stream and num.isascii() and num.isdigit()):
            raise ReplayRefused(
                f"Last-Event-ID {last_event_id!r} is not an event id of this server"
            )
        if k is None or tag != k.tag:
            raise ReplayRefused(f"Last-Event-ID {last_event_id!r} is not an event of this session")
        n = int(num)
        if n > k.seq:
            raise ReplayRefused(f"Last-Event-ID {last_event_id!r} names no event of this session")
        if n < k.floor:
            # events after it may have been dropped (whether any was of its stream is not
            # known once dropped): a replay could have a hole
            raise ReplayRefused(
                f"the events after {last_event_id!r} are no longer kept (the event store's "
                f"bounds dropped older events)"
            )
        events = k.streams.get(stream, {})
        if n > k.floor and n not in events:
            raise ReplayRefused(f"Last-Event-ID {last_event_id!r} names no event of this session")
        prefix = f"{k.tag}.{stream}."
        return stream, [(prefix + str(m), d) for m, d in events.items() if m > n]

    def forget(self, session: str) -> None:
        k = self._sessions.pop(session, None)
        if k is None:
            return
        for stream, events in list(k.streams.items()):
            for n in list(events):
                self._drop(k, stream, n)
        k.order.clear()

    def kept(self, session: str) -> int:
        """How many events of ``session`` are kept (for tests and monitoring)."""
        k = self._sessions.get(session)
        return 0 if k is None else sum(len(e) for e in k.streams.values())
