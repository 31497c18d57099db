"""The lease protocol's store in Redis: sessions, in-flight claims, waiters, routing.

Several worker processes serve one 2025-11-25 session.  What they must share lives here, under
keys that all carry the session's hash tag ``{S}`` (one script touches one slot, so every
operation runs unchanged on Redis Cluster):

* ``mcpi:{S}:session``: the session record (a hash: revision, client capabilities, log level),
  created by ``initialize``, deleted when the session ends; its TTL is the idle timeout,
  refreshed by every claim;
* ``mcpi:{S}:fence``: the fencing counter, INCR only; tokens are its values;
* ``mcpi:{S}:inflight:<I>``: the claim of request id ``I`` (typed: ``i7`` and ``s7`` are the
  ids ``7`` and ``"7"``), value ``<token>:<worker>``, with the lease as its TTL;
* ``mcpi:{S}:waiter:<sid>``: a server-to-client request ``sid`` waiting for its answer
  (value: the worker; TTL: the lease, refreshed with the claim);
* ``mcpi:{S}:refused``: how many renewals, writes and releases of the session the store refused
  (a stale owner's late steps; for monitoring and the tests).

The operations are the lease protocol's, each one Lua script (atomic, one round trip), named
as the model names them: ``claim``, ``renew``, ``write``, ``release``.  Two more are not lease
operations and change no claim: ``end`` (DELETE: the session record and its fence go, so every
later claim is refused) and ``route`` (read the claim of an id and publish a message to the
worker holding it, in one step, so the message goes to the holder at that moment).

Routing between workers: Redis pub/sub, one channel per worker (``mcpi:w:<worker>``) and one
for all (``mcpi:all``).  A message that concerns a request running on another worker (a
``notifications/cancelled``, the answer to a server-to-client request, a DELETE) is only useful
to that worker while it runs that request: if the worker is dead, the request is dead with it.
Pub/sub delivers at most once, to whoever listens now, and keeps nothing: no consumer groups to
create per worker, trim or clean up after a worker dies, and one round trip (``PUBLISH``
returns how many received it; 0 says the worker is gone).  Streams would keep messages for a
worker that never comes back.  The cost: a message published while the worker's subscription
is reconnecting is lost; the sender cannot tell (a cancel is advisory, an unanswered
server-to-client request is withdrawn by its handler's timeout, and a session's end is also
enforced by ``claim``, which refuses requests of a session whose record is gone).

The scripts themselves, with the key and channel names, are :mod:`.redis_scripts`; the plain
connection that carries the scripts on the request path is :mod:`.redis_resp`.  This module is
the Python side: each operation's keys and arguments, its round trips and its counters.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from .core import IdKey
from .redis_resp import Lean, RespError, checked_reply
from .redis_scripts import (
    BROADCAST,
    CLAIM,
    READER_TTL_MS,
    RENEW,
    SCRIPTS,
    SESSIONS,
    WORKER_CHANNEL,
    WRITE,
)

__all__ = [
    "BROADCAST",
    "CLAIM",
    "RENEW",
    "SCRIPTS",
    "WORKER_CHANNEL",
    "WRITE",
    "Claimed",
    "RedisStore",
    "StoreCounters",
    "id_field",
]


def id_field(key: IdKey) -> str:
    """A typed id as a key suffix: ``i7`` for ``7``, ``s7`` for ``"7"``."""
    kind, value = key
    return f"{kind[0]}{value}"


def _k(session: str, part: str) -> str:
    return f"mcpi:{{{session}}}:{part}"


@dataclass
class StoreCounters:
    """Round trips and refusals seen by this worker (the store's own per-session count of
    refusals is ``mcpi:{S}:refused``)."""

    round_trips: int = 0
    by_op: dict[str, int] = field(default_factory=dict)
    refused: int = 0  # renewals, writes and releases the store refused to this worker
    errors: int = 0  # calls that failed (the store unreachable)

    def count(self, op: str, n: int = 1, trips: int = 1) -> None:
        """``n`` operations ``op`` in ``trips`` round trips (0: part of another's pipeline)."""
        self.round_trips += trips
        self.by_op[op] = self.by_op.get(op, 0) + n


@dataclass(frozen=True, slots=True)
class Claimed:
    """A held claim: the token and the value stored under the claim's key."""

    session: str
    key: IdKey
    token: int
    value: str  # "<token>:<worker>"


class RedisStore:
    """The operations of the lease protocol on one Redis (``redis.asyncio``), for one worker."""

    def __init__(
        self,
        url: str,
        worker: str,
        lease_ms: int = 10_000,
        session_ttl_ms: int | None = 3_600_000,
        *,
        max_in_flight: int | None = None,
        max_sessions: int | None = None,
        call_timeout: float | None = 2.0,
        max_event_bytes: int | None = None,
    ) -> None:
        """``max_in_flight``: claims held at once in one session, over every worker (the
        claim script counts them); ``max_sessions``: sessions open at once, over every worker
        (the ``open`` script counts them); ``call_timeout``: seconds any one call to the store
        may take (a store that stops answering fails the call, never holds it longer);
        ``max_event_bytes``: the bytes of events one session may keep for resumption (an
        event beyond is not kept; the write script counts them)."""
        import redis.asyncio as aioredis

        self.url = url
        self.worker = worker
        self.lease_ms = lease_ms
        self.session_ttl_ms = session_ttl_ms or 0
        self.max_in_flight = max_in_flight or 0
        self.max_sessions = max_sessions or 0
        self.call_timeout = call_timeout
        self.max_event_bytes = max_event_bytes or 0
        extra: dict[str, Any] = {}
        if call_timeout is not None:
            extra.update(socket_timeout=call_timeout, socket_connect_timeout=call_timeout)
        self.redis: Any = aioredis.Redis.from_url(url, decode_responses=False, **extra)
        self._sha = {
            name: hashlib.sha1(text.encode()).hexdigest() for name, text in SCRIPTS.items()
        }
        self.counters = StoreCounters()
        self.channel = WORKER_CHANNEL + worker
        self._lean: Lean | None = None
        self._lean_off = False  # True: every call through redis-py (for comparison)
        self._lean_lock = asyncio.Lock()

    async def close(self) -> None:
        if self._lean is not None:
            self._lean.close()
        await self.redis.aclose()

    async def load(self) -> None:
        """Load the scripts (at start, and again after the store lost them: a restart)."""
        for name, text in SCRIPTS.items():
            self._sha[name] = await self.redis.script_load(text)

    async def _connection(self) -> Lean | None:
        """The plain connection (opened on first use, again after it was lost), or None when
        this store's URL is not a plain TCP one (then redis-py carries everything)."""
        if self._lean_off:
            return None
        lean = self._lean
        if lean is not None and not lean.closed:
            return lean
        kw = self.redis.connection_pool.connection_kwargs
        if "host" not in kw or kw.get("password") or kw.get("username"):
            return None
        async with self._lean_lock:
            if self._lean is not None and not self._lean.closed:
                return self._lean
            loop = asyncio.get_running_loop()
            try:
                _, proto = await loop.create_connection(Lean, kw["host"], kw.get("port", 6379))
            except OSError as e:
                from redis.exceptions import ConnectionError as Lost

                raise Lost(f"cannot connect to Redis: {e}") from None
            if kw.get("db"):
                (fut,) = proto.send([["SELECT", kw["db"]]])
                checked_reply(await fut)
            self._lean = proto
            return proto

    async def _lean_calls(self, commands: list[list[Any]]) -> list[Any] | None:
        """``commands`` on the plain connection, in one write; None when there is none."""
        if self.call_timeout is None:
            lean = await self._connection()
            if lean is None:
                return None
            return [await f for f in lean.send(commands)]
        lean = None
        try:
            async with asyncio.timeout(self.call_timeout):
                lean = await self._connection()
                if lean is None:
                    return None
                futs = lean.send(commands)
                return [await f for f in futs]
        except TimeoutError:
            from redis.exceptions import TimeoutError as StoreTimeout

            if lean is not None:
                lean.close()  # its replies can no longer be matched to their calls: start again
            self._lean = None
            raise StoreTimeout(f"the store did not answer within {self.call_timeout:g} s") from None

    async def _eval(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """One script call: EVALSHA (one round trip), loading the scripts when the store has
        lost them."""
        from redis.exceptions import NoScriptError

        for attempt in (0, 1):
            command = ["EVALSHA", self._sha[name], len(keys), *keys, *args]
            out = await self._lean_calls([command])
            try:
                if out is None:
                    return await self.redis.evalsha(self._sha[name], len(keys), *keys, *args)
                return checked_reply(out[0])
            except NoScriptError:
                if attempt:
                    raise
                await self.load()
        raise AssertionError("unreachable")

    async def _pipelined(self, calls: list[tuple[str, list[str], list[Any]]]) -> list[Any]:
        """Several script calls in one round trip (a pipeline, not a transaction: each script
        is atomic on its own)."""
        from redis.exceptions import NoScriptError, ResponseError

        commands = [["EVALSHA", self._sha[n], len(k), *k, *a] for n, k, a in calls]
        out = await self._lean_calls(commands)
        if out is not None:
            if any(isinstance(x, RespError) and x.startswith("NOSCRIPT") for x in out):
                await self.load()
                commands = [["EVALSHA", self._sha[n], len(k), *k, *a] for n, k, a in calls]
                out = await self._lean_calls(commands)
                assert out is not None
            return [checked_reply(x) for x in out]

        for attempt in (0, 1):
            async with self.redis.pipeline(transaction=False) as p:
                for name, keys, args in calls:
                    p.evalsha(self._sha[name], len(keys), *keys, *args)
                try:
                    out = await p.execute(raise_on_error=False)
                except NoScriptError:
                    out = [NoScriptError()]
            if attempt == 0 and any(
                isinstance(x, ResponseError)
                and "NOSCRIPT" in str(x)
                or isinstance(x, NoScriptError)
                for x in out
            ):
                await self.load()
                continue
            for x in out:
                if isinstance(x, Exception):
                    raise x
            return list(out)
        raise AssertionError("unreachable")

    # --- sessions ------------------------------------------------------------------------
    async def open_session(self, session: str) -> bool:
        """Count ``session`` among the open sessions; False when ``max_sessions`` are open."""
        self.counters.count("open")
        args = [session, self.max_sessions, self.session_ttl_ms]
        return bool(int(await self._eval("open", [SESSIONS], args)))

    async def forget_session(self, session: str) -> None:
        """``session`` was counted but never made (its ``initialize`` failed)."""
        await self.redis.zrem(SESSIONS, session)

    async def touch_sessions(self, sessions: list[str]) -> None:
        """The sessions this worker serves are still open: their count runs a new idle time."""
        if not sessions or not self.session_ttl_ms:
            return
        self.counters.count("touch")
        until = int(time.time() * 1000) + self.session_ttl_ms
        await self.redis.zadd(SESSIONS, {s: until for s in sessions}, xx=True, gt=True)

    async def create_session(self, session: str, record: dict[str, Any]) -> None:
        key = _k(session, "session")
        fields = {k: json.dumps(v) for k, v in record.items()}
        self.counters.count("create")
        async with self.redis.pipeline(transaction=True) as p:
            p.hset(key, mapping=fields)
            if self.session_ttl_ms:
                p.pexpire(key, self.session_ttl_ms)
            await p.execute()

    async def get_session(self, session: str) -> dict[str, Any] | None:
        self.counters.count("lookup")
        raw = await self.redis.hgetall(_k(session, "session"))
        if not raw:
            return None
        return {k.decode(): json.loads(v) for k, v in raw.items()}

    async def set_session_field(self, session: str, name: str, value: Any) -> None:
        self.counters.count("update")
        await self.redis.hset(_k(session, "session"), name, json.dumps(value))

    async def end(self, session: str) -> bool:
        """The session ends (DELETE): its record, fence and counter go; then every worker is
        told (``mcpi:all``), so each cancels its handlers of the session."""
        self.counters.count("end")
        keys = [
            _k(session, "session"),
            _k(session, "fence"),
            _k(session, "refused"),
            _k(session, "streams"),
            _k(session, "inflight"),
            _k(session, "evbytes"),
        ]
        existed = await self._eval("end", keys, [])
        await self.redis.zrem(SESSIONS, session)
        self.counters.count("publish")
        await self.redis.publish(BROADCAST, json.dumps({"k": "end", "s": session}))
        return bool(existed)

    # --- the lease protocol --------------------------------------------------------------
    def claim_key(self, session: str, key: IdKey) -> str:
        return _k(session, "inflight:" + id_field(key))

    async def claim(
        self, session: str, key: IdKey, hold: bool = True, stream: str | None = None
    ) -> int:
        """``claim(w, I)``: the token (> 0), 0 for a duplicate, -1 when the session has ended,
        -2 when the session holds ``max_in_flight`` claims already.  With ``hold`` false only
        the check runs (an answer given at once: admitted and finished in one step); the result
        is then 1 when admitted.  ``stream``: the event stream the request will write, named in
        the session's set of streams with the claim."""
        self.counters.count("claim")
        keys = [_k(session, "session"), _k(session, "fence"), self.claim_key(session, key)]
        args: list[Any] = [self.worker, self.lease_ms, 1 if hold else 0, self.session_ttl_ms]
        if self.max_in_flight or stream is not None:
            keys += [_k(session, "inflight"), _k(session, "streams")]
            args += [self.max_in_flight, "" if stream is None else self.events_key(session, stream)]
        return int(await self._eval("claim", keys, args))

    async def stream_known(self, session: str, stream: str) -> bool:
        """Whether ``stream`` was opened in ``session`` (and the session has not ended)."""
        key = self.events_key(session, stream)
        return bool(await self.redis.sismember(_k(session, "streams"), key))

    def held(self, session: str, key: IdKey, token: int) -> Claimed:
        return Claimed(session, key, token, f"{token}:{self.worker}")

    def _checked(self, c: Claimed) -> list[str]:
        """The keys every checked operation on ``c`` touches: claim, refused, session."""
        return [
            self.claim_key(c.session, c.key),
            _k(c.session, "refused"),
            _k(c.session, "session"),
        ]

    async def renew_all(self, claims: list[Claimed]) -> list[bool]:
        """``renew`` for each claim, pipelined: one round trip for all of them."""
        if not claims:
            return []
        self.counters.count("renew", len(claims))
        calls = [
            (
                "renew",
                [*self._checked(c), _k(c.session, "inflight")],
                [c.value, self.lease_ms],
            )
            for c in claims
        ]
        out = [bool(int(x)) for x in await self._pipelined(calls)]
        self.counters.refused += out.count(False)
        return out

    async def write(self, c: Claimed, kind: str, target: str, *args: Any) -> bool:
        """``write(w, I, tok, ...)``: checked against the token; False when refused."""
        self.counters.count("write")
        keys = [*self._checked(c), target]
        ok = bool(int(await self._eval("write", keys, [c.value, kind, *args])))
        if not ok:
            self.counters.refused += 1
        return ok

    def waiter_key(self, session: str, sid: str) -> str:
        return _k(session, "waiter:" + sid)

    async def release(self, c: Claimed) -> bool:
        """``release(w, I, tok)``: compare-and-delete; False when the claim is not ours."""
        self.counters.count("release")
        keys = [*self._checked(c), _k(c.session, "inflight")]
        ok = bool(int(await self._eval("release", keys, [c.value])))
        if not ok:
            self.counters.refused += 1
        return ok

    # --- event streams (resumable POST streams) -----------------------------------------
    def events_key(self, session: str, stream: str) -> str:
        return _k(session, "events:" + stream)

    def _xadd(self, c: Claimed, stream: str, n: int, data: bytes, end: bool) -> tuple:
        keys = [
            *self._checked(c),
            self.events_key(c.session, stream),
            _k(c.session, "streams"),
            _k(c.session, "evbytes"),
        ]
        ttl = self.session_ttl_ms or 3_600_000
        args = [c.value, "xadd", f"0-{n}", data, 1 if end else 0, ttl, self.max_event_bytes]
        return ("write", keys, args)

    async def append(self, c: Claimed, stream: str, batch: list[tuple[int, bytes]]) -> int:
        """Append events ``(n, data)`` to ``stream``, each a checked ``write``, all in one
        round trip: 1 when all were kept, 0 when one was refused (the lease is lost), -3 when
        one would go over the session's event budget (``max_event_bytes``)."""
        self.counters.count("write", len(batch))
        out = await self._pipelined([self._xadd(c, stream, n, d, False) for n, d in batch])
        got = [int(x) for x in out]
        if 0 in got:
            self.counters.refused += 1
            return 0
        return -3 if -3 in got else 1

    async def final(
        self,
        c: Claimed,
        stream: str,
        n: int,
        data: bytes,
        pending: list[tuple[int, bytes]] = (),  # type: ignore[assignment]
    ) -> tuple[int, bool]:
        """The events still pending and the response as the stream's last event (each a
        checked ``write``), then ``release``: one round trip.  Returns (written: 1, 0 refused
        or -3 over the session's event budget, released)."""
        self.counters.count("write", 1 + len(pending))
        self.counters.count("release", trips=0)
        calls = [self._xadd(c, stream, m, d, False) for m, d in pending]
        calls.append(self._xadd(c, stream, n, data, True))
        calls.append(("release", [*self._checked(c), _k(c.session, "inflight")], [c.value]))
        out = await self._pipelined(calls)
        got = [int(x) for x in out[:-1]]
        wrote = 0 if 0 in got else -3 if -3 in got else 1
        released = bool(int(out[-1]))
        if wrote == 0 or not released:
            self.counters.refused += 1
        return wrote, released

    async def replay(
        self, session: str, stream: str, after: int
    ) -> list[tuple[int, bytes, bool]] | None:
        """The events of ``stream`` numbered above ``after``; None when the stream is not kept
        (never was, ended with its session, or expired)."""
        self.counters.count("replay")
        key = self.events_key(session, stream)
        async with self.redis.pipeline(transaction=False) as p:
            p.exists(key)
            p.xrange(key, f"(0-{after}", "+")
            exists, entries = await p.execute()
        if not exists:
            return None
        return [_entry(i, f) for i, f in entries]

    async def tail(
        self, session: str, stream: str, after: int, block_ms: int
    ) -> list[tuple[int, bytes, bool]]:
        """The events of ``stream`` after ``after``, waiting up to ``block_ms`` for one."""
        key = self.events_key(session, stream)
        got = await self.redis.xread({key: f"0-{after}"}, block=block_ms, count=256)
        if not got:
            return []
        entries = got[key.encode()] if isinstance(got, dict) else got[0][1]
        if isinstance(entries, list) and entries and isinstance(entries[0], list):
            entries = entries[0]
        return [_entry(i, f) for i, f in entries]

    async def listening(self, worker: str) -> bool:
        """Whether ``worker`` is subscribed to its channel (alive and connected)."""
        got = await self.redis.pubsub_numsub(WORKER_CHANNEL + worker)
        return bool(got and int(got[0][1]))

    # --- one live reader per resumed stream ------------------------------------------------
    def reader_key(self, session: str, stream: str) -> str:
        return _k(session, "reader:" + stream)

    async def take_stream(self, session: str, stream: str, reader: str) -> None:
        """``reader`` is now the one live reader of ``stream`` (the newest takes over).  The
        key is named in the session's set of streams, so the session's end deletes it."""
        self.counters.count("reader")
        key = self.reader_key(session, stream)
        streams = _k(session, "streams")
        async with self.redis.pipeline(transaction=True) as p:
            p.set(key, reader, px=READER_TTL_MS)
            p.sadd(streams, key)
            p.pexpire(streams, self.session_ttl_ms or 3_600_000)
            await p.execute()

    async def still_reading(self, session: str, stream: str, reader: str) -> bool:
        """Whether ``reader`` is still the live reader of ``stream`` (its claim refreshed)."""
        key = self.reader_key(session, stream)
        async with self.redis.pipeline(transaction=False) as p:
            p.get(key)
            p.pexpire(key, READER_TTL_MS)
            current, _ = await p.execute()
        return current is None or current.decode() == reader

    async def current_reader(self, session: str, stream: str) -> str | None:
        v = await self.redis.get(self.reader_key(session, stream))
        return None if v is None else v.decode()

    # --- 2026-07-28 requestState ----------------------------------------------------------
    async def use_state(self, nonce: str, expires: float) -> bool:
        """Record a ``requestState``'s nonce as used, until the state expires (wall-clock
        seconds): True the first time, False when any worker used it before (a replay)."""
        self.counters.count("state")
        at = max(int(expires * 1000), int(time.time() * 1000) + 1)
        return bool(await self.redis.set(f"mcpi:rs:{nonce}", b"1", nx=True, pxat=at))

    # --- routing -------------------------------------------------------------------------
    async def route(self, session: str, key: IdKey, message: dict[str, Any]) -> str | None:
        """Send ``message`` to the worker holding the claim of ``key``; returns that worker,
        or None when no worker holds it."""
        self.counters.count("route")
        keys = [self.claim_key(session, key)]
        v = await self._eval("route", keys, [WORKER_CHANNEL, json.dumps(message)])
        v = v.decode() if isinstance(v, bytes) else str(v)
        return v.split(":", 1)[1] if v else None

    async def publish(self, worker: str, message: dict[str, Any]) -> int:
        """Send ``message`` to ``worker``; returns how many received it (0: it is gone)."""
        self.counters.count("publish")
        return int(await self.redis.publish(WORKER_CHANNEL + worker, json.dumps(message)))

    # --- reading (tests, monitoring) -----------------------------------------------------
    async def refused_count(self, session: str) -> int:
        v = await self.redis.get(_k(session, "refused"))
        return int(v or 0)


def _entry(entry_id: Any, fields: Any) -> tuple[int, bytes, bool]:
    """A stream entry ``0-n`` with fields d (data) and e (1: the stream's last event)."""
    eid = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    f = {(k.decode() if isinstance(k, bytes) else k): v for k, v in fields.items()}
    return int(eid.split("-", 1)[1]), f.get("d", b""), f.get("e") in (b"1", "1", 1)


def now() -> float:
    return time.monotonic()
