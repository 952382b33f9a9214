"""GCRA rate limits on a real Redis: bursts pass, then 429 with a sensible retry time."""

from __future__ import annotations

import uuid

from common.redis import ResilientRedis
from gateway.config import RateLimit, parse_rate_limits
from gateway.ratelimit import RateLimiter


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
