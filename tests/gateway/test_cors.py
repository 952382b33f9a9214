"""CORS at the gateway: preflights need no token, answers and errors carry the headers for
allowed origins only, and the configured origins are honoured."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.app import create_app
from gateway.config import GatewayConfig, parse_origins

PAGE = "https://maps.example.org"
PREFLIGHT = {"Origin": PAGE, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}
PROBLEM = {"Accept": "application/json, application/problem+json"}
LEGACY = {"Accept": "application/json"}
MakeClient = Callable[..., Awaitable[TestClient]]


@pytest.fixture
def gateway(aiohttp_client: Any) -> MakeClient:
    async def make(origins: tuple[str, ...] = ("*",)) -> TestClient:
        # No Redis and no auth service: neither is reached before a token is checked.
        config = GatewayConfig(service="gateway", redis_url="redis://127.0.0.1:1/0", cors_allowed_origins=origins)
        client: TestClient = await aiohttp_client(create_app(config))
        return client

    return make


@pytest.mark.parametrize(("path", "methods"), [("/v1/route", "GET, OPTIONS"), ("/v1/optimize/stops", "POST, OPTIONS")])
async def test_a_preflight_needs_no_token(gateway: MakeClient, path: str, methods: str) -> None:
    client = await gateway()
    resp = await client.options(path, headers=PREFLIGHT)
    assert resp.status == 204
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert resp.headers["Access-Control-Allow-Methods"] == methods
    assert "Authorization" in resp.headers["Access-Control-Allow-Headers"]
    assert int(resp.headers["Access-Control-Max-Age"]) > 0
    assert "WWW-Authenticate" not in resp.headers
    assert "Access-Control-Allow-Credentials" not in resp.headers  # tokens, not cookies


async def test_a_trailing_slash_names_the_same_operation_for_options(gateway: MakeClient) -> None:
    client = await gateway()
    resp = await client.options("/v1/route/", headers=PREFLIGHT)
    assert resp.status == 204


async def test_plain_options_lists_the_methods(gateway: MakeClient) -> None:
    client = await gateway()
    resp = await client.options("/v1/authenticate")
    assert resp.status == 204
    assert resp.headers["Allow"] == "POST, OPTIONS"
    assert "Access-Control-Allow-Origin" not in resp.headers  # no Origin, no CORS


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY], ids=["problem", "legacy"])
async def test_options_on_an_unknown_path_is_404_in_our_format(gateway: MakeClient, accept: dict[str, str]) -> None:
    client = await gateway()
    resp = await client.options("/v1/nowhere", headers={**PREFLIGHT, **accept})
    assert resp.status == 404
    body = await resp.json(content_type=None)
    assert body["status"] == 404 and ("type" in body) != (accept is LEGACY)


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY], ids=["problem", "legacy"])
async def test_errors_carry_the_cors_headers_too(gateway: MakeClient, accept: dict[str, str]) -> None:
    client = await gateway()
    resp = await client.get("/v1/route", headers={"Origin": PAGE, **accept})
    assert resp.status == 401
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    exposed = resp.headers["Access-Control-Expose-Headers"]
    assert "X-Request-ID" in exposed and "Retry-After" in exposed and "RateLimit-Remaining" in exposed
    assert resp.headers["Cache-Control"] == "no-store"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"


async def test_a_listed_origin_is_echoed_and_others_get_nothing(gateway: MakeClient) -> None:
    client = await gateway((PAGE, "https://other.example"))
    allowed = await client.options("/v1/route", headers=PREFLIGHT)
    assert allowed.status == 204
    assert allowed.headers["Access-Control-Allow-Origin"] == PAGE
    assert "Origin" in allowed.headers["Vary"]

    refused = await client.options("/v1/route", headers={**PREFLIGHT, "Origin": "https://evil.example", **PROBLEM})
    assert refused.status == 403
    assert refused.headers["Content-Type"] == "application/problem+json"
    assert "Access-Control-Allow-Origin" not in refused.headers

    simple = await client.get("/v1/route", headers={"Origin": "https://evil.example"})
    assert simple.status == 401
    assert "Access-Control-Allow-Origin" not in simple.headers
    assert "Origin" in simple.headers["Vary"]


async def test_no_origins_turns_cross_origin_calls_off(gateway: MakeClient) -> None:
    client = await gateway(())
    resp = await client.options("/v1/route", headers=PREFLIGHT)
    assert resp.status == 403
    assert "Access-Control-Allow-Origin" not in resp.headers


@pytest.mark.parametrize(
    ("text", "origins"),
    [
        ("*", ("*",)),
        ("https://a.example/, https://b.example:8443", ("https://a.example", "https://b.example:8443")),
        ("", ()),
        (" , ", ()),
    ],
)
def test_allowed_origins_from_the_environment(text: str, origins: tuple[str, ...]) -> None:
    assert parse_origins(text) == origins


async def test_the_spec_may_be_cached_and_api_answers_may_not(gateway: MakeClient) -> None:
    client = await gateway()
    spec = await client.get("/v1/openapi.json")
    assert spec.headers["Cache-Control"] == "public, max-age=300"
    docs = await client.get("/docs")
    assert docs.headers["Cache-Control"] == "public, max-age=300"
    health = await client.get("/metrics")
    assert health.headers["Cache-Control"] == "no-store"
    assert "aiohttp" not in health.headers["Server"].lower()
