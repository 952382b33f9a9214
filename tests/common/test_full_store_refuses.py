"""Limits never fail open because the state Redis is full (issue 55: results landing could fill
it, and then every rate-limit check let its request through). A Redis that answers "OOM command
not allowed" is reachable: the request is refused (503, saying why, with Retry-After); only an
unreachable Redis keeps the documented fail-open."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from common.admission import Admission, Caller, cost, parse_cost_budgets
from common.errors import ServiceUnavailable
from common.redis import ResilientRedis
from gateway.config import RateLimit
from gateway.ratelimit import RateLimiter


@pytest.fixture
def full_redis(redis_server: str) -> Iterator[str]:
    """The session's Redis at a memory cap below what it holds, refusing writes (noeviction)."""
    raw = redis.Redis.from_url(redis_server)
    before = raw.config_get("maxmemory*")
    raw.config_set("maxmemory-policy", "noeviction")
    raw.config_set("maxmemory", "1")
    try:
        yield redis_server
    finally:
        raw.config_set("maxmemory", str(before["maxmemory"]))
        raw.config_set("maxmemory-policy", str(before["maxmemory-policy"]))
        raw.close()


async def test_a_full_state_redis_refuses_the_request_rate_instead_of_allowing(full_redis: str) -> None:
    resilient = ResilientRedis(full_redis)
    try:
        limiter = RateLimiter(resilient, {"demo": RateLimit(rate=1, burst=3)})
        with pytest.raises(ServiceUnavailable) as refused:
            await limiter.check(uuid.uuid4().hex, "demo")
        assert refused.value.status == 503 and int(refused.value.headers["Retry-After"]) >= 1
        assert "full" in refused.value.detail
    finally:
        await resilient.close()


async def test_a_full_state_redis_refuses_the_work_budget_and_heavy_slots(full_redis: str) -> None:
    resilient = ResilientRedis(full_redis)
    try:
        admission = Admission(resilient, parse_cost_budgets("standard=0/100/1000/2"))
        caller = Caller(uuid.uuid4().hex, "standard")
        for price in (cost(50, "50 units"), cost(1, "a heavy request", heavy=True)):
            with pytest.raises(ServiceUnavailable):
                async with admission.admit(caller, price):
                    pytest.fail("admitted by a full store")
    finally:
        await resilient.close()


async def test_an_unreachable_redis_still_fails_open() -> None:
    resilient = ResilientRedis("redis://127.0.0.1:1/0", timeout=0.2)
    try:
        assert await RateLimiter(resilient, {"demo": RateLimit(rate=1, burst=3)}).check("a", "demo") is None
    finally:
        await resilient.close()
