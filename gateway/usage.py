"""Each account's recent usage: requests and rate-limit refusals per hour, for `/v1/account/usage`.

Counted in the gateway's memory and added to the state Redis every few seconds in one
pipeline (`usage:<subject>:<hour>`, a hash of `requests` and `rateLimited`, kept 8 days), so
the request path pays no Redis call for it; several gateway workers add up in Redis. A crash
loses at most the last few seconds of counts, and while Redis is down the counts wait in
memory (bounded) until it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis

from common.redis import ResilientRedis

log = logging.getLogger("gateway.usage")

HOUR = 3600
KEEP_SECONDS = 8 * 24 * HOUR
HOURS_SHOWN = 24
DAYS_SUMMED = 7
FLUSH_SECONDS = 5.0
# Unflushed (account, hour) pairs kept while Redis is down; beyond it the oldest counts go.
MAX_PENDING = 100_000
FIELDS = ("requests", "rateLimited")

Key = tuple[str, int, str]  # subject, hour (unix seconds at its start), field


@dataclass(frozen=True)
class HourUsage:
    start: int
    requests: int
    rate_limited: int

    def json(self) -> dict[str, Any]:
        at = datetime.fromtimestamp(self.start, UTC).isoformat().replace("+00:00", "Z")
        return {"hour": at, "requests": self.requests, "rateLimited": self.rate_limited}


def hour_of(now: float) -> int:
    return int(now) // HOUR * HOUR


def redis_key(subject: str, hour: int) -> str:
    return f"usage:{subject}:{hour}"


def totals(hours: list[HourUsage]) -> dict[str, int]:
    return {"requests": sum(h.requests for h in hours), "rateLimited": sum(h.rate_limited for h in hours)}


class UsageCounter:
    def __init__(self, redis: ResilientRedis, flush_seconds: float = FLUSH_SECONDS) -> None:
        self.redis = redis
        self.flush_seconds = flush_seconds
        self.pending: Counter[Key] = Counter()

    def count(self, subject: str, *, rate_limited: bool, now: float | None = None) -> None:
        hour = hour_of(time.time() if now is None else now)
        self.pending[(subject, hour, "rateLimited" if rate_limited else "requests")] += 1
        if len(self.pending) > MAX_PENDING:
            oldest = min(self.pending, key=lambda key: key[1])
            del self.pending[oldest]

    async def flush(self) -> None:
        """Adds the counts to Redis; they stay pending when it does not answer."""
        if not self.pending:
            return
        batch, self.pending = self.pending, Counter()

        async def write(client: Redis) -> bool:
            async with client.pipeline(transaction=False) as pipe:
                for (subject, hour, field), amount in batch.items():
                    pipe.hincrby(redis_key(subject, hour), field, amount)
                    pipe.expire(redis_key(subject, hour), KEEP_SECONDS)
                await pipe.execute()
            return True

        if not await self.redis.call(write, False):
            self.pending.update(batch)

    async def recent(self, subject: str, now: float | None = None) -> dict[str, Any]:
        """The last 24 hours hour by hour (oldest first) and the sums of 24 hours and 7 days,
        counts not yet in Redis included."""
        current = hour_of(time.time() if now is None else now)
        starts = [current - HOUR * back for back in range(DAYS_SUMMED * 24 - 1, -1, -1)]
        stored = await self._stored(subject, starts)
        hours = [self._hour(subject, start, stored.get(start, {})) for start in starts]
        shown = hours[-HOURS_SHOWN:]
        return {
            "hours": [h.json() for h in shown],
            "last24Hours": totals(shown),
            "last7Days": totals(hours),
        }

    def _hour(self, subject: str, start: int, stored: dict[str, int]) -> HourUsage:
        def value(field: str) -> int:
            return stored.get(field, 0) + self.pending.get((subject, start, field), 0)

        return HourUsage(start, value("requests"), value("rateLimited"))

    async def _stored(self, subject: str, starts: list[int]) -> dict[int, dict[str, int]]:
        async def read(client: Redis) -> list[Any]:
            async with client.pipeline(transaction=False) as pipe:
                for start in starts:
                    pipe.hgetall(redis_key(subject, start))
                return list(await pipe.execute())

        answers: list[Any] = await self.redis.call(read, [])
        return {
            start: {_text(k): int(v) for k, v in answer.items()}
            for start, answer in zip(starts, answers, strict=False)
            if answer
        }


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def flushing(counter: UsageCounter) -> AsyncIterator[None]:
    """Flushes every few seconds while the gateway runs, and once more when it stops."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(counter.flush_seconds)
            try:
                await counter.flush()
            except Exception:
                log.exception("adding usage counts to Redis failed; they are retried")

    task = asyncio.create_task(loop(), name="usage-flush")
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await counter.flush()
