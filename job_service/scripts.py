"""The job store's Lua scripts (job_service.store): every change of a job's state is one
script, so several job-service processes may share the store."""

from __future__ import annotations

# The bytes the jobs in an account's index hold (expired ones leave the index); `skip`: one
# job not counted (the one whose bytes change).
USED = """
local function used(index, skip)
  local total = 0
  for _, id in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    if id ~= skip then
      local b = redis.call('HGET', 'job:' .. id, 'bytes')
      if b then
        total = total + tonumber(b)
      elseif redis.call('EXISTS', 'job:' .. id) == 0 then
        redis.call('ZREM', index, id)
      end
    end
  end
  return total
end
"""

# A queue's owner joins the ring's tail when its queue was empty; `front`: at its head instead.
ENQUEUE = """
local function enqueue(owner, id, front)
  local queue = 'jobs:queue:' .. owner
  local was_empty = redis.call('LLEN', queue) == 0
  if front then redis.call('RPUSH', queue, id) else redis.call('LPUSH', queue, id) end
  if was_empty then
    redis.call('LREM', KEYS_RING, 0, owner)
    if front then redis.call('RPUSH', KEYS_RING, owner) else redis.call('LPUSH', KEYS_RING, owner) end
  end
end
"""

SUBMIT = (
    USED
    + ENQUEUE.replace("KEYS_RING", "KEYS[3]")
    + """
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local s = redis.call('HGET', 'job:' .. id, 'status')
  if s ~= 'queued' and s ~= 'running' then redis.call('SREM', KEYS[2], id) end
end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[2]) then return {0, 0} end
if tonumber(ARGV[5]) > 0 then
  local held = used(KEYS[4], '')
  if held + tonumber(ARGV[6]) > tonumber(ARGV[5]) then return {-1, held} end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 8))
redis.call('SADD', KEYS[2], ARGV[1])
enqueue(ARGV[7], ARGV[1], false)
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
redis.call('EXPIRE', KEYS[4], ARGV[4])
return {1, 0}
"""
)

# A queued or running job ended as cancelled: out of every queue and set, its request dropped;
# `error` (JSON, or '' for its owner's own DELETE) says why.
DROP = """
local function drop(id, now, ttl, error)
  local key = 'job:' .. id
  local owner = redis.call('HGET', key, 'owner')
  redis.call('HSET', key, 'status', 'cancelled', 'finished', now, 'bytes', 0)
  if error ~= '' then redis.call('HSET', key, 'error', error) end
  redis.call('HDEL', key, 'body')
  local queue = 'jobs:queue:' .. owner
  redis.call('LREM', queue, 0, id)
  if redis.call('LLEN', queue) == 0 then redis.call('LREM', 'jobs:accounts', 0, owner) end
  redis.call('LREM', 'jobs:queue', 0, id)
  redis.call('DEL', key .. ':lease')
  redis.call('SREM', 'jobs:running', id)
  redis.call('SREM', 'jobs:active:' .. owner, id)
  redis.call('EXPIRE', key, ttl)
end
"""

# Whether the job's account was disabled after the job was submitted: the auth service's
# revocation (`revoked:sub:<subject>`, unix seconds, auth_service.revocation) is at or after the
# second it was created, as a token of that second is refused by the gateway.
REVOKED = """
local function revoked(id)
  local key = 'job:' .. id
  local at = redis.call('GET', 'revoked:sub:' .. (redis.call('HGET', key, 'owner') or ''))
  return at ~= false and math.floor(tonumber(redis.call('HGET', key, 'created') or '0')) <= tonumber(at)
end
"""

# Round-robin over the ring (its head is the right end): an account at its cap of running jobs
# keeps its place at the tail; one whose queue is empty leaves the ring. A job of a disabled
# account is cancelled with ARGV[6], the reason, instead of run.
CLAIM = (
    DROP
    + REVOKED
    + """
local function claimable(id)
  if redis.call('HGET', 'job:' .. id, 'status') ~= 'queued' then return false end
  if revoked(id) then
    drop(id, ARGV[3], ARGV[5], ARGV[6])
    return false
  end
  return true
end
local function start(id)
  local key = 'job:' .. id
  redis.call('HSET', key, 'status', 'running', 'started', ARGV[3])
  redis.call('HINCRBY', key, 'attempts', 1)
  redis.call('SET', key .. ':lease', ARGV[1], 'PX', ARGV[2])
  redis.call('SADD', KEYS[2], id)
  return id
end
local running = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local owner = redis.call('HGET', 'job:' .. id, 'owner')
  if owner then running[owner] = (running[owner] or 0) + 1 end
end
local cap = tonumber(ARGV[4])
for _ = 1, redis.call('LLEN', KEYS[1]) do
  local owner = redis.call('RPOP', KEYS[1])
  if not owner then break end
  if cap > 0 and (running[owner] or 0) >= cap then
    redis.call('LPUSH', KEYS[1], owner)
  else
    local queue = 'jobs:queue:' .. owner
    local id = redis.call('RPOP', queue)
    while id and not claimable(id) do id = redis.call('RPOP', queue) end
    if id then
      if redis.call('LLEN', queue) > 0 then redis.call('LPUSH', KEYS[1], owner) end
      return start(id)
    end
  end
end
while true do
  local id = redis.call('RPOP', KEYS[3])
  if not id then return false end
  if claimable(id) then return start(id) end
end
"""
)

# A job's place among every account's: its own jobs ahead, and from each other account in the
# ring as many as get a turn before it (one more from those ahead of its account).
POSITION = """
local queue = 'jobs:queue:' .. ARGV[1]
local at = redis.call('LPOS', queue, ARGV[2])
if not at then return false end
local own = redis.call('LLEN', queue) - at - 1
local ahead, before = own, true
local ring = redis.call('LRANGE', KEYS[1], 0, -1)
for i = #ring, 1, -1 do
  if ring[i] == ARGV[1] then
    before = false
  else
    local turns = own
    if before then turns = own + 1 end
    ahead = ahead + math.min(turns, redis.call('LLEN', 'jobs:queue:' .. ring[i]))
  end
end
return ahead
"""

# 0: the job is no longer this worker's to run; a job of a disabled account is cancelled here,
# with ARGV[6], the reason.
HEARTBEAT = (
    DROP
    + REVOKED
    + """
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if revoked(ARGV[3]) then
  drop(ARGV[3], ARGV[4], ARGV[5], ARGV[6])
  return 0
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
"""
)

# ARGV[4] > 0: the account's quota, which the new bytes (ARGV[5]) must fit with its other jobs'.
# The compressed result (ARGV[6], '' when it failed) gets a key of its own (KEYS[4]), read in
# slices (READ_SLICE), with the job's lifetime.
FINISH = (
    USED
    + """
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return {0, 0} end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {0, 0} end
local owner = redis.call('HGET', KEYS[1], 'owner')
if tonumber(ARGV[4]) > 0 then
  local held = used('jobs:owner:' .. owner, ARGV[3])
  if held + tonumber(ARGV[5]) > tonumber(ARGV[4]) then return {-1, held} end
end
redis.call('HSET', KEYS[1], 'bytes', ARGV[5], unpack(ARGV, 7))
if ARGV[6] ~= '' then redis.call('SET', KEYS[4], ARGV[6], 'EX', ARGV[2]) end
redis.call('HDEL', KEYS[1], 'body')
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[3])
redis.call('SREM', 'jobs:active:' .. owner, ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, 0}
"""
)

CANCEL = (
    DROP
    + """
local s = redis.call('HGET', KEYS[1], 'status')
if s ~= 'queued' and s ~= 'running' then return s or false end
drop(ARGV[1], ARGV[2], ARGV[3], '')
return 'cancelled'
"""
)

RELEASE = (
    ENQUEUE.replace("KEYS_RING", "KEYS[4]")
    + """
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'status', 'queued')
redis.call('HINCRBY', KEYS[1], 'attempts', -1)
redis.call('SREM', KEYS[3], ARGV[2])
enqueue(redis.call('HGET', KEYS[1], 'owner'), ARGV[2], true)
return 1
"""
)

REAP = (
    ENQUEUE.replace("KEYS_RING", "KEYS[2]")
    + """
local moved = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = 'job:' .. id
  if redis.call('EXISTS', key .. ':lease') == 0 then
    redis.call('SREM', KEYS[1], id)
    if redis.call('HGET', key, 'status') == 'running' then
      if tonumber(redis.call('HGET', key, 'attempts') or '0') >= tonumber(ARGV[2]) then
        redis.call('HSET', key, 'status', 'failed', 'finished', ARGV[1], 'error', ARGV[4], 'bytes', 0)
        redis.call('HDEL', key, 'body')
        redis.call('SREM', 'jobs:active:' .. redis.call('HGET', key, 'owner'), id)
        redis.call('EXPIRE', key, ARGV[3])
      else
        redis.call('HSET', key, 'status', 'queued')
        enqueue(redis.call('HGET', key, 'owner'), id, true)
      end
      table.insert(moved, id)
    end
  end
end
return moved
"""
)

# One slice of a result (KEYS[1], bytes ARGV[1] to ARGV[2]), its reader's lease (ticket ARGV[4]
# in KEYS[2], common.admission.TAKE_SLOT's sorted set) renewed for ARGV[3] seconds as it goes.
READ_SLICE = """
local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], 'XX', tonumber(t[1]) + tonumber(ARGV[3]), ARGV[4])
return redis.call('GETRANGE', KEYS[1], ARGV[1], ARGV[2])
"""
