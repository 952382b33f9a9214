"""Asynchronous jobs end to end: the gateway, auth, route, optimize and job services as real
processes on Monaco, called over HTTP with real tokens. Each operation answers as a job exactly
what it answers synchronously; jobs are the account's own, cancellable, limited per tier, and
survive a job service killed in the middle of one."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token
from tests.optimize_service.test_app import MONACO
from tests.optimize_service.test_fleet_app import seeded_instance

HEADER = "id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon"
START = "2026-11-25T08:00:00%2B01:00"
ACTIVE = ("queued", "running")


class Api:
    """One account's calls through the gateway: (status, JSON body, headers)."""

    def __init__(self, http: aiohttp.ClientSession, stack: Stack, token: str) -> None:
        self.http, self.stack, self.token = http, stack, token

    async def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
                   ) -> tuple[int, Any, Any]:  # fmt: skip
        sent = {**PROBLEM, "Authorization": f"Bearer {self.token}", **(headers or {})}
        kwargs: dict[str, Any] = {"json": body} if isinstance(body, dict | list) else {"data": body}
        async with self.http.request(method, self.stack.base_url + path, headers=sent, **kwargs) as resp:
            return resp.status, await resp.json(content_type=None), resp.headers

    async def submit(self, path: str, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
        joiner = "&" if "?" in path else "?"
        status, job, headers_back = await self.call("POST", f"{path}{joiner}async=true", body, headers)
        assert status == 202, job
        assert headers_back["Location"] == f"/v1/jobs/{job['id']}"
        return dict(job)

    async def wait(self, job_id: str, seconds: float = 120, until: tuple[str, ...] = ACTIVE) -> dict[str, Any]:
        """The job once its status is no longer one of `until`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            status, job, _ = await self.call("GET", f"/v1/jobs/{job_id}")
            assert status == 200, job
            if job["status"] not in until:
                return dict(job)
            await asyncio.sleep(0.2)
        pytest.fail(f"job {job_id} still {until} after {seconds} s")


@pytest.fixture(scope="module")
def token(full_platform: Stack) -> str:
    return user_token(full_platform, "standard")


@pytest.fixture
def api(full_platform: Stack, token: str, http: aiohttp.ClientSession) -> Api:
    return Api(http, full_platform, token)


def stops(count: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"name": f"s{i}", "coordinate": {"lat": round(lat + rng.uniform(-4e-4, 4e-4), 6),
                                         "lon": round(lon + rng.uniform(-4e-4, 4e-4), 6)}}
        for i, (_, lat, lon) in enumerate(MONACO[i % len(MONACO)] for i in range(count))
    ]  # fmt: skip


def detour_file(lines: int, seed: int = 5) -> bytes:
    """`lines` detour cases between Monaco's places, each a few metres apart from the others."""
    rng = random.Random(seed)

    def near(index: int) -> str:
        _, lat, lon = MONACO[index % len(MONACO)]
        return f"{lat + rng.uniform(-3e-4, 3e-4):.6f},{lon + rng.uniform(-3e-4, 3e-4):.6f}"

    rows = [f"t{i},{near(i)},{near(i + 3)},{near(i + 7)}" for i in range(lines)]
    return "\n".join([HEADER, *rows]).encode()


async def same_as_sync(api: Api, path: str, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    status, sync, _ = await api.call("POST", path, body, headers)
    assert status == 200, sync
    job = await api.wait((await api.submit(path, body, headers))["id"])
    assert job["status"] == "succeeded", job
    assert job["result"] == sync
    status, alone, _ = await api.call("GET", job["resultLocation"])
    assert status == 200 and alone == sync
    return job


async def test_stop_order_as_a_job_is_the_synchronous_answer(api: Api) -> None:
    job = await same_as_sync(api, f"/v1/optimize/stops?startTime={START}", stops(10))
    assert job["operation"] == "optimize/stops" and job["attempts"] == 1


async def test_fleet_routes_as_a_job_are_the_synchronous_answer(api: Api) -> None:
    body = seeded_instance(12, 20, 4, 3)
    job = await same_as_sync(api, "/v1/optimize/routes", body)
    assert job["result"]["routes"]


async def test_a_detour_file_as_a_job_is_the_synchronous_answer(api: Api) -> None:
    headers = {"Content-Type": "text/csv", "Content-Disposition": 'attachment; filename="trips.csv"'}
    job = await same_as_sync(api, "/v1/detour/file?vehicle=car", detour_file(200), headers)
    assert job["result"]["filename"] == "trips.csv" and len(job["result"]["results"]) > 100


async def test_a_job_the_owning_service_refuses_is_refused_at_submission_with_the_synchronous_error(
    api: Api,
) -> None:
    """The owning service prices the job before it is stored (issue 55): what it cannot read is
    refused then, not accepted to fail later."""
    headers = {"Content-Type": "text/csv"}  # no file name: 400 from the route service
    status, sync, _ = await api.call("POST", "/v1/detour/file", detour_file(3), headers)
    assert status == 400
    status, refused, _ = await api.call("POST", "/v1/detour/file?async=true", detour_file(3), headers)
    assert status == 400 and refused["type"] == sync["type"] and refused["detail"] == sync["detail"]


async def test_a_20000_line_detour_file_finishes_as_a_job(api: Api) -> None:
    began = time.perf_counter()
    job = await api.submit("/v1/detour/file?filename=big.csv", detour_file(20_000, seed=9),
                           headers={"Content-Type": "text/plain"})  # fmt: skip
    submitted = time.perf_counter() - began
    done = await api.wait(job["id"], seconds=280)
    elapsed = time.perf_counter() - began
    assert done["status"] == "succeeded", done.get("error")
    result = done["result"]
    assert len(result["results"]) + len(result["errors"]) == 20_000
    assert submitted < 5, f"the submit alone took {submitted:.1f} s"
    print(f"20 000-line detour job: submitted in {submitted:.2f} s, succeeded after {elapsed:.1f} s")


async def test_another_account_sees_none_of_the_jobs(
    api: Api, full_platform: Stack, http: aiohttp.ClientSession
) -> None:
    job = await api.submit("/v1/optimize/stops", stops(5))
    stranger = Api(http, full_platform, user_token(full_platform, "standard"))
    for method, suffix in (("GET", ""), ("GET", "/result"), ("DELETE", "")):
        status, problem, _ = await stranger.call(method, f"/v1/jobs/{job['id']}{suffix}")
        assert status == 404 and problem["type"] == "/problems/general/not-found", (method, suffix)
    status, listing, _ = await stranger.call("GET", "/v1/jobs")
    assert status == 200 and listing == {"jobs": []}
    assert (await api.wait(job["id"]))["status"] == "succeeded"  # untouched by the stranger


async def test_delete_cancels_a_job(api: Api) -> None:
    job = await api.submit(
        "/v1/detour/file?filename=a.csv", detour_file(5000, seed=2), headers={"Content-Type": "text/csv"}
    )
    status, cancelled, _ = await api.call("DELETE", f"/v1/jobs/{job['id']}")
    assert status == 200 and cancelled["status"] == "cancelled" and cancelled["finishedAt"], cancelled
    await asyncio.sleep(4)  # past a heartbeat: a running call is dropped, nothing is stored
    status, later, _ = await api.call("GET", f"/v1/jobs/{job['id']}")
    assert later["status"] == "cancelled" and "result" not in later
    status, _, _ = await api.call("GET", f"/v1/jobs/{job['id']}/result")
    assert status == 409


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_over_the_tier_limit_is_429_with_retry_after(
    full_platform: Stack, http: aiohttp.ClientSession, accept: dict[str, str]
) -> None:
    demo = Api(http, full_platform, user_token(full_platform, "demo"))  # one job at a time
    first = await demo.submit(
        "/v1/detour/file?filename=b.csv", detour_file(3000, seed=4), headers={"Content-Type": "text/csv"}
    )
    status, problem, headers = await demo.call("POST", "/v1/optimize/stops?async=true", stops(4), accept)
    assert status == 429 and int(headers["Retry-After"]) >= 1, problem
    if accept is LEGACY:
        assert problem["details"][0]["code"] == "JOB_ERROR_TOO_MANY_JOBS"
    else:
        assert problem["type"] == "/problems/jobs/too-many-jobs"
    await demo.call("DELETE", f"/v1/jobs/{first['id']}")
    assert (await demo.call("POST", "/v1/optimize/stops?async=true", stops(4)))[0] == 202  # room again


async def test_a_job_interrupted_by_a_killed_job_service_runs_again(api: Api, full_platform: Stack) -> None:
    # A search of several seconds (more than 12 stops, a time limit): it is running when killed.
    job = await api.submit(f"/v1/optimize/stops?startTime={START}&timeLimit=6", stops(40))
    await api.wait(job["id"], seconds=30, until=("queued",))
    full_platform.processes["job_service"].kill()
    full_platform.stop_process("job_service")
    full_platform.start_process("job_service")
    full_platform.wait_healthy("job_service")
    done = await api.wait(job["id"], seconds=120)
    assert done["status"] == "succeeded" and done["attempts"] == 2, done
    assert done["result"]["stops"]


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/v1/optimize/stops?async=maybe", [], 400, "ERROR_INVALID_PARAMETER"),
        ("/v1/optimize/stops?async=true&async=true", [], 400, "ERROR_INVALID_PARAMETER"),
        ("/v1/optimize/routes?async=1", {}, 400, "ERROR_INVALID_PARAMETER"),
        ("/v1/optimize/stops?async=true", b"[{", 400, "ERROR_MALFORMED_BODY"),
        ("/v1/optimize/stops?async=true", b"x" * (3 << 20), 413, "ERROR_PAYLOAD_TOO_LARGE"),
        ("/v1/detour/file?async=true", b"x" * (17 << 20), 413, "ERROR_PAYLOAD_TOO_LARGE"),
    ],
)
async def test_hostile_submissions_are_clear_4xx(api: Api, path: str, body: Any, status: int, code: str) -> None:
    headers = {**LEGACY, "Content-Type": "text/csv" if "detour" in path else "application/json"}
    answer, problem, _ = await api.call("POST", path, body, headers)
    assert answer == status, problem
    assert problem["details"][0]["code"] == code


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v1/jobs/not-a-job", 404),
        ("GET", "/v1/jobs/" + "0" * 32, 404),
        ("GET", "/v1/jobs/" + "f" * 32 + "/result", 404),
        ("DELETE", "/v1/jobs/%2e%2e", 404),
        ("GET", "/v1/jobs/" + "a" * 5000, 404),
        ("DELETE", "/v1/jobs", 405),
        ("POST", "/v1/jobs/" + "0" * 32, 405),
    ],
)
async def test_bad_job_ids_and_methods_are_clear_4xx(api: Api, method: str, path: str, status: int) -> None:
    answer, problem, _ = await api.call(method, path)
    assert answer == status, problem


async def test_the_jobs_need_a_token(full_platform: Stack, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{full_platform.base_url}/v1/optimize/stops?async=true", json=stops(3)) as resp:
        assert resp.status == 401
    async with http.get(f"{full_platform.base_url}/v1/jobs") as resp:
        assert resp.status == 401
