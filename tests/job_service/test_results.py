"""Job results read as they are stored (issue 55: eight parallel reads of a 44 MB result took
the job service from 108 to 828 MB): in slices, inflated chunk by chunk, the bytes one process
holds flat whatever the result's size and its readers; and at most the tier's reads at once."""

from __future__ import annotations

import asyncio
import tracemalloc
from typing import Any

import redis

from common.tiers import parse_tier_limits
from job_service.app import create_app
from job_service.store import JobStore, job_key, result_key
from tests.job_service.conftest import Client, ClientFactory, Upstream, caller, job_config
from tests.job_service.test_app import finished, submit

# The stand-in's answer pads to this many bytes of hex, which compresses only ~2x.
RESULT_BYTES = 12_000_000
READERS = 8


async def big_job(client: Client) -> dict[str, Any]:
    status, job, _ = await submit(client, f"/v1/optimize/stops?async=true&pad={RESULT_BYTES}")
    assert status == 202, job
    done = await finished(client, job["id"], seconds=30)
    assert done["status"] == "succeeded", done
    return done


async def read_through(client: Client, path: str) -> int:
    """Reads an answer as a client that keeps none of it; its length."""
    response = await client.get(path, headers=caller())
    assert response.status == 200, await response.text()
    return sum([len(chunk) async for chunk in response.content.iter_chunked(1 << 16)])


async def test_parallel_reads_of_a_large_result_hold_chunks_not_the_result(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream
) -> None:
    reads = parse_tier_limits("JOB_RESULT_READS", f"standard={READERS}")
    client = await aiohttp_client(create_app(job_config(redis_url, upstream.url, result_reads=reads)))
    job = await big_job(client)  # read whole and parsed: the same JSON as ever
    paths = [job["location"], job["resultLocation"]] * (READERS // 2)
    whole, result = [await read_through(client, path) for path in paths[:2]]
    assert result > RESULT_BYTES and whole > result
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        lengths = await asyncio.gather(*(read_through(client, path) for path in paths))
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()
    assert lengths == [whole, result] * (READERS // 2)
    # Whole, each reader held the result at least once (78 MB at the peak with a 6 MB result,
    # measured): now all eight together hold less than one, a slice and a chunk each (4.5 MB).
    assert peak < RESULT_BYTES, f"{peak} bytes held at most by {READERS} readers of a {result}-byte result"


async def test_a_result_kept_whole_in_the_jobs_hash_is_still_read(
    jobs_client: Client, redis_url: str
) -> None:
    """Jobs finished before results had their own key are read until they expire."""
    status, job, _ = await submit(jobs_client)
    assert status == 202
    done = await finished(jobs_client, job["id"])
    raw = redis.Redis.from_url(redis_url)
    raw.hset(job_key(job["id"]), "result", raw.get(result_key(job["id"])) or b"")
    raw.delete(result_key(job["id"]))
    raw.close()
    again = await (await jobs_client.get(job["location"], headers=caller())).json()
    assert again == done


async def test_reads_past_the_tiers_cap_are_429_saying_it(
    jobs_client: Client, store: JobStore, upstream: Upstream
) -> None:
    _, job, _ = await submit(jobs_client)
    await finished(jobs_client, job["id"])
    held = [await store.start_read("user-1", 2) for _ in range(2)]  # two reads under way
    assert all(held)
    for path in (job["location"], f"{job['location']}/result"):
        response = await jobs_client.get(path, headers=caller())
        problem = await response.json(content_type=None)
        assert response.status == 429 and int(response.headers["Retry-After"]) >= 1, problem
        assert problem["type"] == "/problems/jobs/too-many-result-reads"
        assert "standard tier may read 2 job results at once" in problem["detail"]
    other = await jobs_client.get("/v1/jobs", headers=caller())  # a listing holds no result
    assert other.status == 200
    await store.end_read("user-1", str(held[0]))
    assert (await jobs_client.get(f"{job['location']}/result", headers=caller())).status == 200
