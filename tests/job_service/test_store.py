"""The job store on a real Redis: submit within the limit, claim under a lease, heartbeat,
finish, cancel, re-queue after a lost lease, expiry, ownership, and Redis down as a 503."""

from __future__ import annotations

import asyncio

import orjson
import pytest
import redis

from common.errors import JobStoreFull, NotFound, ServiceUnavailable, TooManyJobs
from common.redis import ResilientRedis
from common.tiers import parse_tier_limits
from job_service.jobs import Jobs, Limits
from job_service.model import Account, Outcome, StoredRequest
from job_service.store import JobStore, active_key, job_key, lease_key, result_key

ALICE = Account("alice", "standard")
BOB = Account("bob", "standard")
REQUEST = StoredRequest("optimize/stops", "application/json", b'[{"lat": 60.17, "lon": 24.94}]', [("vehicle", "car")])


async def submitted(store: JobStore, job_id: str, account: Account = ALICE, limit: int = 5) -> None:
    assert await store.submit(job_id, account, REQUEST, limit)


async def test_a_submitted_job_is_queued_with_its_request(store: JobStore) -> None:
    await submitted(store, "a" * 32)
    await submitted(store, "b" * 32)
    job = await store.get("a" * 32)
    assert job is not None and (job.status, job.owner, job.operation, job.attempts) == (
        "queued",
        "alice",
        "optimize/stops",
        0,
    )
    assert job.queue_position == 0  # the first submitted runs first
    second = await store.get("b" * 32)
    assert second is not None and second.queue_position == 1
    assert await store.request("a" * 32) == (ALICE, REQUEST)


async def test_the_limit_counts_queued_and_running_jobs_of_one_account(store: JobStore) -> None:
    await submitted(store, "1" * 32, limit=2)
    await submitted(store, "2" * 32, limit=2)
    assert not await store.submit("3" * 32, ALICE, REQUEST, 2)
    assert await store.get("3" * 32) is None
    assert await store.submit("4" * 32, BOB, REQUEST, 2)  # another account has its own count
    assert await store.claim("w", 10) == "1" * 32
    assert not await store.submit("3" * 32, ALICE, REQUEST, 2)  # running counts too
    assert await store.cancel("2" * 32) == "cancelled"
    assert await store.submit("3" * 32, ALICE, REQUEST, 2)


async def test_jobs_over_the_tier_limit_are_refused_with_retry_after(store: JobStore) -> None:
    jobs = Jobs(store, Limits(parse_tier_limits("JOB_LIMITS", "demo=1,standard=2"), retry_after_seconds=7))
    for _ in range(2):
        await jobs.submit(ALICE, REQUEST)
    with pytest.raises(TooManyJobs) as refused:
        await jobs.submit(ALICE, REQUEST)
    assert refused.value.status == 429 and refused.value.headers["Retry-After"] == "7"
    assert "standard tier may have 2 jobs" in refused.value.detail and "; " not in refused.value.detail
    await jobs.submit(Account("carol", "demo"), REQUEST)
    with pytest.raises(TooManyJobs):  # an unknown tier gets the smallest limit
        await jobs.submit(Account("carol", "gold"), REQUEST)


async def test_a_claimed_job_runs_under_a_lease_renewed_by_heartbeats(store: JobStore, redis_url: str) -> None:
    await submitted(store, "c" * 32)
    assert await store.claim("worker-1", 0.5) == "c" * 32
    assert await store.claim("worker-2", 0.5) is None  # one job, one worker
    job = await store.get("c" * 32)
    assert job is not None and job.status == "running" and job.attempts == 1 and job.started is not None
    for _ in range(3):
        await asyncio.sleep(0.3)
        assert await store.heartbeat("c" * 32, "worker-1", 0.5) is True
    assert await store.heartbeat("c" * 32, "worker-2", 0.5) is False  # not its lease
    assert await store.reap(3) == []  # the lease is alive


async def test_a_job_whose_lease_ran_out_is_queued_again_then_failed_with_the_reason(store: JobStore) -> None:
    await submitted(store, "d" * 32)
    for attempt in (1, 2):
        assert await store.claim(f"worker-{attempt}", 0.1) == "d" * 32
        await asyncio.sleep(0.2)
        assert await store.reap(2) == ["d" * 32]
        job = await store.get("d" * 32)
        assert job is not None and job.attempts == attempt
        if attempt == 1:
            assert job.status == "queued"
            assert await store.heartbeat("d" * 32, "worker-1", 1) is False  # the old process lost it
    job = await store.get("d" * 32)
    assert job is not None and job.status == "failed" and job.error is not None
    assert "interrupted 2 times" in job.error["detail"]
    assert await store.submit("e" * 32, ALICE, REQUEST, 1)  # no longer counted as active


async def test_a_released_job_goes_back_to_the_front_of_the_queue_uncounted(store: JobStore) -> None:
    await submitted(store, "r1" * 16)
    await submitted(store, "r2" * 16)
    assert await store.claim("w", 5) == "r1" * 16
    assert not await store.release("r1" * 16, "someone-else")
    assert await store.release("r1" * 16, "w")
    job = await store.get("r1" * 16)
    assert job is not None and (job.status, job.attempts, job.queue_position) == ("queued", 0, 0)
    assert await store.heartbeat("r1" * 16, "w", 5) is False
    assert await store.claim("w2", 5) == "r1" * 16  # before the job queued behind it


async def test_finishing_keeps_the_result_compressed_for_its_lifetime_and_drops_the_request(
    store: JobStore, redis_url: str
) -> None:
    await submitted(store, "f" * 32)
    assert await store.claim("w", 5) == "f" * 32
    result = orjson.dumps({"rows": ["x" * 50] * 20_000})
    assert not await store.finish("f" * 32, "someone-else", Outcome(result=result))
    assert await store.finish("f" * 32, "w", Outcome(result=result))
    assert b"".join([chunk async for chunk in store.result("f" * 32, "alice", "")]) == result
    raw = redis.Redis.from_url(redis_url)
    stored = raw.hgetall(job_key("f" * 32))
    assert len(raw.get(result_key("f" * 32)) or b"") < len(result) / 20 and b"body" not in stored
    assert 0 < raw.ttl(job_key("f" * 32)) <= 60 and 0 < raw.ttl(result_key("f" * 32)) <= 60
    assert not raw.exists(lease_key("f" * 32)) and not raw.smembers(active_key("alice"))
    raw.close()


async def test_a_finished_job_expires_and_is_then_not_found(redis_url: str) -> None:
    resilient = ResilientRedis(redis_url, timeout=5)
    store = JobStore(resilient, result_ttl_seconds=1)
    try:
        await submitted(store, "9" * 32)
        await store.claim("w", 5)
        await store.finish("9" * 32, "w", Outcome(error={"status": 400, "detail": "bad"}))
        assert (await store.get("9" * 32)) is not None
        await asyncio.sleep(2.1)
        assert await store.get("9" * 32) is None
        assert await store.jobs_of("alice") == []
    finally:
        await resilient.close()


async def test_cancelling_a_queued_job_takes_it_off_the_queue(store: JobStore) -> None:
    await submitted(store, "a1" * 16)
    assert await store.cancel("a1" * 16) == "cancelled"
    assert await store.claim("w", 5) is None  # a cancelled job never runs
    assert await store.cancel("a1" * 16) == "cancelled"  # as it already ended


async def test_cancelling_a_running_job_ends_its_lease(store: JobStore) -> None:
    await submitted(store, "a2" * 16)
    await store.claim("w", 5)
    assert await store.cancel("a2" * 16) == "cancelled"
    assert await store.heartbeat("a2" * 16, "w", 5) is False
    assert not await store.finish("a2" * 16, "w", Outcome(result=b"{}"))
    job = await store.get("a2" * 16)
    assert job is not None and job.status == "cancelled" and job.finished is not None


async def test_another_account_finds_no_job(store: JobStore) -> None:
    jobs = Jobs(store, Limits(parse_tier_limits("JOB_LIMITS", "standard=2")))
    job = await jobs.submit(ALICE, REQUEST)
    assert (await jobs.get(ALICE, job.id)).id == job.id
    for look in (jobs.get, jobs.cancel):
        with pytest.raises(NotFound):
            await look(BOB, job.id)
    assert await jobs.list(BOB) == []
    assert [j.id for j in await jobs.list(ALICE)] == [job.id]


async def test_redis_down_is_a_503() -> None:
    resilient = ResilientRedis("redis://127.0.0.1:1/0", timeout=0.2)
    store = JobStore(resilient, result_ttl_seconds=60)
    try:
        with pytest.raises(ServiceUnavailable):
            await store.submit("b1" * 16, ALICE, REQUEST, 5)
        with pytest.raises(ServiceUnavailable):
            await store.get("b1" * 16)
        assert await store.heartbeat("b1" * 16, "w", 5) is None  # unknown: the runner keeps going
    finally:
        await resilient.close()


async def test_no_job_is_taken_when_the_state_redis_is_nearly_full(store: JobStore, redis_url: str) -> None:
    raw = redis.Redis.from_url(redis_url)
    before = str(raw.config_get("maxmemory")["maxmemory"])
    used = int(raw.info("memory")["used_memory"])
    raw.config_set("maxmemory", str(int(used * 1.2)))
    try:
        with pytest.raises(JobStoreFull) as full:
            await store.check_room()
        assert full.value.status == 503 and "Retry-After" in full.value.headers
    finally:
        raw.config_set("maxmemory", before)
        raw.close()
