"""HTTP handlers: read the request, call the provider, answer. Errors are raised, never formatted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from common.service import CACHE_REDIS_KEY, json_response
from geo_service.autocomplete import last_word_complete
from geo_service.cache import cache_key, cached, normalized_text
from geo_service.config import GeoConfig
from geo_service.formatter import response_json
from geo_service.providers import GeocodeProvider, ProviderRegistry
from geo_service.validation import autocomplete_request, geocode_request, reverse_request

REGISTRY_KEY: web.AppKey[ProviderRegistry] = web.AppKey("geo_providers", ProviderRegistry)
GEO_CONFIG_KEY: web.AppKey[GeoConfig] = web.AppKey("geo_config", GeoConfig)


async def geocode(request: web.Request) -> web.Response:
    parsed = geocode_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        answer = await provider.geocode(query)
        return response_json(answer.results, provider.name, answer.notes)

    structured = query.structured
    text = query.text if structured is None else "\x1e".join(p or "" for p in structured.__dict__.values())
    parts = ("structured" if structured else "text", normalized_text(text), query.country, query.limit)
    return await cached_answer(request, "geocode", provider, parts, compute)


async def reverse(request: web.Request) -> web.Response:
    parsed = reverse_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        answer = await provider.reverse(query)
        return response_json(answer.results, provider.name, answer.notes)

    # Rounded to ~1 cm: nearer points than that get the same answer anyway.
    parts = (round(query.lat, 7), round(query.lon, 7), query.limit)
    return await cached_answer(request, "reverse", provider, parts, compute)


async def autocomplete(request: web.Request) -> web.Response:
    parsed = autocomplete_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        return response_json(await provider.autocomplete(query), provider.name)

    # A trailing space changes the answer (the last word is finished), so it is part of the key.
    # The focus is rounded to ~10 m: a focus factor over kilometres does not tell such points apart.
    focus = None if query.focus is None else (round(query.focus[0], 4), round(query.focus[1], 4))
    text = (normalized_text(query.text), last_word_complete(query.text))
    return await cached_answer(request, "autocomplete", provider, (*text, query.country, query.limit, focus), compute)


async def cached_answer(
    request: web.Request,
    operation: str,
    provider: GeocodeProvider,
    parts: tuple[Any, ...],
    compute: Callable[[], Awaitable[dict[str, Any]]],
) -> web.Response:
    """The answer from the cache, or computed and stored. A provider without a cache token
    (no dataset to key the answer on) is never cached."""
    token = provider.cache_token()
    key = None if token is None else cache_key(operation, provider.name, token, parts)
    ttl = request.app[GEO_CONFIG_KEY].cache_seconds
    return json_response(await cached(request.app[CACHE_REDIS_KEY], key, ttl, compute))


async def providers(request: web.Request) -> web.Response:
    registry = request.app[REGISTRY_KEY]
    return json_response({"geocoder": registry.describe(), "default": registry.default})
