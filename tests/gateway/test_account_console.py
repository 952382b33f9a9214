"""The gateway's part of the account console: the routes with an id in the path, the usage it
counts and answers (`/v1/account/usage`), the password change limited like the logins, the
identity it forwards, and the `/console` page's headers."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from common.redis import ResilientRedis
from gateway.app import create_app
from gateway.config import GatewayConfig, RateLimit
from gateway.routes import match_route, needs_token
from gateway.usage import HOUR, UsageCounter, hour_of
from tests.gateway.keys import TestKey, jwks

LEGACY = {"Accept": "application/json"}
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/v1/account/apikeys/7", "/v1/account/apikeys/{keyId}"),
        ("/v1/account/apikeys/7/", "/v1/account/apikeys/{keyId}"),
        ("/v1/account/apikeys/anything", "/v1/account/apikeys/{keyId}"),
        ("/v1/account/apikeys", "/v1/account/apikeys"),
        ("/v1/admin/users/12", "/v1/admin/users/{userId}"),
        ("/v1/account/apikeys/7/more", None),
        ("/v1/admin/users/12/keys", None),
        ("/v1/route", "/v1/route"),
    ],
)
def test_paths_with_an_id_match_their_route_and_need_a_token(path: str, route: str | None) -> None:
    found = match_route(path)
    assert (found.path if found else None) == route
    assert needs_token(path)


async def test_usage_is_counted_per_hour_and_stored(redis_server: str) -> None:
    redis = ResilientRedis(redis_server)
    counter = UsageCounter(redis)
    subject, now = f"user:{uuid.uuid4().hex}", 1_800_000_000.0
    for _ in range(3):
        counter.count(subject, rate_limited=False, now=now - HOUR)
    counter.count(subject, rate_limited=True, now=now)
    counter.count("user:other", rate_limited=False, now=now)
    await counter.flush()
    assert not counter.pending
    counter.count(subject, rate_limited=False, now=now)  # not flushed yet: counted all the same
    usage = await counter.recent(subject, now=now)
    assert len(usage["hours"]) == 24
    assert usage["hours"][-1] == {"hour": "2027-01-15T08:00:00Z", "requests": 1, "rateLimited": 1}
    assert usage["hours"][-2]["requests"] == 3 and hour_of(now) % HOUR == 0
    assert usage["last24Hours"] == usage["last7Days"] == {"requests": 4, "rateLimited": 1}
    await redis.close()


async def test_usage_waits_in_memory_while_redis_is_down() -> None:
    redis = ResilientRedis(UNREACHABLE_REDIS)
    counter = UsageCounter(redis)
    counter.count("user:1", rate_limited=False)
    await counter.flush()
    assert sum(counter.pending.values()) == 1
    assert (await counter.recent("user:1"))["last24Hours"] == {"requests": 1, "rateLimited": 0}
    await redis.close()


def upstream(key: TestKey) -> web.Application:
    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"headers": dict(request.headers)})

    async def jwks_handler(request: web.Request) -> web.Response:
        return web.json_response(jwks(key))

    app = web.Application()
    app.router.add_get("/.well-known/jwks.json", jwks_handler)
    app.router.add_route("*", "/v1/account/password", echo)
    app.router.add_route("*", "/v1/account/apikeys/{keyId}", echo)
    return app


@pytest.fixture
async def gateway(aiohttp_client: Any, redis_server: str) -> AsyncIterator[tuple[TestClient, TestKey]]:
    key = TestKey("k1")
    server = TestServer(upstream(key))
    await server.start_server()
    base = str(server.make_url("")).rstrip("/")
    config = GatewayConfig(
        service="gateway",
        redis_url=redis_server,
        upstreams={"auth_service": base},
        jwks_url=base + "/.well-known/jwks.json",
        rate_limits={"standard": RateLimit(1000, 1000), "anonymous": RateLimit(0.01, 2)},
        cost_budgets="standard=6000/50/7000/3,unlimited=0/0/0/0",
    )
    client: TestClient = await aiohttp_client(create_app(config))
    yield client, key
    await server.close()


async def test_usage_answers_tier_limit_and_the_callers_requests(gateway: tuple[TestClient, TestKey]) -> None:
    client, key = gateway
    token = key.token(sub=f"user:{uuid.uuid4().hex[:8]}", tier="standard")
    for _ in range(2):
        response = await client.get("/v1/account/usage", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert body["tier"] == "standard" and body["rateLimit"] == {"requestsPerSecond": 1000, "burst": 1000}
    assert body["usage"]["last24Hours"] == {"requests": 2, "rateLimited": 0}
    # The services' work-unit budget of the tier, from the same COST_BUDGETS they charge.
    assert body["costBudget"] == {
        "maxCostPerRequest": 6000,
        "costPerSecond": 50,
        "costBurst": 7000,
        "concurrentHeavyRequests": 3,
    }
    refused = await client.get("/v1/account/usage", headers=LEGACY)
    assert refused.status == 401


async def test_password_changes_are_limited_like_logins_per_account(gateway: tuple[TestClient, TestKey]) -> None:
    client, key = gateway
    subject = f"user:{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {key.token(sub=subject)}", **LEGACY}
    statuses = [(await client.post("/v1/account/password", json={}, headers=headers)).status for _ in range(3)]
    assert statuses == [200, 200, 429]
    refused = await client.post("/v1/account/password", json={}, headers=headers)
    assert (await refused.json())["details"][0]["code"] == "ERROR_TOO_MANY_REQUESTS"
    assert "Retry-After" in refused.headers
    # Another account is not held back by it.
    other = {"Authorization": f"Bearer {key.token(sub=subject + 'x')}"}
    assert (await client.post("/v1/account/password", json={}, headers=other)).status == 200


async def test_the_identity_forwarded_names_the_tokens_issue_time_and_api_key(
    gateway: tuple[TestClient, TestKey],
) -> None:
    client, key = gateway
    issued = int(time.time()) - 60  # no token lives longer than 30 days: an iat long ago is refused
    token = key.token(sub="user:5", akid="12", iat=issued, nbf=issued)
    response = await client.delete(
        "/v1/account/apikeys/3", headers={"Authorization": f"Bearer {token}", "X-Internal-Api-Key": "99"}
    )
    headers = (await response.json())["headers"]
    assert headers["X-Internal-Subject"] == "user:5"
    assert headers["X-Internal-Issued-At"] == str(issued)
    assert headers["X-Internal-Api-Key"] == "12"


async def test_the_console_page_has_a_strict_policy_and_no_referrer(aiohttp_client: Any) -> None:
    client: TestClient = await aiohttp_client(create_app(GatewayConfig(service="gateway", redis_url=UNREACHABLE_REDIS)))
    page = await client.get("/console")
    assert page.status == 200 and page.content_type == "text/html"
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "connect-src 'self';" in policy and "frame-ancestors 'none'" in policy
    assert "img-src 'self' data:;" in policy
    assert page.headers["Referrer-Policy"] == "no-referrer"
    text = await page.text()
    assert '<script src="/static/console.js"></script>' in text and "<script>" not in text
    assert not re.search(r"<(input|select)[^>]* name=", text)  # the browser itself never submits a field
    assert (await client.get("/static/console.html")).status == 404
    assert (await client.get("/static/console.js")).status == 200
