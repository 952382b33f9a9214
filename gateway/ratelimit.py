"""Per-account rate limiting in Redis with GCRA (one key per account, atomic Lua script)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from redis.asyncio import Redis

from common.admission import GCRA_CHARGE
from common.redis import ResilientRedis
from gateway.config import RateLimit


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int  # the burst: what RateLimit-Limit announces
    remaining: int
    reset_seconds: int
    retry_after_seconds: int
    rate: float = 0.0  # requests per second, sustained

    def refusal(self) -> str:
        """The 429's message: both numbers, since a burst of `limit` is allowed only once the
        sustained rate has left room for it."""
        return (
            f"rate limit exceeded: {self.rate:g} requests per second, in bursts of up to {self.limit}; "
            f"retry in {self.retry_after_seconds} s"
        )

    def headers(self) -> dict[str, str]:
        headers = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after_seconds)
        return headers


class RateLimiter:
    def __init__(self, redis: ResilientRedis, limits: dict[str, RateLimit]) -> None:
        self.redis = redis
        self.limits = limits
        self._script = redis.client.register_script(GCRA_CHARGE)  # one unit a request, no debt

    def limit_for(self, tier: str) -> RateLimit:
        return self.limits.get(tier) or self.limits.get("standard") or RateLimit(0, 0)

    async def check(self, account: str, tier: str) -> Decision | None:
        """The decision, or None when no limit applies or Redis is unreachable (fail open); 503
        when Redis is full (it answers: refusing to count is no reason to allow)."""
        limit = self.limit_for(tier)
        if limit.unlimited:
            return None
        interval_ms = 1000.0 / limit.rate

        async def run(_: Redis) -> list[int]:
            return list(await self._script(keys=[f"ratelimit:{account}"], args=[interval_ms, limit.burst, 1, 0]))

        no_answer: list[int] = []
        result = await self.redis.call(run, no_answer, refuse_when_full=True)
        if not result:
            return None
        allowed, retry_ms, remaining, reset_ms = (float(x) for x in result)
        return Decision(
            allowed=bool(allowed),
            limit=limit.burst,
            rate=limit.rate,
            remaining=max(0, int(remaining)),
            reset_seconds=max(0, math.ceil(reset_ms / 1000)),
            retry_after_seconds=max(1, math.ceil(retry_ms / 1000)),
        )
