"""GCRA rate limits on a real Redis: bursts pass, then 429 with a sensible retry time."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from common.redis import ResilientRedis
from gateway.app import create_app
from gateway.client_address import TrustedProxies, parse_trusted_proxies
from gateway.config import GatewayConfig, RateLimit, parse_rate_limits
from gateway.ratelimit import RateLimiter
from tests.gateway.keys import TestKey, jwks


async def test_burst_then_refused(redis_server: str) -> None:
    redis = ResilientRedis(redis_server)
    limiter = RateLimiter(redis, {"demo": RateLimit(rate=1, burst=3)})
    account = uuid.uuid4().hex
    decisions = [await limiter.check(account, "demo") for _ in range(4)]
    assert [d.allowed for d in decisions if d] == [True, True, True, False]
    assert [d.remaining for d in decisions if d][:3] == [2, 1, 0]
    refused = decisions[3]
    assert refused is not None
    assert refused.retry_after_seconds == 1
    assert refused.headers()["Retry-After"] == "1"
    assert refused.headers()["RateLimit-Limit"] == "3"
    await redis.close()


async def test_accounts_are_limited_separately(redis_server: str) -> None:
    redis = ResilientRedis(redis_server)
    limiter = RateLimiter(redis, {"demo": RateLimit(rate=1, burst=1)})
    first, second = uuid.uuid4().hex, uuid.uuid4().hex
    assert (await limiter.check(first, "demo")).allowed  # type: ignore[union-attr]
    assert not (await limiter.check(first, "demo")).allowed  # type: ignore[union-attr]
    assert (await limiter.check(second, "demo")).allowed  # type: ignore[union-attr]
    await redis.close()


async def test_unlimited_tier_is_not_counted(redis_server: str) -> None:
    redis = ResilientRedis(redis_server)
    limiter = RateLimiter(redis, parse_rate_limits("unlimited=0/0"))
    assert await limiter.check("x", "unlimited") is None
    await redis.close()


async def test_redis_down_fails_open() -> None:
    redis = ResilientRedis("redis://127.0.0.1:1/0", timeout=0.1)
    limiter = RateLimiter(redis, {"demo": RateLimit(rate=1, burst=1)})
    assert await limiter.check("x", "demo") is None
    assert await limiter.check("x", "demo") is None
    await redis.close()


def test_rate_limit_spec_parsing() -> None:
    limits = parse_rate_limits("demo=2/10, standard=50/100")
    assert limits["demo"] == RateLimit(2.0, 10)
    assert limits["standard"].burst == 100


async def test_the_429_names_the_rate_and_the_burst(redis_server: str) -> None:
    redis = ResilientRedis(redis_server)
    limiter = RateLimiter(redis, parse_rate_limits("standard=50/3"))
    account = uuid.uuid4().hex
    decisions = [await limiter.check(account, "standard") for _ in range(4)]
    refused = decisions[-1]
    assert refused is not None and not refused.allowed
    assert refused.refusal().startswith("rate limit exceeded: 50 requests per second, in bursts of up to 3; retry in ")
    await redis.close()


# ---------------------------------------------------------------- the client's address


PROXIES = TrustedProxies(parse_trusted_proxies("10.0.0.0/8, 192.168.1.5, fd00::/8"))


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        # No trusted peer: the header is the client's own word, ignored.
        ("203.0.113.9", ["198.51.100.1"], "203.0.113.9"),
        (None, ["198.51.100.1"], ""),
        # A trusted peer: the right-most address that is not a proxy.
        ("10.1.2.3", ["198.51.100.1"], "198.51.100.1"),
        ("10.1.2.3", ["6.6.6.6, 198.51.100.1"], "198.51.100.1"),  # the client forged the left one
        ("10.1.2.3", ["6.6.6.6", "198.51.100.1, 192.168.1.5"], "198.51.100.1"),  # two headers, two proxies
        ("10.1.2.3", ["not-an-address, 10.9.9.9"], "10.9.9.9"),  # garbage stops at the last proxy
        ("10.1.2.3", ["10.4.4.4"], "10.4.4.4"),  # every hop a proxy: the left-most
        ("10.1.2.3", [], "10.1.2.3"),
        ("::ffff:10.1.2.3", ["198.51.100.1"], "198.51.100.1"),  # an IPv4 peer on a dual-stack socket
        ("fd00::1", ["[2001:db8::7]:51234"], "2001:db8::7"),
        ("10.1.2.3", ["198.51.100.1:4711"], "198.51.100.1"),
    ],
)
def test_the_client_address_comes_from_trusted_proxies_only(
    peer: str | None, forwarded: list[str], client: str
) -> None:
    assert PROXIES.client_address(peer, forwarded) == client


def test_no_trusted_proxies_by_default() -> None:
    assert TrustedProxies().client_address("10.1.2.3", ["198.51.100.1"]) == "10.1.2.3"
    assert GatewayConfig.from_env(trusted_proxies=()).trusted_proxies == ()


@pytest.mark.parametrize("text", ["10.0.0.0/33", "proxy.example", "10.0.0.1/8/2"])
def test_a_bad_trusted_proxy_is_a_configuration_error(text: str) -> None:
    with pytest.raises(SystemExit, match="TRUSTED_PROXIES"):
        parse_trusted_proxies(text)


def login_upstream(key: TestKey) -> web.Application:
    async def login(request: web.Request) -> web.Response:
        return web.json_response({"forwardedFor": request.headers.get("X-Forwarded-For")})

    async def keys(request: web.Request) -> web.Response:
        return web.json_response(jwks(key))

    app = web.Application()
    app.router.add_post("/v1/authenticate", login)
    app.router.add_get("/.well-known/jwks.json", keys)
    return app


Gateway = Callable[[str], Awaitable[TestClient[Any, Any]]]


@pytest.fixture
async def login_gateway(aiohttp_client: Any, redis_server: str) -> AsyncIterator[Gateway]:
    """A gateway (the tests connect from 127.0.0.1) allowing one login per address at a time."""
    upstream = TestServer(login_upstream(TestKey("k1")))
    await upstream.start_server()
    base = str(upstream.make_url("")).rstrip("/")
    state = aioredis.Redis.from_url(redis_server)

    async def make(trusted: str) -> TestClient[Any, Any]:
        await state.delete("ratelimit:ip:127.0.0.1")
        config = GatewayConfig(
            service="gateway",
            redis_url=redis_server,
            upstreams={"auth_service": base},
            jwks_url=base + "/.well-known/jwks.json",
            rate_limits={"anonymous": RateLimit(0.01, 1)},
            trusted_proxies=parse_trusted_proxies(trusted),
        )
        client: TestClient[Any, Any] = await aiohttp_client(create_app(config))
        return client

    yield make
    await state.delete("ratelimit:ip:127.0.0.1")  # the slow limit must not refuse later tests' logins
    await state.aclose()
    await upstream.close()


def fresh_address() -> str:
    return f"2001:db8::{uuid.uuid4().hex[:4]}:{uuid.uuid4().hex[:4]}"


async def test_behind_a_trusted_proxy_each_client_has_its_own_login_limit(login_gateway: Gateway) -> None:
    gateway = await login_gateway("127.0.0.0/8")
    first, second = fresh_address(), fresh_address()

    async def login(address: str) -> int:
        response = await gateway.post("/v1/authenticate", json={}, headers={"X-Forwarded-For": address})
        return response.status

    # Before: every client behind the proxy shared the proxy's address, and the second was refused.
    assert [await login(first), await login(second), await login(first)] == [200, 200, 429]


async def test_a_forged_forwarded_for_from_an_untrusted_peer_gets_no_fresh_limit(login_gateway: Gateway) -> None:
    gateway = await login_gateway("")
    statuses = []
    for _ in range(2):
        response = await gateway.post("/v1/authenticate", json={}, headers={"X-Forwarded-For": fresh_address()})
        statuses.append(response.status)
    assert statuses == [200, 429]


@pytest.mark.parametrize(("trusted", "seen"), [("127.0.0.0/8", "198.51.100.1"), ("", "127.0.0.1")])
async def test_the_services_are_told_the_client_address(login_gateway: Gateway, trusted: str, seen: str) -> None:
    gateway = await login_gateway(trusted)
    response = await gateway.post("/v1/authenticate", json={}, headers={"X-Forwarded-For": "6.6.6.6, 198.51.100.1"})
    assert response.status == 200
    assert (await response.json())["forwardedFor"] == seen
