"""The gateway sends the internal credential on every call to a service, and a service that
refuses it is the platform's fault (502), never the client's (401)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from multidict import CIMultiDict

from common.config import BaseConfig
from common.internal_auth import INTERNAL_TOKEN_HEADER
from common.service import base_app
from gateway.app import create_app, trusted_peer
from gateway.client_address import TrustedProxies, parse_trusted_proxies
from gateway.config import GatewayConfig, RateLimit
from gateway.jwks import jwks_credential
from tests.gateway.keys import TestKey, jwks

TOKEN = "gateway-test-internal-token-0123456789abcdef"
PROBLEM = {"Accept": "application/json, application/problem+json"}


def checking_service(key: TestKey) -> web.Application:
    """Every upstream of the gateway at once, behind the real credential check."""

    async def authenticate(request: web.Request) -> web.Response:
        return web.json_response({"token": "t"})

    async def jwks_handler(request: web.Request) -> web.Response:
        return web.json_response(jwks(key))

    async def providers(request: web.Request) -> web.Response:
        return web.json_response({"providers": [{"name": "osm"}], "default": "osm"})

    app = base_app(BaseConfig(service="upstream", internal_token=TOKEN), with_redis=False)
    app.router.add_post("/v1/authenticate", authenticate)
    app.router.add_get("/.well-known/jwks.json", jwks_handler)
    app.router.add_get("/internal/providers", providers)
    return app


GatewayFactory = Callable[[str], Any]


@pytest.fixture
async def gateway_with(aiohttp_client: Any, redis_server: str) -> AsyncIterator[GatewayFactory]:
    """Builds a gateway in front of one checking upstream, with the internal token given."""
    key = TestKey("k1")
    upstream = TestServer(checking_service(key), host="127.0.0.1")
    await upstream.start_server()
    base = str(upstream.make_url("")).rstrip("/")

    async def make(internal_token: str) -> tuple[TestClient, TestKey]:
        config = GatewayConfig(
            service="gateway",
            redis_url=redis_server,
            upstreams={"auth_service": base, "route_service": base, "geo_service": base},
            jwks_url=base + "/.well-known/jwks.json",
            rate_limits={"standard": RateLimit(1000, 1000), "anonymous": RateLimit(1000, 1000)},
            internal_token=internal_token,
        )
        client: TestClient = await aiohttp_client(create_app(config))
        return client, key

    yield make
    await upstream.close()


async def test_the_gateway_forwards_gathers_and_loads_keys_with_the_credential(gateway_with: GatewayFactory) -> None:
    gateway, key = await gateway_with(TOKEN)
    forwarded = await gateway.post("/v1/authenticate", json={"user": "a@b.c", "password": "x"})
    assert forwarded.status == 200 and await forwarded.json() == {"token": "t"}
    # The signing keys were fetched through the check, so a token is verified.
    providers = await gateway.get("/v1/providers", headers={"Authorization": f"Bearer {key.token()}"})
    assert providers.status == 200
    body = await providers.json()
    assert body["routing"]["available"] and body["geocoding"]["available"], body
    # The gateway's own port stays public: its users do not hold the internal secret.
    assert (await gateway.get("/v1/openapi.json")).status == 200


async def test_a_gateway_with_another_secret_answers_502_not_401(
    gateway_with: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gateway, _ = await gateway_with("not-the-services-secret")
    resp = await gateway.post("/v1/authenticate", json={"user": "a@b.c", "password": "x"}, headers=PROBLEM)
    assert resp.status == 502
    body = await resp.json(content_type=None)
    assert body["type"] == "/problems/general/bad-gateway"
    assert "WWW-Authenticate" not in resp.headers
    assert any("INTERNAL_TOKEN" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)


def test_the_secret_goes_to_our_auth_service_only() -> None:
    ours = GatewayConfig(
        upstreams={"auth_service": "http://auth:8081"}, jwks_url="http://auth:8081/.well-known/jwks.json"
    )
    ours.internal_token = TOKEN
    assert jwks_credential(ours) == TOKEN
    for elsewhere in ("https://issuer.example.com/jwks.json", "http://auth:8081.example.com/jwks.json"):
        ours.jwks_url = elsewhere
        assert jwks_credential(ours) == ""


async def test_the_gateways_metrics_need_the_credential_and_allow_no_other_origin(
    gateway_with: GatewayFactory,
) -> None:
    """The campaign read Python's version, per-route counts and memory from the public port,
    from any web page (`Access-Control-Allow-Origin: *`)."""
    gateway, _ = await gateway_with(TOKEN)
    origin = {"Origin": "https://elsewhere.example"}
    refused = await gateway.get("/metrics", headers={**origin, **PROBLEM})
    assert refused.status == 401
    assert (await refused.json(content_type=None))["type"] == "/problems/general/internal-credential-required"
    assert "Access-Control-Allow-Origin" not in refused.headers
    wrong = await gateway.get("/metrics", headers={INTERNAL_TOKEN_HEADER: "guess"})
    assert wrong.status == 401
    scraped = await gateway.get("/metrics", headers={**origin, INTERNAL_TOKEN_HEADER: TOKEN})
    assert scraped.status == 200 and "http_requests_total" in await scraped.text()
    assert "Access-Control-Allow-Origin" not in scraped.headers
    # The API itself still allows pages of any origin.
    spec = await gateway.get("/v1/openapi.json", headers=origin)
    assert spec.headers["Access-Control-Allow-Origin"] == "*"


async def test_the_gateways_health_shows_internals_only_with_the_credential(gateway_with: GatewayFactory) -> None:
    gateway, _ = await gateway_with(TOKEN)
    anonymous = await gateway.get("/health")
    assert anonymous.status == 200
    assert await anonymous.json() == {"service": "gateway", "status": "ok"}
    ours = await gateway.get("/health", headers={INTERNAL_TOKEN_HEADER: TOKEN})
    body = await ours.json()
    assert ours.status == 200 and body["status"] == "ok"
    assert set(body["services"]) == {"auth_service", "route_service", "geo_service"}
    assert body["signingKeys"] == 1 and body["redis"] == "up"


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
async def test_two_authorization_headers_are_a_400(gateway_with: GatewayFactory, legacy: bool) -> None:
    """Today's first-wins reading would let a proxy and the gateway disagree on who calls."""
    gateway, key = await gateway_with(TOKEN)
    headers = CIMultiDict([("Authorization", f"Bearer {key.token()}"), ("Authorization", "Bearer other")])
    headers["Accept"] = "application/json" if legacy else PROBLEM["Accept"]
    resp = await gateway.get("/v1/providers", headers=headers)
    assert resp.status == 400
    body = await resp.json(content_type=None)
    if legacy:
        assert body["details"][0]["code"] == "ERROR_MALFORMED_REQUEST"
    else:
        assert body["type"] == "/problems/general/malformed-request" and "Authorization" in body["detail"]
    one = await gateway.get("/v1/providers", headers={"Authorization": f"Bearer {key.token()}"})
    assert one.status == 200


def test_the_trusted_proxies_are_left_out_of_the_connection_cap() -> None:
    trusted = trusted_peer(TrustedProxies(parse_trusted_proxies("10.0.0.0/8, 2001:db8::/32")))
    assert trusted("10.1.2.3") and trusted("::ffff:10.1.2.3") and trusted("2001:db8::7")
    assert not trusted("192.0.2.1") and not trusted("not an address")
    assert not trusted_peer(TrustedProxies(()))("10.1.2.3")
