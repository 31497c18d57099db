"""The Lua scripts of the lease protocol's store in Redis, and the names of its keys and channels.

Each operation of :class:`.redis_store.RedisStore` that must be atomic is one script here (one
round trip, one slot: every key a script touches carries the session's hash tag ``{S}``), named
as the model names the operation (``claim``, ``renew``, ``write``, ``release``; and ``end``,
``route``, ``open``).  The key layout they share is :mod:`.redis_store`'s module text.  Kept
apart from the Python that calls them because they are one thing of their own: the text Redis
runs, read against the lease model's actions (``model/lease_actions.py``;
``tests/test_lease_agreement.py`` runs them against the model), with the comment above each stating its KEYS, ARGV and replies.
"""

from __future__ import annotations

__all__ = [
    "BROADCAST",
    "CLAIM",
    "END",
    "OPEN",
    "READER_TTL_MS",
    "RELEASE",
    "RENEW",
    "ROUTE",
    "SCRIPTS",
    "SESSIONS",
    "WORKER_CHANNEL",
    "WRITE",
]

#: claim(w, I): KEYS session, fence, claim[I], and optionally the session's in-flight set and
#: its set of streams; ARGV worker, ttl ms, hold (1: keep the claim; 0: an answer given at
#: once, admitted and finished in one step, so only the check), session idle ms, then
#: optionally the in-flight cap (0: none) and the event stream this request will write (its key,
#: named in the session's set of streams so a resume can tell it from one that never was).
#: Returns the token, 0 for a duplicate, -1 for an ended session, -2 when the session already
#: has ``cap`` claims held (counted in the set, each until its lease runs out).  The fence and
#: the sets live as long as the session record (its idle TTL).
CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local idle = tonumber(ARGV[4])
if idle > 0 then redis.call('PEXPIRE', KEYS[1], idle) end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if ARGV[3] == '0' then return 1 end
local cap = tonumber(ARGV[5] or '0')
if cap > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  if redis.call('ZCARD', KEYS[4]) >= cap then return -2 end
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), KEYS[3])
  if idle > 0 then redis.call('PEXPIRE', KEYS[4], idle) end
end
local tok = redis.call('INCR', KEYS[2])
if idle > 0 then redis.call('PEXPIRE', KEYS[2], idle) end
redis.call('SET', KEYS[3], tok .. ':' .. ARGV[1], 'PX', ARGV[2])
if ARGV[6] and ARGV[6] ~= '' then
  redis.call('SADD', KEYS[5], ARGV[6])
  if idle > 0 then redis.call('PEXPIRE', KEYS[5], idle) end
end
return tok
"""

#: a refusal is counted in ``refused`` while the session exists (KEYS[2] refused, KEYS[3]
#: session), so an ended session leaves no counter behind
_REFUSE = """
local function refuse()
  local ttl = redis.call('PTTL', KEYS[3])
  if ttl ~= -2 then
    redis.call('INCR', KEYS[2])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
  end
  return 0
end
"""

#: renew(w, I, tok): KEYS claim[I], refused, session, optionally the in-flight set (the claim's
#: count there lasts as long as its lease); ARGV tok:w, ttl ms.  1 ok, 0 lost.
RENEW = (
    _REFUSE
    + """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if KEYS[4] then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('ZADD', KEYS[4], 'XX', now + tonumber(ARGV[2]), KEYS[1])
  end
  return 1
end
return refuse()
"""
)

#: write(w, I, tok, ...): KEYS claim[I], refused, session, target; ARGV tok:w, kind, then the
#: kind's arguments: 'set' value ttl-ms (register a waiter), 'del' (withdraw it), 'publish'
#: channel message (the target key is unused then), 'xadd' entry-id data end ttl-ms (append an
#: event to a POST stream's Redis stream, KEYS[4], the first one also naming it in the
#: session's set of streams, KEYS[5]; with a cap, ARGV[7], the bytes of every event kept in the
#: session are counted in KEYS[6], and an event that would go over the cap is not kept: -3).
#: 1 written, 0 refused (stale owner), -3 over the session's event budget.
WRITE = (
    _REFUSE
    + """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return refuse() end
if ARGV[2] == 'set' then
  redis.call('SET', KEYS[4], ARGV[3], 'PX', ARGV[4])
elseif ARGV[2] == 'del' then
  redis.call('DEL', KEYS[4])
elseif ARGV[2] == 'publish' then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
elseif ARGV[2] == 'xadd' then
  local cap = tonumber(ARGV[7] or '0')
  if cap > 0 then
    local used = redis.call('INCRBY', KEYS[6], #ARGV[4])
    redis.call('PEXPIRE', KEYS[6], ARGV[6])
    if used > cap then
      redis.call('DECRBY', KEYS[6], #ARGV[4])
      return -3
    end
  end
  redis.call('XADD', KEYS[4], ARGV[3], 'd', ARGV[4], 'e', ARGV[5])
  redis.call('PEXPIRE', KEYS[4], ARGV[6])
  if ARGV[3] == '0-1' then
    redis.call('SADD', KEYS[5], KEYS[4])
    redis.call('PEXPIRE', KEYS[5], ARGV[6])
  end
end
return 1
"""
)

#: release(w, I, tok): KEYS claim[I], refused, session, optionally the in-flight set; ARGV
#: tok:w.  Compare-and-delete: 1 released, 0 refused (the claim is another's, or gone).
RELEASE = (
    _REFUSE
    + """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if KEYS[4] then redis.call('ZREM', KEYS[4], KEYS[1]) end
  return 1
end
return refuse()
"""
)

#: end(S): KEYS session, fence, refused, streams, in-flight set, event bytes.  1 if the session existed.  The session's
#: event streams are named in its set of streams, under the same hash tag (so in the same slot;
#: they are not declared in KEYS, being known only from the set).
END = """
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
if KEYS[5] then redis.call('DEL', KEYS[5]) end
if KEYS[6] then redis.call('DEL', KEYS[6]) end
for _, k in ipairs(redis.call('SMEMBERS', KEYS[4])) do redis.call('DEL', k) end
redis.call('DEL', KEYS[4])
return existed
"""

#: route(I, message): KEYS claim[I]; ARGV channel prefix, message.  Publishes "<claim>|<message>" to the worker that
#: holds the claim; returns the holder's value ('' when nobody holds it).
ROUTE = """
local v = redis.call('GET', KEYS[1])
if not v then return '' end
local w = string.match(v, '^%d+:(.*)$')
redis.call('PUBLISH', ARGV[1] .. w, v .. '|' .. ARGV[2])
return v
"""

#: open(S): KEYS the set of every session (one key of its own, outside any session's slot);
#: ARGV S, cap (0: none), session idle ms (0: none).  Each session counts until its idle
#: expiry (refreshed by the workers that serve it); 1 counted, 0 refused (``cap`` reached).
OPEN = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local cap = tonumber(ARGV[2])
if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return 0 end
local idle = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], idle > 0 and (now + idle) or '+inf', ARGV[1])
return 1
"""

SCRIPTS = {
    "open": OPEN,
    "claim": CLAIM,
    "renew": RENEW,
    "write": WRITE,
    "release": RELEASE,
    "end": END,
    "route": ROUTE,
}
BROADCAST = "mcpi:all"
#: how long a resumed stream's reader keeps its claim without refreshing it
READER_TTL_MS = 30_000
#: the set of every open session, with its idle expiry as score (the session cap's count)
SESSIONS = "mcpi:sessions"
WORKER_CHANNEL = "mcpi:w:"
