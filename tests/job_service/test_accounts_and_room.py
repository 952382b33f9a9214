"""A disabled account's jobs never run on (issue 55: three queued jobs ran and succeeded after
`disable-user`), and a result that lands must fit the job store's share of the state Redis."""

from __future__ import annotations

import asyncio
import time

import redis

from job_service.app import create_app
from job_service.store import JobStore
from tests.job_service.conftest import ClientFactory, Upstream, caller, job_config
from tests.job_service.test_app import finished, submit
from tests.job_service.test_store import ALICE, REQUEST


def revoke(redis_url: str, subject: str) -> None:
    """What auth_service.revocation publishes when the account is disabled."""
    raw = redis.Redis.from_url(redis_url)
    raw.set(f"revoked:sub:{subject}", str(int(time.time())))
    raw.close()


async def test_a_disabled_accounts_queued_and_running_jobs_are_cancelled_saying_why(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream
) -> None:
    client = await aiohttp_client(create_app(job_config(redis_url, upstream.url)))
    _, running, _ = await submit(client, "/v1/optimize/stops?async=true&seconds=30")
    _, queued, _ = await submit(client, "/v1/optimize/stops?async=true&vehicle=bike")
    await upstream.wait_for_call()
    revoke(redis_url, "user-1")
    for job in (running, queued):
        done = await finished(client, job["id"])
        assert done["status"] == "cancelled", done
        assert done["error"]["status"] == 401 and "account was disabled" in done["error"]["detail"]
    assert [call["query"] for call in upstream.calls] == [{"seconds": "30"}]  # the queued one never ran


async def test_a_job_submitted_after_the_revocation_runs(store: JobStore, redis_url: str) -> None:
    """An account enabled again gets new tokens: its new jobs are its own, and run."""
    revoke(redis_url, "alice")
    await asyncio.sleep(1.01)  # revocations are whole seconds
    assert await store.submit("a" * 32, ALICE, REQUEST, 5)
    assert await store.claim("w", 5) == "a" * 32
    assert await store.heartbeat("a" * 32, "w", 5) is True


async def test_a_result_that_would_pass_the_stores_share_fails_its_job_saying_why(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream
) -> None:
    raw = redis.Redis.from_url(redis_url)
    before = raw.config_get("maxmemory")["maxmemory"]
    used = int(raw.info("memory")["used_memory"])
    # The store's share (0.1) has 1 MB left; the ~3 MB result fits Redis itself, not the share.
    raw.config_set("maxmemory", str(int((used + 1_000_000) / 0.1)))
    try:
        client = await aiohttp_client(create_app(job_config(redis_url, upstream.url, store_max_fraction=0.1)))
        status, job, _ = await submit(client, "/v1/optimize/stops?async=true&pad=6000000")
        assert status == 202, job
        done = await finished(client, job["id"], seconds=30)
        assert done["status"] == "failed", {k: v for k, v in done.items() if k != "result"}
        assert done["error"]["code"] == "JOB_ERROR_STORE_FULL"
        assert "would take the job store past its share" in done["error"]["detail"]
        assert int(raw.info("memory")["used_memory"]) < used + 1_000_000
    finally:
        raw.config_set("maxmemory", str(before))
        raw.close()
    assert (await client.get(job["location"], headers=caller())).status == 200
