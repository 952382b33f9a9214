"""Answers cached in Redis, keyed by the normalized query and the dataset it was answered from.

A new import changes the dataset hash and so every key; no invalidation is needed. When
Redis is down ResilientRedis answers None / False and every request is simply computed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from common.redis import ResilientRedis
from geo_service.normalize import fold
from geo_service.providers.base import GeocodeProvider

KEY_PREFIX = "geo:v1:"


def cache_key(operation: str, provider: str, dataset: str, parts: tuple[Any, ...]) -> str:
    text = "\x1f".join(str(p) for p in (operation, provider, dataset, *parts))
    return KEY_PREFIX + hashlib.sha256(text.encode()).hexdigest()


def normalized_text(text: str) -> str:
    """Case, accents and spacing do not change the answer, so they share a cache entry."""
    return " ".join(fold(text).split())


class AnswerCache:
    """Geocoder answers kept `ttl_seconds` (GEO_CACHE_SECONDS) in the cache Redis."""

    def __init__(self, redis: ResilientRedis, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl_seconds = ttl_seconds

    async def answer(
        self,
        operation: str,
        provider: GeocodeProvider,
        parts: tuple[Any, ...],
        compute: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """The answer from the cache, or computed and stored. A provider without a cache token
        (no dataset to key the answer on) is never cached."""
        token = provider.cache_token()
        key = None if token is None else cache_key(operation, provider.name, token, parts)
        return await cached(self.redis, key, self.ttl_seconds, compute)


async def cached(
    redis: ResilientRedis, key: str | None, ttl_seconds: int, compute: Callable[[], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    if key is None:
        return await compute()
    stored = await redis.get(key)
    if stored is not None:
        try:
            value: dict[str, Any] = orjson.loads(stored)
            return value
        except orjson.JSONDecodeError:
            pass  # a damaged entry is recomputed and overwritten
    value = await compute()
    redis.set_behind(key, orjson.dumps(value), ttl_seconds)  # the answer does not wait for it
    return value
