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
from geo_service.analysis import folded_text
from geo_service.autocomplete import last_word_complete
from geo_service.model import AutocompleteQuery, ReverseQuery
from geo_service.providers.base import GeocodeProvider

KEY_PREFIX = "geo:v1:"


def cache_key(operation: str, provider: str, dataset: str, parts: tuple[Any, ...]) -> str:
    text = "\x1f".join(str(p) for p in (operation, provider, dataset, *parts))
    return KEY_PREFIX + hashlib.sha256(text.encode()).hexdigest()


def reverse_parts(query: ReverseQuery) -> tuple[Any, ...]:
    # Rounded to ~1 cm: nearer points than that get the same answer anyway.
    return (round(query.lat, 7), round(query.lon, 7), query.limit)


def autocomplete_parts(query: AutocompleteQuery) -> tuple[Any, ...]:
    # A trailing space changes the answer (the last word is finished), so it is part of the key.
    # The focus is rounded to ~10 m: a focus factor over kilometres does not tell such points apart.
    focus = None if query.focus is None else (round(query.focus[0], 4), round(query.focus[1], 4))
    text = (folded_text(query.text), last_word_complete(query.text))
    return (*text, query.country, query.limit, focus)


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
        """The answer from the cache, or computed and stored."""
        key = self.key(operation, provider, parts)
        stored = await self.stored(key)
        if stored is not None:
            return stored
        value = await compute()
        self.keep(key, value)
        return value

    @staticmethod
    def key(operation: str, provider: GeocodeProvider, parts: tuple[Any, ...]) -> str | None:
        """The answer's key, taken before it is computed (the dataset may change meanwhile); None
        for a provider without a cache token (no dataset to key the answer on): never cached."""
        token = provider.cache_token()
        return None if token is None else cache_key(operation, provider.name, token, parts)

    async def stored(self, key: str | None) -> dict[str, Any] | None:
        """The cached answer, if any (a damaged entry counts as none: it is recomputed and overwritten)."""
        stored = None if key is None else await self.redis.get(key)
        if stored is None:
            return None
        try:
            value: dict[str, Any] = orjson.loads(stored)
            return value
        except orjson.JSONDecodeError:
            return None

    def keep(self, key: str | None, value: dict[str, Any]) -> None:
        """Caches the answer behind it (the answer does not wait for Redis)."""
        if key is not None:
            self.redis.set_behind(key, orjson.dumps(value), self.ttl_seconds)
