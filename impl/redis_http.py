"""Streamable HTTP on several worker processes that share one Redis (the lease protocol).

``create_app(server, redis="redis://host:port/0")`` (:class:`~.http.App` with a
:class:`RedisSessions` store) is the app of one worker; run as many as you like behind one port (``mcp-inflight serve --workers N --redis URL``,
or ``uvicorn --workers N``).  A 2025-11-25 session is usable from any worker; 2026-07-28 stays
stateless (each POST its own scope; only its tasks and used request states are in Redis).

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
from Redis on any worker (:mod:`.redis_task_http`, :mod:`.redis_task_link`), a
``tasks/result`` that waits carrying the task's status notifications on whichever worker.
No response starts before the task moves made so far are in Redis (:meth:`RedisSessions.wrap`).

Not shared: the standalone GET stream (one per worker and session); ``logging/setLevel``
reaches the other workers' views by a published message (a view made later reads the record).

A rule the core lacks.  The core is one process's view; across workers the admission rule is
the store's ``claim`` and the end of a request its ``release``, exactly the lease protocol's
operations: this module adds no lifecycle rule of its own beyond them.

Why these steps stay in one module: they share one worker's state (its sessions' views, its held
claims, its detached streams) and each step's failure path is another's (a lost lease cancels a
handler whose stream may be detached and whose waiters were routed here).  A session's view, its
kept streams and their resumption are :mod:`.redis_streams`; the task methods
:mod:`.redis_task_http`; the store's side :mod:`.redis_store`.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from typing import Any

from .asgi_types import ASGIApp, Receive, Send
from .core import Handle, InvalidId, typed_id
from .http_checks import Headers
from .messages import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY,
    dumps,
    error,
    error_reply,
)
from .redis_store import BROADCAST, Claimed, RedisStore
from .redis_streams import (
    LEASE_LOST,
    WORKER_NAME,
    KeptOutlet,
    RedisSession,
    resume_kept,
    say,
    shown,
    taken_over,
)
from .redis_task_http import shared_reply_2026, shared_task_method
from .redis_task_link import Mirror
from .redis_tasks import RedisTasks
from .request_state import StateRefused, call_binding
from .server import Answered, Refused, Running
from .stores import Host, SessionLookup
from .streams import (
    SERVER_BUSY,
    HttpSession,
    StreamOutlet,
    busy_response,
    error_response,
    reply,
)

__all__ = ["LEASE_LOST", "RedisSessions"]


def store_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisError

    return (RedisError, OSError)


_WORKER_HEADER = b"mcp-inflight-worker"


class RedisSessions:
    """One worker's session store over a shared Redis (see the module text): a
    :class:`.stores.SessionStore` for :class:`~.http.App`.

    ``redis``: the store's URL; ``lease_ms``: the claims' lease (renewed every third of it);
    ``resumable``: POST streams kept in Redis; ``store_timeout``: the bound on one call of the
    store; ``max_event_bytes``: a session's kept events, at most.  The app's ``event_store`` is
    not used (the streams are kept in Redis)."""

    #: the exceptions of a failed call of the store (:mod:`.redis_streams` catches them too)
    store_errors = staticmethod(store_errors)

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
        self.held: dict[tuple[str, Any], tuple[RedisSession, Handle, Claimed]] = {}
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
        say(f"worker {self.worker} ready")

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
        say(f"worker {self.worker} stopping: store {json.dumps(stats, sort_keys=True)}")
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
        except store_errors():
            pass  # it expires with the lease

    # --- leases ----------------------------------------------------------------------------
    def hold(self, session: RedisSession, h: Handle, c: Claimed) -> None:
        self.held[(c.session, c.key)] = (session, h, c)
        self._last_ok[(c.session, c.key)] = time.monotonic()

    def unhold(self, c: Claimed) -> None:
        self.held.pop((c.session, c.key), None)
        self._last_ok.pop((c.session, c.key), None)

    def lease_lost(self, session: RedisSession, h: Handle, why: str) -> None:
        """The worker no longer owns ``h``'s claim: stop its handler; its POST gets an error."""
        if h in session.lost or h not in session.claims:
            return
        self.lost_leases += 1
        session.lost.add(h)
        observer = getattr(self.app.server, "observer", None)
        if observer is not None:  # the lifecycle observer hook (e.g. mcp_inflight.otel)
            observer.lease_lost(session.sid, session.core, h, why, self.worker)
        say(
            f"worker {self.worker}: {LEASE_LOST} for id {shown(h.id)} of session "
            f"{session.sid[:8]}... ({shown(why, 200)})"
        )
        session._cancel_handler(h)

    def lease_lost_by(self, outlet: KeptOutlet, why: str) -> None:
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
                except store_errors():
                    self.store.counters.errors += 1
            entries = list(self.held.items())
            if not entries:
                continue
            now = time.monotonic()
            try:
                oks = await self.store.renew_all([c for _, (_, _, c) in entries])
            except store_errors():
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
        except store_errors() as e:
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
                say(f"worker {self.worker}: bad routed message: {shown(repr(e), 200)}")

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
        if s is None or not isinstance(s, RedisSession):
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
            if isinstance(local, KeptOutlet) and not local.done and local.owner is not None:
                self.spawn(taken_over(self, s, local))
        elif kind == "cancel":
            h = s.core.in_flight(m["id"])
            c = s.claims.get(h) if h is not None else None
            if c is not None and c.value == claim:  # the instance the claim named, no other
                s.notification(m["msg"])

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
            s = RedisSession(self.app.server, name, self)
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
            except store_errors() as e:
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
        session = RedisSession(self.app.server, sid, self)
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
        if WORKER_NAME.fullmatch(worker) is None:
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
        say(f"worker {self.worker}: an answer for worker {shown(worker)} found nobody listening")

    async def resume(self, session: HttpSession, last: str, receive: Receive, send: Send) -> bool:
        if not self.resumable:
            return False
        assert isinstance(session, RedisSession)
        await resume_kept(self, session, last, receive, send)
        return True

    async def delete(self, session: HttpSession) -> None:
        await self.store.end(session.sid)  # every worker is told, this one included
        self.app.end_session(session)

    # --- one request ---------------------------------------------------------------------
    async def request(
        self, session: HttpSession, msg: dict[str, Any], receive: Receive, send: Send
    ) -> None:
        """A request of a shared session: the store's ``claim`` first (refused: 409 before
        anything is registered), then the local core; its end releases the claim."""
        assert isinstance(session, RedisSession)
        if self.app.max_in_flight is not None and len(session.tasks) >= self.app.max_in_flight:
            return await busy_response(send, msg["id"])
        rid = msg["id"]
        key = typed_id(rid)
        method = msg["method"]
        if await shared_task_method(self, session, msg, receive, send):
            return
        hold = method == "tools/call" or method in self.app.server.methods
        stream = session.next_stream() if hold and self.resumable else None
        tok = await self.store.claim(session.sid, key, hold, stream)
        if tok == -2:
            return await busy_response(send, msg["id"])
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

    async def shared_reply(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """2026-07-28: a task method of the extension, from Redis (:mod:`.redis_task_http`)."""
        return await shared_reply_2026(self, msg)

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

    async def _set_level(self, session: RedisSession) -> None:
        await self.store.set_session_field(session.sid, "log_level", session.log_level)
        message = {"k": "level", "s": session.sid, "level": session.log_level}
        self.store.counters.count("publish")
        await self.store.redis.publish(BROADCAST, json.dumps(message))
