"""One worker's part of a session shared through Redis (:mod:`.redis_http`): its view of the
session (:class:`RedisSession`), the POST streams it keeps in Redis (:class:`KeptOutlet`), and
the resumption of a kept stream from its ``Last-Event-ID`` on any worker (:func:`resume_kept`).

Apart from :class:`~.redis_http.RedisSessions` (the worker's store: claims, renewals, routing
between workers) because these are the session's and its streams' side of the protocol: each
step here reads one session and one stream, and reaches the worker only through the few
methods of ``shared`` it names (``store``, ``worker``, ``spawn``, ``release``, ``lease_lost``,
``lease_lost_by``, ``hold``, ``store_errors``: the store's failures, whose classes only that
module imports), typed loosely since that module imports this one.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sys
from collections.abc import Callable
from typing import Any

from . import sse
from .asgi_types import Receive, Send
from .core import Handle
from .messages import INTERNAL_ERROR, INVALID_REQUEST, encode_message, error, error_reply
from .redis_store import Claimed
from .server import Arrival, Outlet, RequestFailed, Running, Server
from .streams import (
    MEASURE_AFTER,
    SSE_HEADERS,
    HttpSession,
    StreamOutlet,
    attached,
    error_response,
)

__all__ = [
    "LEASE_LOST",
    "KeptOutlet",
    "RedisSession",
    "resume_kept",
    "taken_over",
    "say",
    "shown",
    "WORKER_NAME",
]

LEASE_LOST = "lease lost"


def say(text: str) -> None:
    """One line on stderr in one write (several workers share it: lines never interleave)."""
    try:
        os.write(sys.stderr.fileno(), f"mcp-inflight serve: {text}\n".encode())
    except (OSError, ValueError):
        pass


def shown(value: Any, limit: int = 80) -> str:
    """A value from the wire as it may appear in a log line: JSON-escaped (no line breaks, no
    control characters) and cut to ``limit`` characters."""
    text = json.dumps(value if isinstance(value, (str, int, float, bool)) else str(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: a worker's name as :meth:`RedisSessions.start` makes it (the process id and 6 hex digits)
WORKER_NAME = re.compile(r"[0-9]{1,10}-[0-9a-f]{6}")
#: the largest event number a ``Last-Event-ID`` may carry (a Redis stream entry's sequence)
MAX_EVENT = 2**63 - 1


def _unused(stream: str, data: bytes) -> str:  # pragma: no cover - KeptOutlet keeps itself
    raise AssertionError("a kept outlet stores its events itself")


class KeptOutlet(StreamOutlet):
    """A resumable POST stream whose events are kept in Redis: each event is appended with a
    checked ``write`` (pipelined with the others pending) and written on the connection only
    once the store has it, so any worker can replay it from its id.  A write refused is a lost
    lease.  The events confirmed are also kept here, for a resume on this worker."""

    __slots__ = (
        "session",
        "n",
        "queue",
        "flushing",
        "confirmed",
        "claim",
        "drained",
        "retry",
        "unkept",
        "reader",
    )

    def __init__(self, session: RedisSession, stream: str) -> None:
        super().__init__(_unused, stream, session.live)
        self.session = session
        self.n = 0
        self.queue: list[tuple[int, bytes]] = []
        self.flushing = False
        self.confirmed: list[tuple[int, bytes]] = []  # (n, the encoded event)
        self.claim: Claimed | None = None
        self.drained = asyncio.Event()
        self.drained.set()
        self.retry: int | None = None
        self.unkept = False  # over the session's event budget: written live, no longer kept
        self.reader: str | None = None  # the resume reading it here (its name in the store)

    def _event(self, n: int, data: bytes) -> bytes:
        retry = self.retry if n == 1 else None
        return sse.encode(data, id=f"{self.stream}.{n}", retry=retry)

    def prime(self, retry_ms: int) -> None:
        """The priming event goes out at once; it is kept with the stream's next event (so a
        request answered without events costs no round trip more), and a resume from it waits
        for the stream's events."""
        self.retry = retry_ms
        self.n += 1
        self.queue.append((self.n, b""))
        ev = self._event(self.n, b"")
        self.confirmed.append((self.n, ev))
        self.items.insert(0, ev)
        self.wake_writer()

    def send(self, msg: Any) -> None:
        if self.broken or self.done:
            return
        data = encode_message(msg)
        if data is not None:
            self._queue(data)

    def local(self, msg: Any) -> None:
        """A message written on this connection only, not kept (an error of this worker's)."""
        data = encode_message(msg)
        if data is not None:
            self.local_data(data)

    def local_data(self, data: bytes) -> None:
        if self.owner is not None:
            self.items.append(sse.encode(data))
            if len(self.items) > MEASURE_AFTER and self.limit is not None:
                self.measure()
            self.wake_writer()

    def over_budget(self, batch: list[tuple[int, bytes]]) -> None:
        """The session's event budget is spent: this stream's events are written live from
        now on, no longer kept (a resume from here is refused as not kept)."""
        if not self.unkept:
            self.unkept = True
            say(
                f"worker {self.session.shared.worker}: the event streams of session "
                f"{self.session.sid[:8]}... are over their budget; a stream goes on unkept"
            )
        for _, data in batch:
            if data:
                self.local_data(data)

    def _queue(self, data: bytes) -> None:
        if self.unkept:
            self.local_data(data)
            return
        self.n += 1
        self.queue.append((self.n, data))
        if not self.flushing and self.claim is not None:
            self.flushing = True
            self.drained.clear()
            self.session.shared.spawn(self._flush())

    def _deliver(self, n: int, data: bytes) -> None:
        if n == 1:  # the priming event: already out
            return
        ev = self._event(n, data)
        self.confirmed.append((n, ev))
        if self.owner is not None:
            self.items.append(ev)
            if len(self.items) > MEASURE_AFTER and self.limit is not None:
                self.measure()
            self.wake_writer()

    async def _flush(self) -> None:
        app = self.session.shared
        try:
            while self.queue and self.claim is not None:
                batch, self.queue = self.queue, []
                try:
                    ok = await app.store.append(self.claim, self.stream, batch)
                except app.store_errors() as e:
                    app.store.counters.errors += 1
                    self.queue = []
                    app.lease_lost_by(self, f"the store failed: {e}")
                    return
                if ok == -3:
                    self.queue, rest = [], self.queue
                    self.over_budget(batch + rest)
                    return
                if not ok:
                    self.queue = []
                    app.lease_lost_by(self, "write refused")
                    return
                for n, data in batch:
                    self._deliver(n, data)
        finally:
            self.flushing = False
            self.drained.set()

    async def final(self, reply: Any, c: Claimed) -> str | None:
        """The response: kept as the stream's last event and the claim released, in one round
        trip, then written; None, or why not (the POST then gets that error)."""
        await self.drained.wait()
        data = encode_message(reply)
        if data is None:
            return await self.session.shared.release(c)
        self.n += 1
        store = self.session.shared.store
        pending, self.queue = self.queue, []  # the priming event, when nothing came before
        try:
            wrote, released = await store.final(c, self.stream, self.n, data, pending)
        except self.session.shared.store_errors() as e:
            store.counters.errors += 1
            return f"the session store is unreachable: {e}"
        if wrote == -3:  # the response goes out live, not kept
            self.over_budget([*pending, (self.n, data)])
            return None
        if not wrote:
            return f"{LEASE_LOST} (the response was refused by the store)"
        self._deliver(self.n, data)
        if not released:  # pragma: no cover - a lease lost between the two steps of one script
            return None
        return None


class RedisSession(HttpSession):
    """This worker's view of a session shared through Redis."""

    def __init__(self, server: Server, sid: str, shared: Any) -> None:
        super().__init__(server, sid, None)
        self.shared = shared
        self.claims: dict[Handle, Claimed] = {}
        self.lost: set[Handle] = set()
        self.pending_claim: Claimed | None = None
        self.task_owner = sid  # a 2025-11-25 task is bound to its session, on every worker

    def next_stream(self) -> str:
        """The name of the next POST stream :meth:`outlet` makes."""
        return f"{self.shared.worker}~p{self._streams + 1}"

    def outlet(self) -> StreamOutlet:
        """A new POST stream: kept in Redis when the app keeps streams."""
        if not self.shared.resumable:
            return StreamOutlet()
        self._streams += 1
        return KeptOutlet(self, f"{self.shared.worker}~p{self._streams}")

    def request(self, msg: dict[str, Any], outlet: Outlet) -> Arrival:
        arrival = super().request(msg, outlet)
        c, self.pending_claim = self.pending_claim, None
        if type(arrival) is Running and c is not None:
            self.claims[arrival.handle] = c
            self.shared.hold(self, arrival.handle, c)
            if isinstance(outlet, KeptOutlet):
                outlet.claim = c
        return arrival

    async def _announce(
        self, handle: Any, sid: Any, method: str
    ) -> tuple[Any, Callable[[], None] | None]:
        """The waiter is recorded under the lease before the request goes out (an answer may
        come to another worker), and its wire id names this worker."""
        store = self.shared.store
        c = self.claims.get(handle)
        waiter = store.waiter_key(self.sid, sid)
        if c is not None:
            try:
                ok = await store.write(c, "set", waiter, self.shared.worker, store.lease_ms)
            except self.shared.store_errors() as e:
                raise RequestFailed(error(INTERNAL_ERROR, f"{method} not sent: {e}")) from None
            if not ok:
                self.core.withdraw(handle, sid)
                self.shared.lease_lost(self, handle, "write refused")
                raise RequestFailed(error(INTERNAL_ERROR, f"{method} not sent: {LEASE_LOST}"))
        wire = f"{self.shared.worker}/{sid}"
        if c is None:
            return wire, None
        return wire, lambda: self.shared.spawn(self.shared.forget_key(waiter))

    def _done(self, h: Any, reply: Any) -> None:
        c = self.claims.pop(h, None)
        if c is None:  # pragma: no cover - every running request here holds a claim
            return super()._done(h, reply)
        self.tasks.pop(h, None)
        self.shared.unhold(c)
        target = self.core.finish(h)
        self.shared.spawn(self._finish(h, target, reply, c))

    async def _finish(self, h: Any, target: Any, reply: Any, c: Claimed) -> None:
        """Release the claim, then write the response (or, the lease lost, an error)."""
        out = h.data
        kept = isinstance(out, KeptOutlet)
        try:
            if h in self.lost:
                why: str | None = LEASE_LOST
            elif kept and target is not None and reply is not None:
                why = await out.final(reply, c)
            else:
                why = await self.shared.release(c)
                if why is None and target is not None and reply is not None:
                    target.data.send(reply)
            if why is not None:
                message = error_reply(h.id, error(INTERNAL_ERROR, why))
                out.local(message) if kept else out.send(message)
        finally:
            self.lost.discard(h)
            h.data.close()
            if self.on_idle is not None and self.idle():
                self.on_idle(self)


async def taken_over(shared: Any, s: RedisSession, local: KeptOutlet) -> None:
    """A resume on another worker reads ``local`` now: the connection writing it here ends,
    unless it is itself a newer resume."""
    try:
        current = await shared.store.current_reader(s.sid, local.stream)
    except shared.store_errors():
        return
    if current is not None and current != local.reader and local.owner is not None:
        local.owner = None
        local.take()
        local.wake_writer()


async def resume_kept(
    shared: Any, session: RedisSession, last: str, receive: Receive, send: Send
) -> Any:
    """GET with ``Last-Event-ID`` on any worker: the events after it, from this worker's
    memory when the stream runs here (this connection takes it over), else from Redis,
    then its later events as the owner appends them, until its last one."""
    stream, _, num = last.rpartition(".")
    worker, _, k = stream.rpartition("~p")
    if (
        WORKER_NAME.fullmatch(worker) is None
        or not (k.isascii() and k.isdigit() and len(k) <= 19)
        or not (num.isascii() and num.isdigit() and len(num) <= 19)
        or int(num) > MAX_EVENT
    ):
        return await error_response(
            send,
            400,
            INVALID_REQUEST,
            f"Bad Request: {shown(last)} is not an event id here",
        )
    n = int(num)
    local = session.live.get(stream)
    reader = secrets.token_hex(8)
    await shared.store.take_stream(session.sid, stream, reader)
    if isinstance(local, KeptOutlet) and not local.done:
        first = b"".join(ev for m, ev in local.confirmed if m > n)
        token = object()
        local.reader = reader
        previous, local.owner = local.owner, token
        attached(local)
        local.take()
        if previous is not None:
            local.wake_writer()
            local.wake = None
        return await shared.app.pump(session, None, local, token, receive, send, SSE_HEADERS, first)
    entries = await shared.store.replay(session.sid, stream, n)
    if entries is None and n == 1 and await shared.store.stream_known(session.sid, stream):
        if await shared.store.listening(worker):
            entries = []  # nothing kept yet after its priming event: follow it
    if entries is None or (entries and entries[0][0] != n + 1):
        return await error_response(
            send,
            400,
            INVALID_REQUEST,
            f"Bad Request: the events after {last!r} are not kept (not an event of this "
            "session, or its stream is gone)",
        )
    # the stream runs on its worker: a connection reading it there stops (newest reader)
    await shared.store.publish(
        worker, {"k": "takeover", "s": session.sid, "stream": stream, "reader": reader}
    )
    gone = asyncio.Event()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        quiet = 0.0
        while True:
            if entries:
                quiet = 0.0
                body = b"".join(sse.encode(d, id=f"{stream}.{m}") for m, d, _ in entries if m > 1)
                await send({"type": "http.response.body", "body": body, "more_body": True})
                n = entries[-1][0]
                if entries[-1][2]:
                    break
            if gone.is_set():
                return
            if quiet > shared.lease_ms / 1000 and not await shared.store.listening(worker):
                break  # its worker is gone: no more events will come
            entries = await shared.store.tail(session.sid, stream, n, 500)
            quiet += 0.5 if not entries else 0.0
            if not await shared.store.still_reading(session.sid, stream, reader):
                break  # a newer resume reads the stream now
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        watcher.cancel()
