"""Redis access that never takes a request down with it.

Every call goes through `ResilientRedis.call`: when Redis is unreachable the call answers
the given fallback, the outage is logged once, and Redis is not asked again for
`retry_after` seconds, so requests do not each wait for a connect timeout. The first
call after that window tries again, which is how the services recover on their own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError

log = logging.getLogger("common.redis")
T = TypeVar("T")


class ResilientRedis:
    def __init__(self, url: str, *, timeout: float = 0.25, retry_after: float = 1.0) -> None:
        self.url = url
        self.retry_after = retry_after
        self.client: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            health_check_interval=0,
        )
        self._down_until = 0.0
        self._down_logged = False

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def call(self, operation: Callable[[aioredis.Redis], Awaitable[T]], fallback: T) -> T:
        if not self.available:
            return fallback
        try:
            result = await operation(self.client)
        except (RedisError, OSError) as exc:
            self._mark_down(exc)
            return fallback
        if self._down_logged:
            log.warning("redis is reachable again", extra={"fields": {"redis": self.url}})
            self._down_logged = False
        return result

    def _mark_down(self, exc: BaseException) -> None:
        self._down_until = time.monotonic() + self.retry_after
        if not self._down_logged:
            log.error("redis unreachable, bypassing it: %s", exc, extra={"fields": {"redis": self.url}})
            self._down_logged = True

    async def get(self, key: str) -> bytes | None:
        async def op(r: aioredis.Redis) -> bytes | None:
            value = await r.get(key)
            return value if isinstance(value, bytes) or value is None else str(value).encode()

        return await self.call(op, None)

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> bool:
        async def op(r: aioredis.Redis) -> bool:
            return bool(await r.set(key, value, ex=max(1, ttl_seconds)))

        return await self.call(op, False)

    async def ping(self) -> bool:
        # The health check always asks, so it sees recovery even inside the back-off window.
        try:
            return bool(await self.client.ping())
        except (RedisError, OSError):
            return False

    async def close(self) -> None:
        await self.client.aclose()

    def info(self) -> dict[str, Any]:
        return {"url": self.url, "available": self.available}
