"""HTTP handlers: read the request, call the provider, answer. Errors are raised, never formatted."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from common.service import json_response
from geo_service.cache import AnswerCache, autocomplete_parts, geocode_parts, reverse_parts
from geo_service.formatter import response_json
from geo_service.providers import ProviderRegistry
from geo_service.validation import autocomplete_request, geocode_request, reverse_request

REGISTRY_KEY: web.AppKey[ProviderRegistry] = web.AppKey("geo_providers", ProviderRegistry)
ANSWERS_KEY: web.AppKey[AnswerCache] = web.AppKey("geo_answers", AnswerCache)


async def geocode(request: web.Request) -> web.Response:
    parsed = geocode_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        answer = await provider.geocode(query)
        return response_json(answer.results, provider.name, answer.notes)

    return json_response(await request.app[ANSWERS_KEY].answer("geocode", provider, geocode_parts(query), compute))


async def reverse(request: web.Request) -> web.Response:
    parsed = reverse_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        answer = await provider.reverse(query)
        return response_json(answer.results, provider.name, answer.notes)

    return json_response(await request.app[ANSWERS_KEY].answer("reverse", provider, reverse_parts(query), compute))


async def autocomplete(request: web.Request) -> web.Response:
    parsed = autocomplete_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        return response_json(await provider.autocomplete(query), provider.name)

    parts = autocomplete_parts(query)
    return json_response(await request.app[ANSWERS_KEY].answer("autocomplete", provider, parts, compute))


async def providers(request: web.Request) -> web.Response:
    registry = request.app[REGISTRY_KEY]
    return json_response({"geocoder": registry.describe(), "default": registry.default})
