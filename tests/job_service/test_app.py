"""The job service over HTTP, its runner replaying jobs against a stand-in of the owning
services: 202 and Location, the result as the service answered it, the caller's identity
passed on, cancellation, the tier limit, ownership, and hostile input as clear 4xx."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from job_service.app import create_app
from tests.job_service.conftest import Client, ClientFactory, Upstream, caller, job_config

STOPS = [{"lat": 60.17, "lon": 24.94}, {"lat": 60.172, "lon": 24.945}]
JSON = {"Content-Type": "application/json"}
LEGACY = {"Accept": "application/json"}


async def submit(client: Client, path: str = "/v1/optimize/stops?async=true&vehicle=car", body: Any = STOPS,
                 headers: dict[str, str] | None = None, who: dict[str, str] | None = None) -> tuple[int, Any, Any]:  # fmt: skip
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    sent = {**JSON, **(who or caller()), **(headers or {})}
    response = await client.post(path, data=data, headers=sent)
    return response.status, await response.json(content_type=None), response.headers


async def finished(client: Client, job_id: str, who: dict[str, str] | None = None, seconds: float = 10) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        response = await client.get(f"/v1/jobs/{job_id}", headers=who or caller())
        job = await response.json()
        if job["status"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.05)
    pytest.fail(f"job {job_id} did not finish in {seconds} s")


async def test_a_job_answers_202_then_the_synchronous_answer(jobs_client: Client, upstream: Upstream) -> None:
    status, job, headers = await submit(jobs_client)
    assert status == 202, job
    assert job["status"] == "queued" and job["operation"] == "optimize/stops"
    assert headers["Location"] == f"/v1/jobs/{job['id']}" == job["location"]
    done = await finished(jobs_client, job["id"])
    assert done["status"] == "succeeded" and done["progress"] == {"stage": "done", "fraction": 1.0}
    assert done["attempts"] == 1 and done["finishedAt"] and done["expiresAt"] > done["finishedAt"]
    call = upstream.calls[0]
    assert done["result"] == {"answered": call}
    # The request as the client sent it, minus async, with the caller's identity.
    assert call["path"] == "/v1/optimize/stops" and call["query"] == {"vehicle": "car"}
    assert (call["subject"], call["tier"]) == ("user-1", "standard")
    raw = await jobs_client.get(done["resultLocation"], headers=caller())
    assert raw.status == 200 and raw.content_type == "application/json"
    assert orjson.loads(await raw.read()) == done["result"]


async def test_a_detour_file_job_keeps_its_text_body_and_file_name(jobs_client: Client, upstream: Upstream) -> None:
    text = "fromLat,fromLon,toLat,toLon\n" + "60.17,24.94,60.171,24.945\n" * 500
    status, job, _ = await submit(
        jobs_client, "/v1/detour/file?async=true&vehicle=car", text.encode(),
        headers={"Content-Type": "text/csv; charset=utf-8", "Content-Disposition": 'attachment; filename="a.csv"'},
    )  # fmt: skip
    assert status == 202, job
    done = await finished(jobs_client, job["id"])
    assert done["result"]["lines"] == 501
    call = upstream.calls[0]
    assert call["contentType"] == "text/csv; charset=utf-8" and call["disposition"] == 'attachment; filename="a.csv"'


async def test_an_error_of_the_owning_service_fails_the_job_with_it(jobs_client: Client) -> None:
    status, job, _ = await submit(jobs_client, "/v1/detour/file?async=true", b"", headers={"Content-Type": "text/csv"})
    assert status == 202
    done = await finished(jobs_client, job["id"])
    assert done["status"] == "failed" and "result" not in done
    assert done["error"]["status"] == 400 and done["error"]["code"] == "DETOUR_ERROR_EMPTY_FILE"
    result = await jobs_client.get(f"/v1/jobs/{job['id']}/result", headers=caller())
    assert result.status == 409


async def test_another_account_gets_404_for_every_job_operation(jobs_client: Client) -> None:
    _, job, _ = await submit(jobs_client)
    stranger = caller("user-2")
    for method, path in (("GET", ""), ("GET", "/result"), ("DELETE", "")):
        response = await jobs_client.request(method, f"/v1/jobs/{job['id']}{path}", headers=stranger)
        assert response.status == 404, (method, path)
    listing = await jobs_client.get("/v1/jobs", headers=stranger)
    assert (await listing.json()) == {"jobs": []}
    mine = await jobs_client.get("/v1/jobs", headers=caller())
    assert [j["id"] for j in (await mine.json())["jobs"]] == [job["id"]]


async def test_delete_cancels_a_queued_job_which_then_never_runs(jobs_client: Client, upstream: Upstream) -> None:
    _, first, _ = await submit(jobs_client, "/v1/optimize/stops?async=true&seconds=1")
    _, second, _ = await submit(jobs_client, "/v1/optimize/stops?async=true&vehicle=bike")
    assert second["progress"]["stage"] == "queued"
    response = await jobs_client.delete(f"/v1/jobs/{second['id']}", headers=caller())
    body = await response.json()
    assert response.status == 200 and body["status"] == "cancelled"
    assert (await finished(jobs_client, first["id"]))["status"] == "succeeded"
    _, third, _ = await submit(jobs_client, "/v1/optimize/stops?async=true&vehicle=truck")
    assert (await finished(jobs_client, third["id"]))["status"] == "succeeded"
    # one account's jobs run in order: had the second run, it would have run before the third
    assert [c["query"] for c in upstream.calls] == [{"seconds": "1"}, {"vehicle": "truck"}]
    assert (await finished(jobs_client, second["id"]))["status"] == "cancelled"


async def test_delete_abandons_a_running_job(jobs_client: Client, upstream: Upstream) -> None:
    _, job, _ = await submit(jobs_client, "/v1/optimize/routes?async=true&seconds=1", {"vehicles": [], "jobs": []})
    await upstream.wait_for_call()
    response = await jobs_client.delete(f"/v1/jobs/{job['id']}", headers=caller())
    assert (await response.json())["status"] == "cancelled"
    await asyncio.wait_for(upstream.answered.wait(), 10)  # the abandoned call's answer came back
    _, later, _ = await submit(jobs_client)  # and a whole job ran after it: nothing replaces the cancellation
    assert (await finished(jobs_client, later["id"]))["status"] == "succeeded"
    final = await (await jobs_client.get(f"/v1/jobs/{job['id']}", headers=caller())).json()
    assert final["status"] == "cancelled" and "result" not in final
    gone = await jobs_client.delete(f"/v1/jobs/{job['id']}", headers=caller())
    assert gone.status == 204  # a finished job is deleted
    assert (await jobs_client.get(f"/v1/jobs/{job['id']}", headers=caller())).status == 404


@pytest.mark.parametrize("accept", [LEGACY, {}])
async def test_over_the_tier_limit_is_429_with_retry_after_in_both_formats(
    jobs_client: Client, accept: dict[str, str]
) -> None:
    demo = caller("demo-user", "demo")
    assert (await submit(jobs_client, "/v1/optimize/stops?async=true&seconds=2", who=demo))[0] == 202
    status, body, headers = await submit(jobs_client, who=demo, headers=accept)
    assert status == 429 and int(headers["Retry-After"]) >= 1
    if accept:
        assert body["details"][0]["code"] == "JOB_ERROR_TOO_MANY_JOBS"
    else:
        assert body["type"] == "/problems/jobs/too-many-jobs" and "demo tier may have 1 job" in body["detail"]


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "code"),
    [
        ("/v1/optimize/stops?async=yes", STOPS, {}, 400, "ERROR_INVALID_PARAMETER"),
        ("/v1/optimize/stops?async=true&async=true", STOPS, {}, 400, "ERROR_INVALID_PARAMETER"),
        ("/v1/optimize/stops?async=", STOPS, {}, 400, "ERROR_INVALID_PARAMETER"),
        ("/v1/optimize/stops?async=true", b"[{", {}, 400, "ERROR_MALFORMED_BODY"),
        ("/v1/optimize/stops?async=true", STOPS, {"Content-Type": "text/plain"}, 415, "ERROR_UNSUPPORTED_MEDIA_TYPE"),
        ("/v1/detour/file?async=true", STOPS, {}, 415, "ERROR_UNSUPPORTED_MEDIA_TYPE"),
        ("/v1/optimize/stops?async=true", b"x" * (18 << 20), {}, 413, "ERROR_PAYLOAD_TOO_LARGE"),
    ],
)
async def test_hostile_submissions_are_clear_4xx(
    jobs_client: Client, path: str, body: Any, headers: dict[str, str], status: int, code: str
) -> None:
    answer, problem, _ = await submit(jobs_client, path, body, headers={**LEGACY, **headers})
    assert answer == status, problem
    assert problem["details"][0]["code"] == code


@pytest.mark.parametrize("job_id", ["nope", "0" * 31, "Z" * 32, "..%2F..%2Fhealth", "a" * 300, "%00"])
async def test_bad_job_ids_are_404(jobs_client: Client, job_id: str) -> None:
    for method in ("GET", "DELETE"):
        response = await jobs_client.request(method, f"/v1/jobs/{job_id}", headers=caller())
        assert response.status == 404, (method, job_id)


async def test_without_the_gateways_identity_a_job_is_refused(jobs_client: Client) -> None:
    response = await jobs_client.post("/v1/optimize/stops?async=true", data=orjson.dumps(STOPS), headers=JSON)
    assert response.status == 401
    assert (await jobs_client.get("/v1/jobs")).status == 401


async def test_a_job_running_at_a_graceful_stop_is_handed_back_and_runs_again(
    aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream
) -> None:
    config = job_config(redis_url, upstream.url, lease_seconds=30.0)  # no waiting for a lease here
    first: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    _, job, _ = await submit(first, "/v1/optimize/stops?async=true&seconds=30")
    await upstream.wait_for_call()
    await first.close()  # SIGTERM: the running job goes back to the queue's front
    upstream.calls.clear()
    upstream.called.clear()
    second: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    await upstream.wait_for_call(seconds=5)  # at once, not after the 30 s lease
    state = await (await second.get(f"/v1/jobs/{job['id']}", headers=caller())).json()
    assert state["status"] == "running" and state["attempts"] == 1  # a hand-back is no attempt
    await second.delete(f"/v1/jobs/{job['id']}", headers=caller())


@pytest.mark.parametrize("accept", [LEGACY, {}])
async def test_redis_down_is_503_in_both_formats(
    aiohttp_client: ClientFactory, upstream: Upstream, accept: dict[str, str]
) -> None:
    client = await aiohttp_client(create_app(job_config("redis://127.0.0.1:1/0", upstream.url)))
    status, problem, _ = await submit(client, headers=accept)
    assert status == 503, problem
    if accept:
        assert problem["details"][0]["code"] == "ERROR_SERVICE_UNAVAILABLE"
    else:
        assert problem["type"] == "/problems/general/service-unavailable" and "job store" in problem["detail"]
    response = await client.get("/v1/jobs/" + "a" * 32, headers={**caller(), **accept})
    assert response.status == 503
