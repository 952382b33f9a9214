"""The gateway sends `?async=true` on the three job operations, and /v1/jobs, to the job
service; everything else stays where it was. The spec's job limits are the code's own."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from common.tiers import DEFAULT_JOB_LIMITS, parse_tier_limits
from gateway.docs import openapi_spec
from gateway.proxy import FORWARDED_RESPONSE_HEADERS
from gateway.routes import ASYNC_PATHS, as_job, match_route, needs_token, wants_job
from job_service.config import JobConfig
from job_service.model import OPERATIONS


@pytest.mark.parametrize("path", sorted(ASYNC_PATHS))
@pytest.mark.parametrize(
    ("query", "job"),
    [("async=true", True), ("async=TRUE", True), ("async=yes", True), ("async=", True), ("async=false", False),
     ("async=False", False), ("", False), ("vehicle=car", False)],
)  # fmt: skip
def test_async_operations_go_to_the_job_service_unless_async_is_false(path: str, query: str, job: bool) -> None:
    """Any async value but false goes to the job service, which answers 400 for what is not true."""
    route = match_route(path)
    assert route is not None
    pairs = [part.split("=", 1) for part in query.split("&") if part]
    params: MultiDict[str] = MultiDict([(name, value) for name, value in pairs])
    assert wants_job(route, params) is job
    if job:
        moved = as_job(route)
        assert moved.service == "job_service" and moved.max_body_bytes == route.max_body_bytes
        assert moved.timeout_seconds <= route.timeout_seconds


def test_other_operations_ignore_async() -> None:
    for path in ("/v1/route", "/v1/matrix", "/v1/match", "/v1/geocoder"):
        route = match_route(path)
        assert route is not None and not wants_job(route, MultiDict({"async": "true"}))


def test_the_job_paths_are_the_job_services_and_need_a_token() -> None:
    for path, methods in (
        ("/v1/jobs", ("GET",)),
        ("/v1/jobs/abc", ("GET", "DELETE")),
        ("/v1/jobs/abc/result", ("GET",)),
    ):
        route = match_route(path)
        assert route is not None and route.service == "job_service" and route.methods == methods, path
        assert needs_token(path)


def test_the_job_operations_are_the_gateways_async_paths() -> None:
    assert {operation.path for operation in OPERATIONS} == ASYNC_PATHS


def test_the_documented_job_limits_are_the_codes() -> None:
    spec = openapi_spec()
    text = " ".join(spec["components"]["parameters"]["async"]["description"].split())
    limits = parse_tier_limits("JOB_LIMITS", DEFAULT_JOB_LIMITS).values
    assert ", ".join(f"{tier} {count}" for tier, count in limits.items()) in text
    assert f"up to {JobConfig().max_attempts} starts" in text
    hours = JobConfig().result_ttl_seconds // 3600
    assert f"kept for {hours} hours" in spec["paths"]["/v1/jobs/{jobId}"]["get"]["description"]
    for path in ASYNC_PATHS:
        assert "202" in spec["paths"][path]["post"]["responses"], path


def test_a_jobs_location_reaches_the_client() -> None:
    assert "Location" in FORWARDED_RESPONSE_HEADERS
