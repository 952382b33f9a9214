"""HTTP handlers: read the request, call the provider, answer. Errors are raised, never formatted."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from common.service import REDIS_KEY, json_response
from geo_service.cache import cache_key, cached, normalized_text
from geo_service.config import GeoConfig
from geo_service.formatter import response_json
from geo_service.providers import ProviderRegistry
from geo_service.validation import geocode_request, reverse_request

REGISTRY_KEY: web.AppKey[ProviderRegistry] = web.AppKey("geo_providers", ProviderRegistry)
GEO_CONFIG_KEY: web.AppKey[GeoConfig] = web.AppKey("geo_config", GeoConfig)


async def geocode(request: web.Request) -> web.Response:
    parsed = geocode_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        return response_json(await provider.geocode(query), provider.name)

    token = provider.cache_token()
    key = (
        None
        if token is None
        else cache_key("geocode", provider.name, token, (normalized_text(query.text), query.country, query.limit))
    )
    return json_response(await cached(request.app[REDIS_KEY], key, request.app[GEO_CONFIG_KEY].cache_seconds, compute))


async def reverse(request: web.Request) -> web.Response:
    parsed = reverse_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        return response_json(await provider.reverse(query), provider.name)

    token = provider.cache_token()
    # Rounded to ~1 cm: nearer points than that get the same answer anyway.
    point = (round(query.lat, 7), round(query.lon, 7), query.limit)
    key = None if token is None else cache_key("reverse", provider.name, token, point)
    return json_response(await cached(request.app[REDIS_KEY], key, request.app[GEO_CONFIG_KEY].cache_seconds, compute))


async def providers(request: web.Request) -> web.Response:
    registry = request.app[REGISTRY_KEY]
    return json_response({"geocoder": registry.describe(), "default": registry.default})
