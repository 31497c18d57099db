"""Tasks shared by several workers through Redis: the store of :mod:`.tasks`, one script a move.

:class:`~.tasks.TaskStore` keeps a task in one process's memory.  With several workers behind one
port a task created through one worker must be readable, cancellable and answerable through any
other, so here its state is a Redis hash, and each of the store's moves (the model's
``fresh-bound`` design, ``model/tasks.py``) is one Lua script: a read-modify-write that no other
worker can interleave.  The decisions are the same as :class:`~.tasks.TaskStore`'s: ids minted
fresh (``secrets``, 128 bits), every call on an unknown, deleted or another owner's id refused
alike, terminal states sticky, the result handed to its owner only, ``tasks/cancel`` as the
revision says (2025-11-25: cancelled before the answer, a terminal task refused; 2026-07-28: the
request recorded and ``{}`` answered), the session's end cancelling its live 2025-11-25 tasks.

Keys (all under the owner's hash tag ``{O}``, so each script touches one slot):

* ``mcpi:{O}:task:<id>``: the task (fields ``rev``, ``ttl``, ``st`` status, ``res`` the result
  or error as JSON, ``creq`` a 2026-07-28 cancellation pending, ``run`` whether its work runs,
  ``c``/``u`` created and last updated in ms since the epoch, ``w`` the worker running it,
  ``tok`` its fencing token, ``dl`` its lease deadline in ms); its Redis TTL is the task's ttl,
  so the ttl's end deletes it on every worker at once;
* ``mcpi:{O}:tasks``: the owner's task ids by creation time (``tasks/list``; an id whose task
  has expired is dropped when met);
* ``mcpi:{O}:tfence``: the fencing counter of the owner's tasks (INCR only; it expires with
  the index, when no task of the owner is left, as a token is checked against its own task's
  hash only);
* ``mcpi:{O}:tended``: the owner (a 2025-11-25 session) has ended.

The work of a task runs on the worker that created it, which holds a lease on the task: the
deadline ``dl``, renewed every third of the lease (:meth:`RedisTasks.renew`, all the worker's
tasks in one pipelined round trip) with the token the creation returned.  Every move of the
work (``ask``, ``finish``, ``honour``, ``renew``) carries that token and is refused without it.
Every script first applies the lost-worker rule: a live task whose lease deadline has passed
(Redis's own clock, ``TIME``) is ``failed`` with the error "the task's worker was lost", a
terminal status, sticky as every other.  So the rule is decided on read, by whichever worker
reads first; no sweeper is needed, and a worker that wakes up after its lease (a long pause)
finds its task failed and its late ``finish`` changes nothing.

Messages, by Redis pub/sub (at most once, as :mod:`.redis_store` argues for requests):

* every status change publishes the ``Task`` (its wire fields but the times in ms) on
  ``mcpi:ts:<O>``, in the script that made it, so notifications are in the order of the
  changes; a worker holding a stream of the owner's session subscribes and sends
  ``notifications/tasks/status`` there; a worker without one sends nothing (the spec makes the
  notification optional: requesters poll ``tasks/get``);
* ``tasks/cancel`` on any worker publishes ``{"task_cancel": id, "token": tok}`` on the runner's
  worker channel (``mcpi:w:<worker>``), in the same script; the runner stops the work if it
  still runs that task under that token.  On 2025-11-25 the status is already ``cancelled``
  in Redis before the answer, and the runner's late ``finish`` leaves it so;
* ``tasks/update`` (2026-07-28) on any worker removes the answered questions (the task's
  ``in:<key>`` fields, which the runner's ``ask`` wrote and ``tasks/get`` shows as
  ``inputRequests``), makes the task ``working`` once none is left, and publishes
  ``{"task_update": id, "token": tok, "responses": {...}}`` on the runner's worker channel, in
  the same script; the runner hands each answer to the question of its work that waits on it.

``tasks/result`` on a worker other than the runner's waits on the status channel, with a poll
every :attr:`RedisTasks.poll_s` as well (a lost message, or a lost worker, whose task fails on
the next read, publishes nothing by itself).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from .redis_store import WORKER_CHANNEL, RedisStore
from .tasks import REV_2025, REV_2026, TERMINAL, NotReady, TaskError

__all__ = ["RedisTasks", "LOST", "STATUS_CHANNEL", "wire"]

#: the error of a task whose worker was lost (its lease ran out while it was live)
LOST = {"code": -32603, "message": "the task's worker was lost (its lease ran out)"}
STATUS_CHANNEL = "mcpi:ts:"

# The shared part of every script.  ``KEYS[1]`` is the task; ``ARGV[1]`` the owner's status
# channel.  ``view`` is the Task as JSON (the result appended raw: cjson would turn an empty
# JSON array into an object).  ``lost`` is the lost-worker rule; ``set`` a status change.
_PRELUDE = """
local k = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local LIVE = {working = true, input_required = true}
local function inputs()
  local flat = redis.call('HGETALL', k)
  local parts = {}
  for i = 1, #flat, 2 do
    if string.sub(flat[i], 1, 3) == 'in:' then
      parts[#parts + 1] = cjson.encode(string.sub(flat[i], 4)) .. ':' .. flat[i + 1]
    end
  end
  return parts
end
local function view()
  local h = redis.call('HMGET', k, 'st', 'rev', 'ttl', 'c', 'u', 'res')
  local id = string.match(k, ':task:(.*)$')
  local head = cjson.encode({taskId = id, status = h[1], rev = h[2], ttl = tonumber(h[3]),
                             c = tonumber(h[4]), u = tonumber(h[5])})
  if h[6] and h[6] ~= '' then
    head = string.sub(head, 1, -2) .. ',"res":' .. h[6] .. '}'
  end
  if h[1] == 'input_required' then
    local parts = inputs()
    if #parts > 0 then
      head = string.sub(head, 1, -2) .. ',"inq":{' .. table.concat(parts, ',') .. '}}'
    end
  end
  return head
end
local function set(st, res)
  local old = redis.call('HGET', k, 'st')
  if not LIVE[old] or old == st then return false end
  redis.call('HSET', k, 'st', st, 'u', now)
  if res then redis.call('HSET', k, 'res', res) end
  redis.call('PUBLISH', ARGV[1], view())
  return true
end
local function lost()
  if redis.call('EXISTS', k) == 0 then return end
  if LIVE[redis.call('HGET', k, 'st')] and tonumber(redis.call('HGET', k, 'dl')) < now then
    set('failed', ARGV[2])
    redis.call('HSET', k, 'run', '0')
  end
end
lost()
"""

#: create: KEYS task, index, fence; ARGV channel, lost error, revision, ttl ms, worker, lease ms
_CREATE = """
local tok = redis.call('INCR', KEYS[3])
redis.call('HSET', k, 'rev', ARGV[3], 'ttl', ARGV[4], 'st', 'working', 'res', '', 'creq', '0',
           'run', '1', 'c', now, 'u', now, 'w', ARGV[5], 'tok', tok, 'dl', now + tonumber(ARGV[6]))
redis.call('PEXPIRE', k, ARGV[4])
redis.call('ZADD', KEYS[2], now, string.match(k, ':task:(.*)$'))
redis.call('PEXPIRE', KEYS[2], ARGV[4], 'GT')
if redis.call('TTL', KEYS[2]) < 0 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
redis.call('PEXPIRE', KEYS[3], redis.call('PTTL', KEYS[2]))
return {tok, view()}
"""

#: the work's moves: KEYS task; ARGV channel, lost error, token, move, then the move's own
#: (finish: ok, result JSON; renew: lease ms; ask, 2026-07-28: the question's key and request
#: JSON, kept as the field ``in:<key>`` until ``update`` answers it).  Returns 1 when applied, 0 when refused (the
#: token is not the task's, the task is gone or terminal: fenced), with the view.
_WORK = """
if redis.call('EXISTS', k) == 0 or redis.call('HGET', k, 'tok') ~= ARGV[3] then
  return {0, ''}
end
local st = redis.call('HGET', k, 'st')
local move = ARGV[4]
if move == 'renew' then
  if not LIVE[st] then return {0, view()} end
  redis.call('HSET', k, 'dl', now + tonumber(ARGV[5]))
  return {1, ''}
elseif move == 'ask' then
  if not LIVE[st] or (st ~= 'working' and not ARGV[5]) then return {0, view()} end
  if ARGV[5] then redis.call('HSET', k, 'in:' .. ARGV[5], ARGV[6]) end
  set('input_required')
elseif move == 'finish' then
  redis.call('HSET', k, 'run', '0')
  if not LIVE[st] then return {0, view()} end
  set(ARGV[5] == '1' and 'completed' or 'failed', ARGV[6])
elseif move == 'honour' then
  if redis.call('HGET', k, 'creq') ~= '1' or not LIVE[st] then return {0, view()} end
  set('cancelled')
  redis.call('HSET', k, 'run', '0')
end
return {1, view()}
"""

#: the requester's moves: KEYS task, ended; ARGV channel, lost error, move, worker channel
#: prefix (update, 2026-07-28: then the answered keys as a JSON list, and the answers as JSON,
#: published to the runner).  Returns {code, view}: code 0 unknown (unknown, deleted, or the owner's session
#: ended), 1 done, 2 refused (2025-11-25 cancel of a terminal task).
_ASK = """
if redis.call('EXISTS', k) == 0 then return {0, ''} end
local rev = redis.call('HGET', k, 'rev')
if rev == '2025-11-25' and redis.call('EXISTS', KEYS[2]) == 1 then return {0, ''} end
local move = ARGV[3]
local st = redis.call('HGET', k, 'st')
if move == 'answer' then
  if st == 'input_required' then set('working') end
elseif move == 'update' then
  if st ~= 'input_required' then return {1, ''} end
  for _, key in ipairs(cjson.decode(ARGV[5])) do redis.call('HDEL', k, 'in:' .. key) end
  local h = redis.call('HMGET', k, 'w', 'tok', 'run')
  if #inputs() == 0 then set('working') end
  if h[3] == '1' then
    local id = string.match(k, ':task:(.*)$')
    redis.call('PUBLISH', ARGV[4] .. h[1], '{"task_update":' .. cjson.encode(id) ..
               ',"token":' .. cjson.encode(h[2]) .. ',"responses":' .. ARGV[6] .. '}')
  end
  return {1, ''}
elseif move == 'cancel' then
  local h = redis.call('HMGET', k, 'w', 'tok', 'run')
  if rev == '2025-11-25' then
    if not LIVE[st] then return {2, view()} end
    set('cancelled')
  elseif LIVE[st] then
    redis.call('HSET', k, 'creq', '1')
  else
    return {1, ''}
  end
  if h[3] == '1' then
    local id = string.match(k, ':task:(.*)$')
    redis.call('PUBLISH', ARGV[4] .. h[1], cjson.encode({task_cancel = id, token = h[2]}))
  end
  if rev ~= '2025-11-25' then return {1, ''} end
end
return {1, view()}
"""

#: end_session: KEYS task, ended; ARGV channel, lost error, ended marker ttl ms.  The task's
#: session ended: a live 2025-11-25 task is cancelled and its work stopped (its runner told).
_END = """
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
if redis.call('EXISTS', k) == 1 and redis.call('HGET', k, 'rev') == '2025-11-25' then
  local h = redis.call('HMGET', k, 'w', 'tok', 'run')
  set('cancelled')
  redis.call('HSET', k, 'run', '0')
  if h[3] == '1' then
    local id = string.match(k, ':task:(.*)$')
    redis.call('PUBLISH', ARGV[4] .. h[1], cjson.encode({task_cancel = id, token = h[2]}))
  end
end
return 1
"""

#: state: KEYS task; ARGV channel, lost error.  The raw fields (tests and the agreement check).
_STATE = """
if redis.call('EXISTS', k) == 0 then return {} end
return redis.call('HGETALL', k)
"""

SCRIPTS = {
    name: _PRELUDE + body
    for name, body in (
        ("create", _CREATE),
        ("work", _WORK),
        ("ask", _ASK),
        ("end", _END),
        ("state", _STATE),
    )
}


def _iso(ms: int) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def wire(raw: dict[str, Any], poll_interval_ms: int | None = None) -> dict[str, Any]:
    """A script's view as the ``Task`` the methods answer (the fields of
    :meth:`.tasks.Task.view` and :meth:`.task_runtime.TaskRuntime._wire`)."""
    rev = raw["rev"]
    out: dict[str, Any] = {"taskId": raw["taskId"], "status": raw["status"]}
    out["ttlMs" if rev == REV_2026 else "ttl"] = raw["ttl"]
    if rev == REV_2026 and raw["status"] in ("completed", "failed"):
        out["result" if raw["status"] == "completed" else "error"] = raw.get("res")
    if rev == REV_2026 and raw["status"] == "input_required" and raw.get("inq"):
        out["inputRequests"] = raw["inq"]
    out["createdAt"], out["lastUpdatedAt"] = _iso(raw["c"]), _iso(raw["u"])
    if poll_interval_ms is not None:
        out["pollIntervalMs" if rev == REV_2026 else "pollInterval"] = poll_interval_ms
    return out


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class RedisTasks:
    """The tasks of one worker's server, kept in the Redis of ``store`` (its connection and
    worker name); ``lease_ms`` is the lease a worker holds on the tasks it runs (by default
    the store's request lease)."""

    def __init__(
        self,
        store: RedisStore,
        max_ttl_ms: int = 3_600_000,
        lease_ms: int | None = None,
        poll_interval_ms: int | None = 500,
    ) -> None:
        self.store = store
        self.redis: Any = store.redis
        self.worker = store.worker
        self.max_ttl_ms = max_ttl_ms
        self.lease_ms = lease_ms or store.lease_ms
        self.poll_interval_ms = poll_interval_ms
        #: how often ``result`` reads the task again while it waits for a status message
        self.poll_s = min(0.5, self.lease_ms / 3000)
        self._sha = {n: hashlib.sha1(s.encode()).hexdigest() for n, s in SCRIPTS.items()}
        #: the tasks this worker runs: task id -> (owner, token)
        self.held: dict[str, tuple[str, str]] = {}

    # --- plumbing -------------------------------------------------------------------------

    @staticmethod
    def task_key(owner: str, tid: str) -> str:
        return f"mcpi:{{{owner}}}:task:{tid}"

    async def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        from redis.exceptions import NoScriptError

        try:
            return await self.redis.evalsha(self._sha[name], len(keys), *keys, *args)
        except NoScriptError:
            self._sha[name] = await self.redis.script_load(SCRIPTS[name])
            return await self.redis.evalsha(self._sha[name], len(keys), *keys, *args)

    def _common(self, owner: str) -> list[Any]:
        return [STATUS_CHANNEL + owner, json.dumps(LOST)]

    def _view(self, raw: Any) -> dict[str, Any]:
        return wire(json.loads(_text(raw)), self.poll_interval_ms)

    # --- the server (the worker running the work) -----------------------------------------

    async def create(
        self, owner: str, revision: str, ttl_ms: int | None = None, tid: str | None = None
    ) -> dict[str, Any]:
        """A new task for ``owner``, run by this worker (which now holds its lease); its
        ``Task``.  The ttl asked for is capped at ``max_ttl_ms`` (none asked: the cap).
        ``tid``: the id an in-process store already minted fresh (:mod:`.redis_task_link`)."""
        ttl = self.max_ttl_ms if ttl_ms is None else min(ttl_ms, self.max_ttl_ms)
        tid = tid or secrets.token_urlsafe(16)
        keys = [
            self.task_key(owner, tid),
            f"mcpi:{{{owner}}}:tasks",
            f"mcpi:{{{owner}}}:tfence",
        ]
        args = [*self._common(owner), revision, max(ttl, 1), self.worker, self.lease_ms]
        tok, raw = await self._run("create", keys, args)
        self.held[tid] = (owner, _text(tok))
        return self._view(raw)

    async def _work(self, tid: str, move: str, *args: Any) -> bool:
        held = self.held.get(tid)
        if held is None:
            return False
        owner, tok = held
        keys = [self.task_key(owner, tid)]
        done, _ = await self._run("work", keys, [*self._common(owner), tok, move, *args])
        return bool(int(done))

    async def ask(self, tid: str, key: str | None = None, request: Any = None) -> bool:
        """The work needs the requester's input: ``input_required``.  2026-07-28: ``request``
        is kept under ``key`` (``tasks/get``'s ``inputRequests``) until ``update`` answers it;
        a second question of a task already ``input_required`` is added to the first."""
        if key is None:
            return await self._work(tid, "ask")
        return await self._work(tid, "ask", key, json.dumps(request))

    async def finish(self, tid: str, ok: bool, result: Any = None) -> bool:
        """The work ended; False when the task was already terminal (cancelled, failed by a
        lost lease) or deleted: its status stays."""
        try:
            return await self._work(tid, "finish", "1" if ok else "0", json.dumps(result))
        finally:
            self.held.pop(tid, None)

    async def honour(self, tid: str) -> bool:
        """A 2026-07-28 cancellation takes effect (the work stopped)."""
        return await self._work(tid, "honour")

    async def renew(self) -> list[str]:
        """Extend the lease of every task this worker runs, in one round trip; returns the ids
        whose renewal was refused (the task is terminal, gone, or failed as lost): their work
        should stop, and they are no longer held."""
        from redis.exceptions import NoScriptError

        items = list(self.held.items())
        if not items:
            return []
        for attempt in (0, 1):
            async with self.redis.pipeline(transaction=False) as p:
                for tid, (owner, tok) in items:
                    key = self.task_key(owner, tid)
                    args = [*self._common(owner), tok, "renew", self.lease_ms]
                    p.evalsha(self._sha["work"], 1, key, *args)
                out = await p.execute(raise_on_error=False)
            if attempt or not any(isinstance(r, NoScriptError) for r in out):
                break
            self._sha["work"] = await self.redis.script_load(SCRIPTS["work"])
        refused = []
        for (tid, _), r in zip(items, out, strict=True):
            if isinstance(r, Exception):
                continue  # not refused by the store: tried again next time
            if not int(r[0]):
                refused.append(tid)
                self.held.pop(tid, None)
        return refused

    async def renew_loop(self) -> None:
        """Renew every third of the lease, until cancelled."""
        while True:
            await asyncio.sleep(self.lease_ms / 3000)
            await self.renew()

    # --- the requester's methods ----------------------------------------------------------

    async def _ask(self, owner: str, tid: str, move: str, *extra: Any) -> tuple[int, Any]:
        keys = [self.task_key(owner, tid), f"mcpi:{{{owner}}}:tended"]
        args = [*self._common(owner), move, WORKER_CHANNEL, *extra]
        code, raw = await self._run("ask", keys, args)
        if not int(code):
            raise TaskError(f"unknown task {tid!r}")
        return int(code), raw

    async def get(self, owner: str, tid: str) -> dict[str, Any]:
        """``tasks/get``; :class:`~.tasks.TaskError` for an unknown or another owner's id."""
        _, raw = await self._ask(owner, tid, "get")
        return self._view(raw)

    async def result_now(self, owner: str, tid: str) -> tuple[str, Any]:
        """``tasks/result`` (2025-11-25) once terminal: ``(status, result)``; raises
        :class:`~.tasks.NotReady` before."""
        _, raw = await self._ask(owner, tid, "get")
        v = json.loads(_text(raw))
        if v["rev"] != REV_2025:
            raise TaskError("tasks/result is not a method of the tasks extension")
        if v["status"] not in TERMINAL:
            raise NotReady(tid)
        return v["status"], v.get("res")

    async def result(
        self,
        owner: str,
        tid: str,
        on_status: Callable[[dict[str, Any]], Awaitable[Any]] | None = None,
    ) -> tuple[str, Any]:
        """``tasks/result``: waits (status messages, and a poll every :attr:`poll_s`) until
        the task is terminal on whichever worker runs it.  ``on_status`` is given the
        ``Task`` of each status message of ``tid`` while it waits (its notification)."""
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(STATUS_CHANNEL + owner)
        try:
            while True:
                try:
                    return await self.result_now(owner, tid)
                except NotReady:
                    pass
                loop = asyncio.get_running_loop()
                until = loop.time() + self.poll_s
                while (left := until - loop.time()) > 0:
                    m = await pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
                    if m is None:
                        continue
                    raw = json.loads(_text(m["data"]))
                    if raw["taskId"] == tid:
                        if on_status is not None:
                            await on_status(wire(raw, self.poll_interval_ms))
                        break
        finally:
            await pubsub.aclose()

    async def answer(self, owner: str, tid: str) -> None:
        """The requester's input arrived: an ``input_required`` task works again."""
        await self._ask(owner, tid, "answer")

    async def update(self, owner: str, tid: str, responses: dict[str, Any]) -> None:
        """``tasks/update`` (2026-07-28) from any worker: each answer removes its pending
        question; once none is left the task works again (the store's ``answer``).  The answers
        go to the runner (its worker channel, with the task's token), whose work waits on them;
        keys that name no pending question are ignored there."""
        await self._ask(owner, tid, "update", json.dumps(list(responses)), json.dumps(responses))

    async def cancel(self, owner: str, tid: str) -> dict[str, Any]:
        """``tasks/cancel`` from any worker: 2025-11-25, ``cancelled`` in Redis before the
        answer (a terminal task refused); 2026-07-28, recorded, ``{}``.  The runner is told."""
        code, raw = await self._ask(owner, tid, "cancel")
        if code == 2:
            raise TaskError(f"task {tid!r} is already {json.loads(_text(raw))['status']}")
        return self._view(raw) if _text(raw) else {}

    async def list(self, owner: str) -> list[dict[str, Any]]:
        """``tasks/list`` (2025-11-25): the owner's tasks, oldest first (each read by its own
        script, so the lost-worker rule applies; the list is a snapshot, not one step)."""
        index = f"mcpi:{{{owner}}}:tasks"
        out = []
        for tid in await self.redis.zrange(index, 0, -1):
            tid = _text(tid)
            try:
                v = await self.get(owner, tid)
            except TaskError:
                await self.redis.zrem(index, tid)
                continue
            if "ttl" in v:
                out.append(v)
        return out

    async def end_session(self, owner: str, marker_ms: int | None = None) -> None:
        """The owner's 2025-11-25 session ended: its live tasks are cancelled (their runners
        told) and every later call on them is refused, on every worker."""
        index = f"mcpi:{{{owner}}}:tasks"
        ended = f"mcpi:{{{owner}}}:tended"
        ms = marker_ms or self.max_ttl_ms
        args = [*self._common(owner), ms, WORKER_CHANNEL]
        tids = [_text(t) for t in await self.redis.zrange(index, 0, -1)]
        if not tids:
            await self.redis.set(ended, b"1", px=ms)
        for tid in tids:
            await self._run("end", [self.task_key(owner, tid), ended], args)

    async def state(self, owner: str, tid: str) -> dict[str, str]:
        """The task's raw fields after the lost-worker rule (empty when gone)."""
        flat = await self._run("state", [self.task_key(owner, tid)], self._common(owner))
        return {_text(a): _text(b) for a, b in zip(flat[::2], flat[1::2], strict=True)}
