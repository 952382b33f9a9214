"""Jobs in the state Redis: each job a hash (`job:<id>`), the running set, and per account a
queue (`jobs:queue:<owner>`), the active set (its queued and running jobs, counted against the
tier's limit) and an index by creation time (its listing and its bytes).

Fairness between accounts (issue 29: three heavy jobs of one account held both runners while
another account's 5-stop job waited 62.6 s): the accounts with queued jobs form a ring
(`jobs:accounts`), and a claim takes the next job of the next account in it, round-robin, never
of an account that already runs `running_per_account` jobs (JOB_RUNNING_PER_ACCOUNT, below the
runners' count, so one account's jobs always leave a runner for another's).

Room: each job's hash keeps `bytes`, what it holds in the store (its compressed request while it
waits or runs, then its compressed result); an account's jobs together may hold at most its
tier's quota (`OverQuota`: a submission refused, a result not kept).

Every change of state is one Lua script, so several job-service processes may share the store:
a job is claimed by one of them only, and a lease (`job:<id>:lease`, renewed by the runner's
heartbeat) tells a running job from one whose process died. Finished jobs expire after the
result's lifetime. Redis unreachable, or refusing a write, is a 503 (`ServiceUnavailable`)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import orjson
from redis.asyncio import Redis

from common.errors import JobStoreFull, ServiceUnavailable
from common.redis import ResilientRedis
from job_service.model import QUEUED, Account, Job, Outcome, StoredRequest, compress, decompress

T = TypeVar("T")
# What a script takes as an argument.
Arg = bytes | str | int | float
# Jobs queued before the per-account queues (an upgrade): claimed after every account's.
QUEUE = "jobs:queue"
RING = "jobs:accounts"
RUNNING_SET = "jobs:running"
# How long the memory figure of the state Redis is trusted before it is asked again.
MEMORY_CHECK_SECONDS = 1.0
LISTED = 100

# The bytes the jobs in an account's index hold (expired ones leave the index); `skip`: one
# job not counted (the one whose bytes change).
_USED = """
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
_ENQUEUE = """
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

_SUBMIT = (
    _USED
    + _ENQUEUE.replace("KEYS_RING", "KEYS[3]")
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

# Round-robin over the ring (its head is the right end): an account at its cap of running jobs
# keeps its place at the tail; one whose queue is empty leaves the ring.
_CLAIM = """
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
    while id and redis.call('HGET', 'job:' .. id, 'status') ~= 'queued' do id = redis.call('RPOP', queue) end
    if id then
      if redis.call('LLEN', queue) > 0 then redis.call('LPUSH', KEYS[1], owner) end
      return start(id)
    end
  end
end
while true do
  local id = redis.call('RPOP', KEYS[3])
  if not id then return false end
  if redis.call('HGET', 'job:' .. id, 'status') == 'queued' then return start(id) end
end
"""

# A job's place among every account's: its own jobs ahead, and from each other account in the
# ring as many as get a turn before it (one more from those ahead of its account).
_POSITION = """
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

_HEARTBEAT = """
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
"""

# ARGV[4] > 0: the account's quota, which the new bytes (ARGV[5]) must fit with its other jobs'.
_FINISH = (
    _USED
    + """
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then return {0, 0} end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {0, 0} end
local owner = redis.call('HGET', KEYS[1], 'owner')
if tonumber(ARGV[4]) > 0 then
  local held = used('jobs:owner:' .. owner, ARGV[3])
  if held + tonumber(ARGV[5]) > tonumber(ARGV[4]) then return {-1, held} end
end
redis.call('HSET', KEYS[1], 'bytes', ARGV[5], unpack(ARGV, 6))
redis.call('HDEL', KEYS[1], 'body')
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[3])
redis.call('SREM', 'jobs:active:' .. owner, ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {1, 0}
"""
)

_CANCEL = """
local s = redis.call('HGET', KEYS[1], 'status')
if s ~= 'queued' and s ~= 'running' then return s or false end
local owner = redis.call('HGET', KEYS[1], 'owner')
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'finished', ARGV[2], 'bytes', 0)
redis.call('HDEL', KEYS[1], 'body')
local queue = 'jobs:queue:' .. owner
redis.call('LREM', queue, 0, ARGV[1])
if redis.call('LLEN', queue) == 0 then redis.call('LREM', KEYS[5], 0, owner) end
redis.call('LREM', KEYS[3], 0, ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('SREM', 'jobs:active:' .. owner, ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 'cancelled'
"""

_RELEASE = (
    _ENQUEUE.replace("KEYS_RING", "KEYS[4]")
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

_REAP = (
    _ENQUEUE.replace("KEYS_RING", "KEYS[2]")
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

STATE_FIELDS = ("owner", "operation", "status", "created", "started", "finished", "attempts", "error", "result_type")


class OverQuota(Exception):
    """The account's jobs already hold `used` bytes: `needed` more would pass its quota."""

    def __init__(self, used: int, needed: int) -> None:
        super().__init__(f"{used} bytes held, {needed} more asked")
        self.used = used
        self.needed = needed


def job_key(job_id: str) -> str:
    return f"job:{job_id}"


def lease_key(job_id: str) -> str:
    return f"job:{job_id}:lease"


def active_key(owner: str) -> str:
    return f"jobs:active:{owner}"


def owner_key(owner: str) -> str:
    return f"jobs:owner:{owner}"


def interrupted_error(attempts: int) -> dict[str, Any]:
    """The reason a job fails when its process died on every attempt."""
    return {
        "status": 503,
        "code": ServiceUnavailable.code,
        "type": ServiceUnavailable.type,
        "title": "The job was interrupted",
        "detail": f"the job was interrupted {attempts} times (its process stopped while running it) and was given up",
    }


class JobStore:
    def __init__(
        self,
        redis: ResilientRedis,
        *,
        result_ttl_seconds: int,
        max_memory_fraction: float = 0.7,
        running_per_account: int = 0,
    ) -> None:
        """`running_per_account`: jobs one account may have running at once (0: no cap)."""
        self.redis = redis
        self.result_ttl_seconds = result_ttl_seconds
        self.max_memory_fraction = max_memory_fraction
        self.running_per_account = running_per_account
        client = redis.client
        self._position = client.register_script(_POSITION)
        self._submit = client.register_script(_SUBMIT)
        self._claim = client.register_script(_CLAIM)
        self._heartbeat = client.register_script(_HEARTBEAT)
        self._finish = client.register_script(_FINISH)
        self._cancel = client.register_script(_CANCEL)
        self._release = client.register_script(_RELEASE)
        self._reap = client.register_script(_REAP)
        self._memory_checked_at = -MEMORY_CHECK_SECONDS
        self._memory_full = False

    async def _call(self, operation: Callable[[Redis], Awaitable[T]]) -> T:
        """The operation's answer; 503 when Redis did not give one (down, or refusing writes)."""
        missing = object()
        answer = await self.redis.call(operation, missing)
        if answer is missing:
            raise ServiceUnavailable("the job store is unavailable, try again shortly")
        return answer  # type: ignore[return-value]  # not the sentinel: the operation's own answer

    async def check_room(self) -> None:
        """503 when the state Redis is fuller than its share for jobs allows."""
        now = time.monotonic()
        if now - self._memory_checked_at >= MEMORY_CHECK_SECONDS:
            info: dict[str, Any] = await self._call(lambda r: r.info("memory"))
            limit = int(info.get("maxmemory", 0))
            self._memory_full = limit > 0 and int(info.get("used_memory", 0)) > limit * self.max_memory_fraction
            self._memory_checked_at = now
        if self._memory_full:
            raise JobStoreFull("the job store is full until older results expire, try again later")

    async def submit(
        self, job_id: str, account: Account, request: StoredRequest, limit: int, quota_bytes: int = 0
    ) -> bool:
        """Stores and queues the job; False when the account already has `limit` active jobs,
        OverQuota when its request would take the account's jobs past `quota_bytes` (0: none)."""
        created = time.time()
        body = compress(request.body)
        query = orjson.dumps(request.query)
        fields: dict[str, Arg] = {
            "owner": account.subject,
            "tier": account.tier,
            "operation": request.operation,
            "status": QUEUED,
            "created": repr(created),
            "attempts": 0,
            "content_type": request.content_type,
            "disposition": request.disposition,
            "paid": int(request.paid),
            "query": query,
            "body": body,
            "bytes": len(body) + len(query),
        }
        keys = [job_key(job_id), active_key(account.subject), RING, owner_key(account.subject)]
        args: list[Arg] = [job_id, limit, repr(created), self.result_ttl_seconds * 2, quota_bytes, fields["bytes"],
                           account.subject, *flatten(fields)]  # fmt: skip
        stored, used = await self._call(lambda _: self._submit(keys=keys, args=args))
        if int(stored) == -1:
            raise OverQuota(int(used), int(fields["bytes"]))
        return bool(stored)

    async def get(self, job_id: str) -> Job | None:
        values: list[Any] = await self._call(lambda r: r.hmget(job_key(job_id), STATE_FIELDS))
        if values[0] is None:
            return None
        job = job_from_fields(job_id, dict(zip(STATE_FIELDS, values, strict=True)))
        if job.status == QUEUED:
            position: Any = await self._call(lambda _: self._position(keys=[RING], args=[job.owner, job_id]))
            if position is None:  # queued before the per-account queues (an upgrade)
                at: Any = await self._call(lambda r: r.lpos(QUEUE, job_id))
                length: Any = await self._call(lambda r: r.llen(QUEUE))
                position = None if at is None else int(length) - int(at) - 1
            if position is not None:
                job = replace_position(job, int(position))
        return job

    async def result(self, job_id: str) -> bytes | None:
        stored: Any = await self._call(lambda r: r.hget(job_key(job_id), "result"))
        return decompress(stored) if stored is not None else None

    async def request(self, job_id: str) -> tuple[Account, StoredRequest] | None:
        """The stored request of a job that has not finished (its body is dropped at the end)."""
        names = ("owner", "tier", "operation", "content_type", "disposition", "paid", "query", "body")
        values: list[Any] = await self._call(lambda r: r.hmget(job_key(job_id), names))
        found = dict(zip(names, values, strict=True))
        if found["body"] is None:
            return None
        text = {k: (v or b"").decode() for k, v in found.items() if k not in ("query", "body")}
        query = [(str(k), str(v)) for k, v in orjson.loads(found["query"] or b"[]")]
        stored = StoredRequest(text["operation"], text["content_type"], decompress(found["body"]), query,
                               text["disposition"], text["paid"] == "1")  # fmt: skip
        return Account(text["owner"], text["tier"]), stored

    async def jobs_of(self, owner: str) -> list[Job]:
        """The account's jobs, newest first (at most LISTED); expired ones leave the index."""
        found: list[Any] = await self._call(lambda r: r.zrevrange(owner_key(owner), 0, LISTED - 1))
        ids = [i.decode() for i in found]
        jobs = [await self.get(job_id) for job_id in ids]
        gone = [job_id for job_id, job in zip(ids, jobs, strict=True) if job is None]
        if gone:
            await self._call(lambda r: r.zrem(owner_key(owner), *gone))
        return [job for job in jobs if job is not None]

    async def claim(self, worker: str, lease_seconds: float) -> str | None:
        """The next queued job, now running under this worker's lease; None when none waits."""
        args: list[Arg] = [worker, int(lease_seconds * 1000), repr(time.time()), self.running_per_account]
        claimed = await self._call(lambda _: self._claim(keys=[RING, RUNNING_SET, QUEUE], args=args))
        return claimed.decode() if isinstance(claimed, bytes) else None

    async def heartbeat(self, job_id: str, worker: str, lease_seconds: float) -> bool | None:
        """True: the lease is renewed. False: the job is no longer this worker's to run
        (cancelled, or re-queued after the lease ran out). None: Redis did not answer."""
        keys = [job_key(job_id), lease_key(job_id)]
        args: list[Arg] = [worker, int(lease_seconds * 1000)]
        answer = await self.redis.call(lambda _: self._heartbeat(keys=keys, args=args), None)
        return None if answer is None else bool(answer)

    async def finish(self, job_id: str, worker: str, outcome: Outcome, quota_bytes: int = 0) -> bool:
        """Records the outcome if the job is still this worker's; False otherwise. OverQuota
        (nothing recorded) when its result would take the account's jobs past `quota_bytes`."""
        fields: dict[str, Arg] = {"finished": repr(time.time())}
        if outcome.result is not None:
            result = compress(outcome.result)
            fields.update(status="succeeded", result=result, result_type=outcome.result_type)
        else:
            result = b""
            fields.update(status="failed", error=orjson.dumps(outcome.error))
        keys = [job_key(job_id), lease_key(job_id), RUNNING_SET]
        args: list[Arg] = [worker, self.result_ttl_seconds, job_id, quota_bytes, len(result), *flatten(fields)]
        finished, held = await self._call(lambda _: self._finish(keys=keys, args=args))
        if int(finished) == -1:
            raise OverQuota(int(held), len(result))
        return bool(finished)

    async def cancel(self, job_id: str) -> str | None:
        """Cancels a queued or running job: "cancelled", or the status it had already ended with."""
        keys = [job_key(job_id), lease_key(job_id), QUEUE, RUNNING_SET, RING]
        args: list[Arg] = [job_id, repr(time.time()), self.result_ttl_seconds]
        answer = await self._call(lambda _: self._cancel(keys=keys, args=args))
        return answer.decode() if isinstance(answer, bytes) else answer

    async def delete(self, job_id: str, owner: str) -> None:
        """Removes a finished job and its result."""
        await self._call(lambda r: r.delete(job_key(job_id)))
        await self._call(lambda r: r.zrem(owner_key(owner), job_id))

    async def release(self, job_id: str, worker: str) -> bool:
        """Hands a running job back to the queue's front at a graceful stop, not counted as an
        attempt; False when it was no longer this worker's."""
        keys = [job_key(job_id), lease_key(job_id), RUNNING_SET, RING]
        return bool(await self._call(lambda _: self._release(keys=keys, args=[worker, job_id])))

    async def reap(self, max_attempts: int) -> list[str]:
        """Jobs whose lease ran out (their process died): queued again, or failed once they
        were started `max_attempts` times. Returns their ids."""
        args: list[Arg] = [
            repr(time.time()),
            max_attempts,
            self.result_ttl_seconds,
            orjson.dumps(interrupted_error(max_attempts)),
        ]
        moved = await self._call(lambda _: self._reap(keys=[RUNNING_SET, RING], args=args))
        return [job_id.decode() for job_id in moved]


def flatten(fields: Mapping[str, Arg]) -> list[Arg]:
    return [item for pair in fields.items() for item in pair]


def number(raw: bytes | None) -> float | None:
    return float(raw) if raw else None


def job_from_fields(job_id: str, fields: dict[str, bytes | None]) -> Job:
    text = {k: (v or b"").decode() for k, v in fields.items() if k != "error"}
    error = orjson.loads(fields["error"]) if fields["error"] else None
    return Job(
        id=job_id,
        owner=text["owner"],
        operation=text["operation"],
        status=text["status"],
        created=float(text["created"] or 0),
        started=number(fields["started"]),
        finished=number(fields["finished"]),
        attempts=int(text["attempts"] or 0),
        error=error,
        result_type=text["result_type"],
    )


def replace_position(job: Job, position: int) -> Job:
    return replace(job, queue_position=max(0, position))
