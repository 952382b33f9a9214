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
result's lifetime. Redis unreachable, or refusing a write, is a 503 (`ServiceUnavailable`).

Results (issue 55: eight parallel reads of a 44 MB result took the job service from 108 to
828 MB): a result's compressed bytes have a key of their own (`job:<id>:result`), read in
slices of RESULT_SLICE_BYTES and inflated as they are written to the client, so a reader holds
a slice, never the result; an account has at most its tier's reads at once (`start_read`, a
lease per reader like common.admission's heavy slots, so a crashed reader frees its own).
Before a result is stored it must fit the store's share of the state Redis (`check_room`)."""

from __future__ import annotations

import secrets
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import orjson
from redis.asyncio import Redis

from common.admission import TAKE_SLOT
from common.errors import JobStoreFull, ServiceUnavailable, Unauthorized
from common.redis import ResilientRedis
from job_service import scripts
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
# What one reader asks Redis for at a time (compressed) and writes at a time (inflated).
RESULT_SLICE_BYTES = 64 << 10
RESULT_CHUNK_BYTES = 64 << 10
# A reader's lease, renewed at every slice: a reader that died frees its place after it.
READ_LEASE_SECONDS = 60

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


def result_key(job_id: str) -> str:
    return f"job:{job_id}:result"


def reads_key(owner: str) -> str:
    return f"jobs:reads:{owner}"


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


# Why a job of a disabled account was cancelled (its tokens are refused with the same 401).
DISABLED_ERROR = {
    "status": 401,
    "code": Unauthorized.code,
    "type": Unauthorized.type,
    "title": "The account was disabled",
    "detail": "the job was cancelled: its account was disabled after the job was submitted",
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
        self._position = client.register_script(scripts.POSITION)
        self._submit = client.register_script(scripts.SUBMIT)
        self._claim = client.register_script(scripts.CLAIM)
        self._heartbeat = client.register_script(scripts.HEARTBEAT)
        self._finish = client.register_script(scripts.FINISH)
        self._cancel = client.register_script(scripts.CANCEL)
        self._release = client.register_script(scripts.RELEASE)
        self._reap = client.register_script(scripts.REAP)
        self._take_read = client.register_script(TAKE_SLOT)
        self._read_slice = client.register_script(scripts.READ_SLICE)
        self._memory_checked_at = -MEMORY_CHECK_SECONDS
        self._memory = (0, 0)  # used_memory and maxmemory of the state Redis, as last asked

    async def _call(self, operation: Callable[[Redis], Awaitable[T]]) -> T:
        """The operation's answer; 503 when Redis did not give one (down, or refusing writes)."""
        missing = object()
        answer = await self.redis.call(operation, missing)
        if answer is missing:
            raise ServiceUnavailable("the job store is unavailable, try again shortly")
        return answer  # type: ignore[return-value]  # not the sentinel: the operation's own answer

    async def check_room(self, adding: int = 0) -> None:
        """503 when the state Redis is fuller than its share for jobs allows, or would be with
        `adding` more bytes (a result about to land: asked afresh, not from the last second's
        figure, since several results may land within it)."""
        now = time.monotonic()
        if adding or now - self._memory_checked_at >= MEMORY_CHECK_SECONDS:
            info: dict[str, Any] = await self._call(lambda r: r.info("memory"))
            self._memory = int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))
            self._memory_checked_at = now
        used, limit = self._memory
        share = limit * self.max_memory_fraction
        if not limit or used + adding <= share:
            return
        if not adding:
            raise JobStoreFull("the job store is full until older results expire, try again later")
        raise JobStoreFull(
            f"the job's result ({adding} bytes compressed) would take the job store past its share of the "
            f"state store ({self.max_memory_fraction:.0%} of its memory, {int(share - min(used, share))} bytes "
            "left): the job failed, submit it again once older results have expired"
        )

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
            "paid": request.paid,
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

    async def start_read(self, owner: str, limit: int) -> str | None:
        """A ticket for one read of the account's results; None when `limit` are under way."""
        args: list[Arg] = [limit, READ_LEASE_SECONDS, secrets.token_hex(8)]
        taken = await self._call(lambda _: self._take_read(keys=[reads_key(owner)], args=args))
        return str(args[2]) if int(taken) else None

    async def end_read(self, owner: str, ticket: str) -> None:
        await self.redis.call(lambda r: r.zrem(reads_key(owner), ticket), 0)

    async def result(self, job_id: str, owner: str, ticket: str) -> AsyncIterator[bytes]:
        """The result, inflated in chunks of at most RESULT_CHUNK_BYTES as it is read."""
        inflater = zlib.decompressobj()
        async for piece in self._compressed(job_id, owner, ticket):
            while piece:
                chunk = inflater.decompress(piece, RESULT_CHUNK_BYTES)
                piece = inflater.unconsumed_tail
                if chunk:
                    yield chunk
        if not inflater.eof:
            raise ServiceUnavailable("the job's result ended early: it expired or was deleted while it was read")

    async def _compressed(self, job_id: str, owner: str, ticket: str) -> AsyncIterator[bytes]:
        keys = [result_key(job_id), reads_key(owner)]
        start = 0
        while piece := await self._slice(keys, start, ticket):
            yield piece
            start += len(piece)
        if not start:  # kept whole in the job's hash before results had their own key
            stored: Any = await self._call(lambda r: r.hget(job_key(job_id), "result"))
            if stored:
                yield stored

    async def _slice(self, keys: list[str], start: int, ticket: str) -> bytes:
        args: list[Arg] = [start, start + RESULT_SLICE_BYTES - 1, READ_LEASE_SECONDS, ticket]
        return bytes(await self._call(lambda _: self._read_slice(keys=keys, args=args)))

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
                               text["disposition"], int(text["paid"] or 0))  # fmt: skip
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
        args: list[Arg] = [worker, int(lease_seconds * 1000), repr(time.time()), self.running_per_account,
                           *self._disabled_args()[1:]]  # fmt: skip
        claimed = await self._call(lambda _: self._claim(keys=[RING, RUNNING_SET, QUEUE], args=args))
        return claimed.decode() if isinstance(claimed, bytes) else None

    async def heartbeat(self, job_id: str, worker: str, lease_seconds: float) -> bool | None:
        """True: the lease is renewed. False: the job is no longer this worker's to run
        (cancelled, its account disabled, or re-queued after the lease ran out). None: Redis
        did not answer."""
        keys = [job_key(job_id), lease_key(job_id)]
        args: list[Arg] = [worker, int(lease_seconds * 1000), job_id, *self._disabled_args()]
        answer = await self.redis.call(lambda _: self._heartbeat(keys=keys, args=args), None)
        return None if answer is None else bool(answer)

    def _disabled_args(self) -> list[Arg]:
        """What a script needs to cancel a job of a disabled account: now, the lifetime, why."""
        return [repr(time.time()), self.result_ttl_seconds, orjson.dumps(DISABLED_ERROR)]

    async def finish(self, job_id: str, worker: str, outcome: Outcome, quota_bytes: int = 0) -> bool:
        """Records the outcome if the job is still this worker's; False otherwise. OverQuota
        (nothing recorded) when its result would take the account's jobs past `quota_bytes`,
        JobStoreFull when it would take the store past its share of the state Redis."""
        fields: dict[str, Arg] = {"finished": repr(time.time())}
        if outcome.result is not None:
            result = compress(outcome.result)
            await self.check_room(len(result))
            fields.update(status="succeeded", result_type=outcome.result_type)
        else:
            result = b""
            fields.update(status="failed", error=orjson.dumps(outcome.error))
        keys = [job_key(job_id), lease_key(job_id), RUNNING_SET, result_key(job_id)]
        args: list[Arg] = [worker, self.result_ttl_seconds, job_id, quota_bytes, len(result), result,
                           *flatten(fields)]  # fmt: skip
        finished, held = await self._call(lambda _: self._finish(keys=keys, args=args))
        if int(finished) == -1:
            raise OverQuota(int(held), len(result))
        return bool(finished)

    async def cancel(self, job_id: str) -> str | None:
        """Cancels a queued or running job: "cancelled", or the status it had already ended with."""
        args: list[Arg] = [job_id, repr(time.time()), self.result_ttl_seconds]
        answer = await self._call(lambda _: self._cancel(keys=[job_key(job_id)], args=args))
        return answer.decode() if isinstance(answer, bytes) else answer

    async def delete(self, job_id: str, owner: str) -> None:
        """Removes a finished job and its result."""
        await self._call(lambda r: r.delete(job_key(job_id), result_key(job_id)))
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
