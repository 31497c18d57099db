"""Streamable HTTP on several worker processes that share one Redis (the lease protocol).

``create_app(server, redis="redis://host:port/0")`` (:class:`~.http.App` with a
:class:`RedisSessions` store) is the app of one worker; run as many as you like behind one port (``mcp-inflight serve --workers N --redis URL``,
or ``uvicorn --workers N``).  A 2025-11-25 session is usable from any worker; 2026-07-28 stays
stateless (each POST its own scope, nothing in Redis).

Where things live.  The session record, the in-flight claims, the waiters and the fencing
counter are in Redis (:mod:`.redis_store`, every key under the session's hash tag).  Each
worker keeps a local view of the sessions it has served: a :class:`~.server.Session` whose core
(:class:`~.core.SessionCore`, the model's ``atomic`` actions) holds the requests that run *on
this worker*, and the POST streams of those requests, which stay on the worker that runs them.

One request (2025-11-25) on a worker ``w``:

1. ``claim(w, I)`` in Redis (one script, one round trip): refused if the session has ended
   (404) or ``I`` is claimed anywhere (409, JSON-RPC -32600, before any stream is registered);
   else a fencing token.  A request answered at once (``ping``, ``tools/list``...) is admitted
   and finished in one step: the script only checks, and holds nothing.
2. The local core admits it (its registries are this worker's part of the session's).
3. While the handler runs, a background task renews every claim the worker holds, every third
   of the lease, all in one pipelined round trip.  A renewal refused (the claim expired and
   another request took the id) or impossible for a whole lease (the store unreachable) is a
   lost lease: the handler is cancelled and its POST ends with a JSON-RPC error.
4. A server-to-client request registers its waiter with ``write`` (checked against the token:
   a stale owner never asks the client anything); its id names the worker (``<worker>/<id>``),
   so an answer that arrives at another worker is published to this one.
5. The handler ends: the local core's ``finish`` (the model's ``respond``), then
   ``release(w, I, tok)`` (compare-and-delete), then the response is written on the POST.  The
   release comes before the client can read the response, so a client that reuses the id at
   once is never refused by a claim not yet released; a release refused means the lease was
   lost, and the POST gets an error instead of the response.

Messages for a request that runs elsewhere: ``notifications/cancelled`` goes through the
``route`` script (it publishes to the claim's holder, with the claim's value, and the holder
cancels only if its request under that id holds that token); an answer goes to the worker named
in its id; DELETE runs ``end`` and tells every worker, each cancelling its handlers of the
session.  Routing is Redis pub/sub (why: :mod:`.redis_store`).

Resumable streams (``resumable=True``, the default).  A running request's POST stream is kept
in Redis: a Redis stream per POST stream (``mcpi:{S}:events:<worker>~p<n>``, entries ``0-<n>``),
each event appended with a checked ``write`` (pending ones pipelined together) and written on
the connection only once Redis has it; the response is appended with the stream's end mark and
the claim released in one round trip.  Event ids are ``<worker>~p<n>.<k>``: they name the stream
and its worker, never a request id.  A dropped connection detaches the stream (the handler goes
on); ``GET`` with ``Last-Event-ID`` on the worker that runs it replays from memory and takes the
stream over, on any other worker replays from Redis and then follows the stream (``XREAD``)
until its end mark, or until its worker has been silent for a lease and no longer listens.
The session's end deletes its streams; each also expires with the session's idle timeout.

Tasks (2025-11-25 and the 2026-07-28 extension): kept in Redis (:mod:`.redis_tasks`), the
work on the worker that created the task, under a lease of its own; the task methods answered
from Redis on any worker (:mod:`.redis_task_link`; 2026-07-28 through :meth:`shared_reply`).
No response starts before the task moves made so far are in Redis (:meth:`RedisSessions.wrap`).

Not shared: the standalone GET stream (one per worker and session); ``logging/setLevel``
reaches the other workers' views by a published message (a view made later reads the record).

A rule the core lacks.  The core is one process's view; across workers the admission rule is
the store's ``claim`` and the end of a request its ``release``, exactly the lease protocol's
operations: this module adds no lifecycle rule of its own beyond them.

Why one module of this length: the steps above share one worker's state (its sessions' views,
its held claims, its detached streams) and each step's failure path is another's (a lost lease
cancels a handler whose stream may be detached and whose waiters were routed here); the store's
side is :mod:`.redis_store`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Callable
from typing import Any

from . import sse
from .asgi_types import ASGIApp, Receive, Send
from .core import Handle, InvalidId, typed_id
from .http_checks import Headers
from .messages import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY,
    dumps,
    encode_message,
    error,
    error_reply,
)
from .redis_store import BROADCAST, Claimed, RedisStore
from .redis_task_link import SHARED_METHODS, SHARED_METHODS_2026, Mirror, answer, answer_2026
from .redis_tasks import RedisTasks
from .request_state import StateRefused, call_binding
from .server import Answered, Arrival, Outlet, Refused, RequestFailed, Running, Server
from .stores import Host, SessionLookup
from .streams import (
    MEASURE_AFTER,
    SERVER_BUSY,
    SSE_HEADERS,
    HttpSession,
    StreamOutlet,
    attached,
    error_response,
    reply,
)

__all__ = ["LEASE_LOST", "RedisSessions"]

LEASE_LOST = "lease lost"
_WORKER_HEADER = b"mcp-inflight-worker"


def _say(text: str) -> None:
    """One line on stderr in one write (several workers share it: lines never interleave)."""
    try:
        os.write(sys.stderr.fileno(), f"mcp-inflight serve: {text}\n".encode())
    except (OSError, ValueError):
        pass


def _shown(value: Any, limit: int = 80) -> str:
    """A value from the wire as it may appear in a log line: JSON-escaped (no line breaks, no
    control characters) and cut to ``limit`` characters."""
    text = json.dumps(value if isinstance(value, (str, int, float, bool)) else str(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: a worker's name as :meth:`RedisSessions.start` makes it (the process id and 6 hex digits)
_WORKER_NAME = re.compile(r"[0-9]{1,10}-[0-9a-f]{6}")
#: the largest event number a ``Last-Event-ID`` may carry (a Redis stream entry's sequence)
_MAX_EVENT = 2**63 - 1


def _store_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisError

    return (RedisError, OSError)


def _unused(stream: str, data: bytes) -> str:  # pragma: no cover - _KeptOutlet keeps itself
    raise AssertionError("a kept outlet stores its events itself")


class _KeptOutlet(StreamOutlet):
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

    def __init__(self, session: _RedisSession, stream: str) -> None:
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
            _say(
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
                except _store_errors() as e:
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
        except _store_errors() as e:
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


class _RedisSession(HttpSession):
    """This worker's view of a session shared through Redis."""

    def __init__(self, server: Server, sid: str, shared: RedisSessions) -> None:
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
        return _KeptOutlet(self, f"{self.shared.worker}~p{self._streams}")

    def request(self, msg: dict[str, Any], outlet: Outlet) -> Arrival:
        arrival = super().request(msg, outlet)
        c, self.pending_claim = self.pending_claim, None
        if type(arrival) is Running and c is not None:
            self.claims[arrival.handle] = c
            self.shared.hold(self, arrival.handle, c)
            if isinstance(outlet, _KeptOutlet):
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
            except _store_errors() as e:
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
        kept = isinstance(out, _KeptOutlet)
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


class RedisSessions:
    """One worker's session store over a shared Redis (see the module text): a
    :class:`.stores.SessionStore` for :class:`~.http.App`.

    ``redis``: the store's URL; ``lease_ms``: the claims' lease (renewed every third of it);
    ``resumable``: POST streams kept in Redis; ``store_timeout``: the bound on one call of the
    store; ``max_event_bytes``: a session's kept events, at most.  The app's ``event_store`` is
    not used (the streams are kept in Redis)."""

    #: the options of :func:`~.http.create_app` that are this store's
    OPTIONS = ("lease_ms", "resumable", "store_timeout", "max_event_bytes")

    app: Host

    def __init__(
        self,
        redis: str,
        *,
        lease_ms: int = 10_000,
        resumable: bool = True,
        store_timeout: float | None = 2.0,
        max_event_bytes: int | None = 16 * 1024 * 1024,
    ) -> None:
        self.store_timeout = store_timeout
        self.max_event_bytes = max_event_bytes
        self.redis_url = redis
        self.lease_ms = lease_ms
        self.resumable = resumable
        self.worker = ""
        self.store: RedisStore = None  # type: ignore[assignment]  # made at startup
        self.held: dict[tuple[str, Any], tuple[_RedisSession, Handle, Claimed]] = {}
        self.lost_leases = 0
        self._last_ok: dict[tuple[str, Any], float] = {}
        self._tasks: set[asyncio.Task] = set()
        self._renewer: asyncio.Task | None = None
        self._listener: asyncio.Task | None = None
        self.mirror: Mirror | None = None

    @classmethod
    def from_options(cls, redis: str, options: dict[str, Any]) -> RedisSessions:
        """The store for ``create_app(redis=...)``: takes its own keywords out of ``options``
        (and the app's event store, which a worker does not use)."""
        mine = {k: options.pop(k) for k in cls.OPTIONS if k in options}
        options["event_store"] = None
        return cls(redis, **mine)

    def attach(self, app: Host) -> None:
        self.app = app
        app.event_store = None  # the streams are kept in Redis

    # --- start and stop -------------------------------------------------------------------
    async def start(self) -> None:
        """Connect to the store (at the ASGI lifespan's startup, in the worker's process)."""
        try:
            await self._connect()
        except Exception as e:
            raise RuntimeError(f"cannot reach the session store at {self.redis_url}: {e}") from e
        _say(f"worker {self.worker} ready")

    async def _connect(self) -> None:
        self.worker = f"{os.getpid()}-{secrets.token_hex(3)}"
        ttl = int(self.app.session_idle_timeout * 1000) if self.app.session_idle_timeout else None
        self.store = RedisStore(
            self.redis_url,
            self.worker,
            self.lease_ms,
            ttl,
            max_in_flight=self.app.max_in_flight,
            max_sessions=self.app.max_sessions,
            call_timeout=self.store_timeout,
            max_event_bytes=self.max_event_bytes,
        )
        await self.store.load()
        self._pubsub = self.store.redis.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(self.store.channel, BROADCAST)
        self._listener = asyncio.get_running_loop().create_task(self._listen())
        self._renewer = asyncio.get_running_loop().create_task(self._renew_loop())
        server = self.app.server
        tasks = RedisTasks(self.store, server.max_task_ttl_ms, self.lease_ms)
        self.mirror = Mirror(tasks, server.task_runtime)
        self.mirror.start()

    async def stop(self) -> None:
        for s in list(self.app.sessions.values()):
            self.app.end_session(s)
        c = self.store.counters
        stats = {"round_trips": c.round_trips, "ops": c.by_op, "refused": c.refused}
        stats.update(errors=c.errors, lost_leases=self.lost_leases)
        _say(f"worker {self.worker} stopping: store {json.dumps(stats, sort_keys=True)}")
        for t in (self._renewer, self._listener):
            if t is not None:
                t.cancel()
        if self.mirror is not None:
            self.mirror.stop()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2)
        try:
            await self._pubsub.aclose()
            await self.store.close()
        except Exception:  # noqa: BLE001 - stopping: the store may be gone already
            pass

    def spawn(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def forget_key(self, key: str) -> None:
        try:
            await self.store.redis.delete(key)
        except _store_errors():
            pass  # it expires with the lease

    # --- leases ----------------------------------------------------------------------------
    def hold(self, session: _RedisSession, h: Handle, c: Claimed) -> None:
        self.held[(c.session, c.key)] = (session, h, c)
        self._last_ok[(c.session, c.key)] = time.monotonic()

    def unhold(self, c: Claimed) -> None:
        self.held.pop((c.session, c.key), None)
        self._last_ok.pop((c.session, c.key), None)

    def lease_lost(self, session: _RedisSession, h: Handle, why: str) -> None:
        """The worker no longer owns ``h``'s claim: stop its handler; its POST gets an error."""
        if h in session.lost or h not in session.claims:
            return
        self.lost_leases += 1
        session.lost.add(h)
        observer = getattr(self.app.server, "observer", None)
        if observer is not None:  # the lifecycle observer hook (e.g. mcp_inflight.otel)
            observer.lease_lost(session.sid, session.core, h, why, self.worker)
        _say(
            f"worker {self.worker}: {LEASE_LOST} for id {_shown(h.id)} of session "
            f"{session.sid[:8]}... ({_shown(why, 200)})"
        )
        session._cancel_handler(h)

    def lease_lost_by(self, outlet: _KeptOutlet, why: str) -> None:
        s = outlet.session
        for h, c in list(s.claims.items()):
            if c is outlet.claim:
                self.lease_lost(s, h, why)

    async def _renew_loop(self) -> None:
        period = self.lease_ms / 3000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(period)
            if self.app.max_sessions is not None:
                t = loop.time()
                used = [
                    s.sid
                    for s in self.app.sessions.values()
                    if t - s.seen < 2 * period or not s.idle() or s.standalone is not None
                ]
                try:
                    await self.store.touch_sessions(used)
                except _store_errors():
                    self.store.counters.errors += 1
            entries = list(self.held.items())
            if not entries:
                continue
            now = time.monotonic()
            try:
                oks = await self.store.renew_all([c for _, (_, _, c) in entries])
            except _store_errors():
                self.store.counters.errors += 1
                for k, (s, h, _) in entries:
                    if now - self._last_ok.get(k, now) > self.lease_ms / 1000:
                        self.lease_lost(s, h, "the store was unreachable for a whole lease")
                continue
            for (k, (s, h, _)), ok in zip(entries, oks, strict=True):
                if ok:
                    if k in self._last_ok:
                        self._last_ok[k] = now
                elif self.held.get(k, (None, h))[1] is h:
                    self.lease_lost(s, h, "renewal refused")

    async def release(self, c: Claimed) -> str | None:
        """``release``; None when released, else why not (the POST then gets that error)."""
        try:
            if await self.store.release(c):
                return None
            return f"{LEASE_LOST} (the claim is no longer this request's)"
        except _store_errors() as e:
            self.store.counters.errors += 1
            return f"the session store is unreachable: {e}"

    # --- messages from other workers ---------------------------------------------------------
    async def _listen(self) -> None:
        while True:
            try:
                m = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the store went away: try again
                await asyncio.sleep(0.2)
                continue
            if m is None or m.get("type") != "message":
                continue
            try:
                self._deliver(m["data"])
            except Exception as e:  # noqa: BLE001 - one bad message must not stop the rest
                _say(f"worker {self.worker}: bad routed message: {_shown(repr(e), 200)}")

    def _deliver(self, data: bytes) -> None:
        claim = None
        if not data.startswith(b"{"):  # "<claim value>|<message>" from the route script
            head, _, data = data.partition(b"|")
            claim = head.decode()
        m = json.loads(data)
        if "task_cancel" in m and self.mirror is not None:  # from a task script (redis_tasks)
            return self.mirror.cancelled(m["task_cancel"], m["token"])
        if "task_update" in m and self.mirror is not None:
            return self.mirror.updated(m["task_update"], m["token"], m["responses"])
        s = self.app.sessions.get(m.get("s"))
        if s is None or not isinstance(s, _RedisSession):
            return
        kind = m.get("k")
        if kind == "end":
            self.app.end_session(s)
        elif kind == "level":
            s.log_level = m.get("level", s.log_level)
        elif kind == "answer":
            s.response(m["msg"])
        elif kind == "takeover":
            local = s.live.get(m.get("stream"))
            if isinstance(local, _KeptOutlet) and not local.done and local.owner is not None:
                self.spawn(self._taken_over(s, local))
        elif kind == "cancel":
            h = s.core.in_flight(m["id"])
            c = s.claims.get(h) if h is not None else None
            if c is not None and c.value == claim:  # the instance the claim named, no other
                s.notification(m["msg"])

    async def _taken_over(self, s: _RedisSession, local: _KeptOutlet) -> None:
        """A resume on another worker reads ``local`` now: the connection writing it here ends,
        unless it is itself a newer resume."""
        try:
            current = await self.store.current_reader(s.sid, local.stream)
        except _store_errors():
            return
        if current is not None and current != local.reader and local.owner is not None:
            local.owner = None
            local.take()
            local.wake_writer()

    # --- sessions ----------------------------------------------------------------------------
    async def find(self, headers: Headers) -> SessionLookup:
        """The local view of the request's session, made from the record when this worker has
        none: (session, None) or (None, (status, message))."""
        sid = headers.get(b"mcp-session-id")
        if sid is None:
            return None, (400, "Bad Request: Mcp-Session-Id header is required")
        name = sid.decode("latin-1")
        s = self.app.sessions.get(name)
        if s is not None:
            s.seen = asyncio.get_running_loop().time()
            return s, None
        record = await self.store.get_session(name)
        if record is None:
            return None, (404, "Session not found")
        s = self.app.sessions.get(name)  # made meanwhile by another request
        if s is None:
            s = _RedisSession(self.app.server, name, self)
            s.client_capabilities = record.get("capabilities")
            s.log_level = record.get("log_level", s.log_level)
            self.app.sessions[name] = s
        s.seen = asyncio.get_running_loop().time()
        return s, None

    def wrap(self, inner: ASGIApp) -> ASGIApp:
        """Each exchange names this worker in a response header; a store that fails before the
        response started is 503."""

        async def exchange(scope: dict[str, Any], receive: Receive, send: Send) -> None:
            if not self.worker:
                return await inner(scope, receive, send)
            tag = (_WORKER_HEADER, self.worker.encode())
            started = False

            async def tagged(m: dict[str, Any]) -> None:
                nonlocal started
                if m["type"] == "http.response.start":
                    if self.mirror is not None:  # a task it names is readable on every worker
                        await self.mirror.drain()
                    started = True
                    m = {**m, "headers": [*m.get("headers", ()), tag]}
                await send(m)

            try:
                return await inner(scope, receive, tagged)
            except _store_errors() as e:
                self.store.counters.errors += 1
                if started:  # too late for a status: the response ends here
                    raise
                return await error_response(
                    tagged, 503, SERVER_BUSY, f"Service Unavailable: the session store failed: {e}"
                )

        return exchange

    async def initialize(self, msg: dict[str, Any], send: Send) -> None:
        now = asyncio.get_running_loop().time()
        self.app.sweep(now)
        if self.app.max_sessions is not None and len(self.app.sessions) >= self.app.max_sessions:
            # this worker's views are a cache of the records: an idle one goes, and is made
            # again from its record when a request of its session comes
            for s in [s for s in self.app.sessions.values() if s.idle() and s.standalone is None]:
                self.app.sessions.pop(s.sid, None)
        if self.app.max_sessions is not None and len(self.app.sessions) >= self.app.max_sessions:
            return await self.app.too_many_sessions(send, msg["id"])
        sid = secrets.token_urlsafe(24)
        if self.app.max_sessions is not None and not await self.store.open_session(sid):
            return await self.app.too_many_sessions(send, msg["id"])
        session = _RedisSession(self.app.server, sid, self)
        session.seen = now
        arrival = session.request(msg, StreamOutlet())
        value = arrival.reply if isinstance(arrival, Answered) else None
        if value is not None and "result" in value:
            record = {
                "revision": LEGACY,
                "capabilities": session.client_capabilities,
                "log_level": session.log_level,
                "worker": self.worker,
            }
            await self.store.create_session(sid, record)
            self.app.sessions[sid] = session
            return await reply(send, 200, dumps(value), [(b"mcp-session-id", sid.encode())])
        if self.app.max_sessions is not None:
            await self.store.forget_session(sid)
        if isinstance(arrival, Answered):
            return await reply(send, 200, dumps(value))
        assert isinstance(arrival, Refused)  # initialize is answered at once, never run
        return await reply(send, 409, dumps(error_reply(None, arrival.error)))

    async def notification(self, session: HttpSession, msg: dict[str, Any]) -> None:
        params = msg.get("params")
        rid = params.get("requestId") if isinstance(params, dict) else None
        if msg["method"] != "notifications/cancelled" or session.core.in_flight(rid) is not None:
            session.notification(msg)
            return
        try:
            key = typed_id(rid)
        except InvalidId:
            return
        # not running here: to the worker that holds the id's claim, if any
        await self.store.route(
            session.sid, key, {"k": "cancel", "s": session.sid, "id": rid, "msg": msg}
        )

    async def answer(self, session: HttpSession, msg: dict[str, Any]) -> None:
        wire = msg.get("id")
        if not isinstance(wire, str) or "/" not in wire:
            return  # not an id this server minted: it answers nothing
        worker, _, sid = wire.partition("/")
        if _WORKER_NAME.fullmatch(worker) is None:
            return  # not a worker's name: no id this server minted
        local = {**msg, "id": sid}
        if worker == self.worker:
            session.response(local)
            return
        message = {"k": "answer", "s": session.sid, "msg": local}
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8):  # nobody listening: maybe resubscribing
            if await self.store.publish(worker, message):
                return
            await asyncio.sleep(delay)
        _say(f"worker {self.worker}: an answer for worker {_shown(worker)} found nobody listening")

    async def resume(self, session: HttpSession, last: str, receive: Receive, send: Send) -> bool:
        if not self.resumable:
            return False
        assert isinstance(session, _RedisSession)
        await self._resume_kept(session, last, receive, send)
        return True

    async def _resume_kept(
        self, session: _RedisSession, last: str, receive: Receive, send: Send
    ) -> Any:
        """GET with ``Last-Event-ID`` on any worker: the events after it, from this worker's
        memory when the stream runs here (this connection takes it over), else from Redis,
        then its later events as the owner appends them, until its last one."""
        stream, _, num = last.rpartition(".")
        worker, _, k = stream.rpartition("~p")
        if (
            _WORKER_NAME.fullmatch(worker) is None
            or not (k.isascii() and k.isdigit() and len(k) <= 19)
            or not (num.isascii() and num.isdigit() and len(num) <= 19)
            or int(num) > _MAX_EVENT
        ):
            return await error_response(
                send,
                400,
                INVALID_REQUEST,
                f"Bad Request: {_shown(last)} is not an event id here",
            )
        n = int(num)
        local = session.live.get(stream)
        reader = secrets.token_hex(8)
        await self.store.take_stream(session.sid, stream, reader)
        if isinstance(local, _KeptOutlet) and not local.done:
            first = b"".join(ev for m, ev in local.confirmed if m > n)
            token = object()
            local.reader = reader
            previous, local.owner = local.owner, token
            attached(local)
            local.take()
            if previous is not None:
                local.wake_writer()
                local.wake = None
            return await self.app.pump(
                session, None, local, token, receive, send, SSE_HEADERS, first
            )
        entries = await self.store.replay(session.sid, stream, n)
        if entries is None and n == 1 and await self.store.stream_known(session.sid, stream):
            if await self.store.listening(worker):
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
        await self.store.publish(
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
                    body = b"".join(
                        sse.encode(d, id=f"{stream}.{m}") for m, d, _ in entries if m > 1
                    )
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                    n = entries[-1][0]
                    if entries[-1][2]:
                        break
                if gone.is_set():
                    return
                if quiet > self.lease_ms / 1000 and not await self.store.listening(worker):
                    break  # its worker is gone: no more events will come
                entries = await self.store.tail(session.sid, stream, n, 500)
                quiet += 0.5 if not entries else 0.0
                if not await self.store.still_reading(session.sid, stream, reader):
                    break  # a newer resume reads the stream now
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()

    async def delete(self, session: HttpSession) -> None:
        await self.store.end(session.sid)  # every worker is told, this one included
        self.app.end_session(session)

    # --- one request ---------------------------------------------------------------------
    async def request(
        self, session: HttpSession, msg: dict[str, Any], receive: Receive, send: Send
    ) -> None:
        """A request of a shared session: the store's ``claim`` first (refused: 409 before
        anything is registered), then the local core; its end releases the claim."""
        assert isinstance(session, _RedisSession)
        if self.app.max_in_flight is not None and len(session.tasks) >= self.app.max_in_flight:
            return await error_response(
                send,
                429,
                SERVER_BUSY,
                "Too Many Requests: too many requests in flight in this session",
                msg["id"],
            )
        rid = msg["id"]
        key = typed_id(rid)
        method = msg["method"]
        shared = await self._shared_task_method(session, msg)
        if shared is not None:
            return await reply(send, 200, dumps(shared))
        hold = method == "tools/call" or method in self.app.server.methods
        stream = session.next_stream() if hold and self.resumable else None
        tok = await self.store.claim(session.sid, key, hold, stream)
        if tok == -2:
            return await error_response(
                send,
                429,
                SERVER_BUSY,
                "Too Many Requests: too many requests in flight in this session",
                msg["id"],
            )
        if tok < 0:
            self.app.end_session(session)
            return await error_response(send, 404, -32600, "Session not found")
        if tok == 0:
            err = {
                "code": INVALID_REQUEST,
                "message": f"Invalid Request: id {json.dumps(rid)} is already in flight",
                "data": {"id": rid},
            }
            return await reply(send, 409, dumps(error_reply(None, err)))
        c = self.store.held(session.sid, key, tok) if hold else None
        session.pending_claim = c
        outlet = session.outlet() if hold else StreamOutlet()
        arrival = session.request(msg, outlet)
        if type(arrival) is Refused:  # pragma: no cover - the claim makes the local id free
            if c is not None:
                await self.release(c)
            return await reply(send, 409, dumps(error_reply(None, arrival.error)))
        if type(arrival) is Answered:
            value = arrival.reply
            if c is not None:
                why = await self.release(c)
                if why is not None:
                    value = error_reply(rid, error(INTERNAL_ERROR, why))
            if value is None:
                return await reply(send, 202)
            if method == "logging/setLevel" and "result" in value:
                await self._set_level(session)
            return await reply(send, 200, dumps(value))
        assert type(arrival) is Running
        await self.app.start_stream(session, arrival.handle, outlet, receive, send)

    async def _shared_task_method(
        self, session: _RedisSession, msg: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A 2025-11-25 task method answered from Redis (:mod:`.redis_task_link`), after the
        store's check of the id (a duplicate refused as any request's); None: the session's
        own handling."""
        server = self.app.server
        if (
            self.mirror is None
            or msg["method"] not in SHARED_METHODS
            or session.revision != LEGACY
            or not server.serves_tasks
            or msg["method"] in server.methods
        ):
            return None
        tok = await self.store.claim(session.sid, typed_id(msg["id"]), False, None)
        if tok <= 0:
            return None  # refused: the ordinary path claims again and answers the refusal
        return await answer(self.mirror.tasks, server.task_runtime, session.sid, msg)

    async def shared_reply(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """2026-07-28: a task method of the extension, answered from Redis on every worker
        (:func:`.redis_task_link.answer_2026`); None: the request's own handling."""
        server = self.app.server
        if (
            self.mirror is None
            or msg["method"] not in SHARED_METHODS_2026
            or not server.serves_tasks
            or msg["method"] in server.methods
        ):
            return None
        return await answer_2026(self.mirror.tasks, msg)

    async def state_replayed(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """2026-07-28: a retry's ``requestState`` is single-use over every worker and across
        restarts: once it passes every other check, its use is recorded in the store first;
        the error reply when another worker (or this one, before a restart) used it."""
        params = msg.get("params")
        token = params.get("requestState") if isinstance(params, dict) else None
        states = self.app.server.request_states
        if token is None or not states.owns(token):
            return None
        try:
            nonce, expires = states.verify(token, call_binding(msg["method"], params))
        except StateRefused:
            return None  # refused by the session's own check, with its reason
        if await self.store.use_state(nonce, expires):
            return None
        return error_reply(
            msg["id"],
            error(
                INVALID_PARAMS,
                "Invalid params: requestState refused (replayed): requestState was already used",
                {"reason": "replayed"},
            ),
        )

    async def _set_level(self, session: _RedisSession) -> None:
        await self.store.set_session_field(session.sid, "log_level", session.log_level)
        message = {"k": "level", "s": session.sid, "level": session.log_level}
        self.store.counters.count("publish")
        await self.store.redis.publish(BROADCAST, json.dumps(message))
