"""Internal calls are authenticated, on the real processes: a service's own port refuses a call
without the stack's secret in our formats, while the same call through the gateway works."""

from __future__ import annotations

import stat
import uuid
from typing import Any

import aiohttp
import orjson
import pytest

from common.internal_auth import INTERNAL_TOKEN_HEADER, TOKEN_FILE
from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token

REFUSED_TYPE = "/problems/general/internal-credential-required"
REFUSED_CODE = "ERROR_INTERNAL_CREDENTIAL_REQUIRED"
NOBODY = {"user": "nobody@example.com", "password": "not the password"}
CASINO, PALAIS = {"lat": 43.7394, "lon": 7.4276}, {"lat": 43.7312, "lon": 7.4198}


async def call(
    http: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], **kwargs: Any
) -> tuple[int, str, Any]:
    async with http.request(method, url, headers=headers, **kwargs) as resp:
        return resp.status, resp.content_type, await resp.json(content_type=None)


async def test_a_direct_call_without_the_secret_is_refused_and_the_gateway_call_works(
    platform: Stack, http: aiohttp.ClientSession
) -> None:
    direct = platform.url("auth_service") + "/v1/authenticate"
    status, content_type, body = await call(http, "POST", direct, PROBLEM, json=NOBODY)
    assert (status, content_type, body["type"]) == (401, "application/problem+json", REFUSED_TYPE)
    status, content_type, body = await call(
        http, "POST", direct, {**LEGACY, INTERNAL_TOKEN_HEADER: "guess"}, json=NOBODY
    )
    assert (status, content_type, body["details"][0]["code"]) == (401, "application/json", REFUSED_CODE)
    # The same call through the gateway reaches the auth service, which judges the password.
    status, _, body = await call(http, "POST", platform.base_url + "/v1/authenticate", LEGACY, json=NOBODY)
    assert (status, body["details"][0]["code"]) == (401, "AUTH_ERROR_INVALID_CREDENTIALS")
    # As does a direct call that carries the stack's secret.
    status, _, body = await call(http, "POST", direct, {**LEGACY, **platform.internal_headers()}, json=NOBODY)
    assert (status, body["details"][0]["code"]) == (401, "AUTH_ERROR_INVALID_CREDENTIALS")


async def test_health_stays_open_and_metrics_is_internal(platform: Stack, http: aiohttp.ClientSession) -> None:
    service = platform.url("auth_service")
    async with http.get(service + "/health") as resp:
        assert resp.status == 200
    async with http.get(service + "/metrics") as resp:
        assert resp.status == 401
    async with http.get(service + "/metrics", headers=platform.internal_headers()) as resp:
        assert resp.status == 200
        assert "http_requests_total" in await resp.text()


async def test_the_gateway_loaded_the_signing_keys_through_the_check(
    platform: Stack, http: aiohttp.ClientSession
) -> None:
    token = user_token(platform)
    # Verified with the auth service's keys; the routing service is not deployed here, so 503.
    status, _, body = await call(
        http, "GET", platform.base_url + "/v1/route?from=1,1&to=1,1", {"Authorization": f"Bearer {token}"}
    )
    assert status == 503, body


async def test_refusals_are_not_logged_as_errors(platform: Stack, http: aiohttp.ClientSession) -> None:
    request_id = f"refused-{uuid.uuid4().hex}"
    for path in ("/v1/authenticate", "/internal/anything", "/metrics"):
        async with http.post(
            platform.url("auth_service") + path, json={}, headers={"X-Request-ID": request_id}
        ) as resp:
            assert resp.status == 401
            assert resp.headers["X-Request-ID"] == request_id
    log_lines = (platform.log_dir / "auth_service.log").read_text().splitlines()
    entries = [orjson.loads(line) for line in log_lines if line.startswith("{")]
    assert [e for e in entries if e["level"] in ("ERROR", "CRITICAL")] == []


def test_the_stack_secret_is_private_to_its_owner(platform: Stack) -> None:
    path = platform.data_dir / TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == platform.internal_token


@pytest.mark.timeout(180)
async def test_internal_matrix_needs_the_secret_and_services_call_each_other_with_it(
    full_platform: Stack, http: aiohttp.ClientSession
) -> None:
    matrix = full_platform.url("route_service") + "/internal/matrix"
    body = {"sources": [CASINO, PALAIS], "destinations": [CASINO, PALAIS], "annotations": ["duration"]}
    status, content_type, answer = await call(http, "POST", matrix, PROBLEM, json=body)
    assert (status, content_type, answer["type"]) == (401, "application/problem+json", REFUSED_TYPE)
    status, _, answer = await call(http, "POST", matrix, full_platform.internal_headers(), json=body)
    assert status == 200 and len(answer["durations"]) == 2, answer
    # Through the gateway: the optimize service asks the route service for its matrix, and the
    # gateway gathers the providers from the geocoding and routing services.
    user = {"Authorization": f"Bearer {user_token(full_platform)}", **PROBLEM}
    stops = [{"name": "Casino", "coordinate": CASINO}, {"name": "Palais", "coordinate": PALAIS}]
    status, _, answer = await call(http, "POST", full_platform.base_url + "/v1/optimize/stops", user, json=stops)
    assert status == 200, answer
    status, _, answer = await call(http, "GET", full_platform.base_url + "/v1/providers", user)
    assert status == 200 and answer["routing"]["available"] and answer["geocoding"]["available"], answer
