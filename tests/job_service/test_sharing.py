"""The job store shared fairly between accounts (issue 29): runners taken round-robin, one
account's running jobs capped below the runners' count, each account's bytes within its tier's
quota, results' size capped, and replays marked as a job's for the owning service's admission."""

from __future__ import annotations

import os

import orjson
import pytest

from common.errors import JobQuotaExceeded
from common.redis import ResilientRedis
from common.tiers import parse_tier_limits
from job_service.app import create_app
from job_service.jobs import Jobs, Limits
from job_service.model import Account, Outcome, StoredRequest
from job_service.store import JobStore, OverQuota
from tests.job_service.conftest import Client, ClientFactory, Upstream, caller, job_config
from tests.job_service.test_app import STOPS, finished, submit

ALICE = Account("alice", "standard")
BOB = Account("bob", "standard")
REQUEST = StoredRequest("optimize/stops", "application/json", b"[]")


def noise(size: int) -> StoredRequest:
    """A body that does not compress: it holds its size in the store."""
    return StoredRequest("detour/file", "text/plain", os.urandom(size))


async def test_claims_go_round_robin_between_accounts(store: JobStore) -> None:
    """Three jobs of one account, then one of another: the other's runs second, not fourth."""
    for name in ("a1", "a2", "a3"):
        assert await store.submit(name * 16, ALICE, REQUEST, 5)
    assert await store.submit("b1" * 16, BOB, REQUEST, 5)
    bob = await store.get("b1" * 16)
    assert bob is not None and bob.queue_position == 1  # after alice's first, before her others
    claimed = [await store.claim("w", 10) for _ in range(5)]
    assert claimed == ["a1" * 16, "b1" * 16, "a2" * 16, "a3" * 16, None]


async def test_an_account_at_its_cap_of_running_jobs_leaves_the_runners_to_others(redis_url: str) -> None:
    """The campaign: three heavy jobs of one account held both runners and another account's
    5-stop job waited 62.6 s. With one running job per account, a runner stays free for it."""
    resilient = ResilientRedis(redis_url, timeout=5.0)
    store = JobStore(resilient, result_ttl_seconds=60, running_per_account=1)
    try:
        for name in ("a1", "a2", "a3"):
            assert await store.submit(name * 16, ALICE, REQUEST, 5)
        assert await store.claim("w", 10) == "a1" * 16
        assert await store.claim("w", 10) is None  # alice runs one already: the second runner waits
        assert await store.submit("b1" * 16, BOB, REQUEST, 5)
        assert await store.claim("w", 10) == "b1" * 16  # at once, not after alice's three
        assert await store.finish("a1" * 16, "w", Outcome(result=b"{}"))
        assert await store.claim("w", 10) == "a2" * 16  # alice's next once her first ended
    finally:
        await resilient.close()


async def test_a_cancelled_queue_leaves_the_ring_and_a_released_job_runs_first(store: JobStore) -> None:
    assert await store.submit("a1" * 16, ALICE, REQUEST, 5)
    assert await store.submit("b1" * 16, BOB, REQUEST, 5)
    assert await store.cancel("a1" * 16) == "cancelled"
    assert await store.claim("w", 10) == "b1" * 16
    assert await store.claim("w", 10) is None
    assert await store.submit("a2" * 16, ALICE, REQUEST, 5)
    assert await store.release("b1" * 16, "w")  # a graceful stop: bob's job goes to the front
    assert await store.claim("w2", 10) == "b1" * 16


async def test_an_accounts_jobs_hold_at_most_its_quota_of_the_store(store: JobStore) -> None:
    """~209 large detour results of one account filled the store's share and refused every
    account's jobs: now the account's own requests and results stop at its quota."""
    quotas = parse_tier_limits("JOB_STORE_QUOTAS", "standard=1")
    jobs = Jobs(store, Limits(parse_tier_limits("JOB_LIMITS", "standard=10"), store_mib=quotas))
    first = await jobs.submit(ALICE, noise(600_000))
    with pytest.raises(JobQuotaExceeded) as refused:
        await jobs.submit(ALICE, noise(600_000))
    assert refused.value.status == 429 and refused.value.code == "JOB_ERROR_QUOTA_EXCEEDED"
    assert "standard tier's 1 MiB" in refused.value.detail and "Retry-After" in refused.value.headers
    await jobs.submit(BOB, noise(600_000))  # another account's bytes are its own
    # The request's bytes are freed when the job ends (the result is kept instead).
    assert await store.claim("w", 10) == first.id
    assert await store.finish(first.id, "w", Outcome(result=b"{}"), 1 << 20)
    await jobs.submit(ALICE, noise(600_000))


async def test_a_result_past_the_quota_is_not_kept(store: JobStore) -> None:
    assert await store.submit("a1" * 16, ALICE, noise(300_000), 5, 1 << 20)
    assert await store.submit("a2" * 16, ALICE, REQUEST, 5, 1 << 20)
    assert await store.claim("w", 10) == "a1" * 16
    with pytest.raises(OverQuota) as over:
        await store.finish("a1" * 16, "w", Outcome(result=os.urandom(1_100_000)), 1 << 20)
    assert over.value.used < 1000 and over.value.needed > 1 << 20  # its own request no longer counts
    job = await store.get("a1" * 16)
    assert job is not None and job.status == "running"  # nothing recorded: the runner fails it


async def test_results_past_the_cap_or_the_quota_fail_the_job_with_their_reason(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream
) -> None:
    config = job_config(redis_url, upstream.url, max_result_mb=1, store_quotas=parse_tier_limits("JOB_STORE_QUOTAS", "standard=1"))
    client = await aiohttp_client(create_app(config))
    status, job, _ = await submit(client, "/v1/optimize/stops?async=true&pad=1200000")
    assert status == 202, job
    done = await finished(client, job["id"])
    assert done["status"] == "failed" and done["error"]["code"] == "JOB_ERROR_RESULT_TOO_LARGE"
    assert done["error"]["status"] == 413 and "at most 1 MiB" in done["error"]["detail"]
    # Hex text compresses to about half: two results of 0.8 MB fit the 1 MiB quota, the third
    # does not, and fails with the reason.
    outcomes = []
    for _ in range(3):
        status, job, _ = await submit(client, "/v1/optimize/stops?async=true&pad=800000")
        assert status == 202, job
        outcomes.append(await finished(client, job["id"]))
    assert [o["status"] for o in outcomes] == ["succeeded", "succeeded", "failed"]
    assert outcomes[2]["error"]["code"] == "JOB_ERROR_QUOTA_EXCEEDED" and "1 MiB" in outcomes[2]["error"]["detail"]


async def test_a_replay_is_marked_as_a_jobs(jobs_client: Client, upstream: Upstream) -> None:
    """The owning service priced and charged the job at submission (its headers on the 202),
    so its replay is marked paid: not charged again, never refused, no heavy slot
    (common.admission)."""
    status, job, headers = await submit(jobs_client, who=caller("user-9", "demo"))
    assert status == 202 and headers["RateLimit-Cost"] == "7"
    assert upstream.priced == [{"path": "/v1/optimize/stops", "bytes": len(orjson.dumps(STOPS))}]
    await finished(jobs_client, job["id"], who=caller("user-9", "demo"))
    assert upstream.calls[0]["job"] == "paid:7" and upstream.calls[0]["tier"] == "demo"
