"""HTTP handlers: read the request, call the provider, answer. Errors are raised, never formatted."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from common.service import json_response
from geo_service.autocomplete import last_word_complete
from geo_service.cache import AnswerCache, normalized_text
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

    structured = query.structured
    text = query.text if structured is None else "\x1e".join(p or "" for p in structured.__dict__.values())
    parts = ("structured" if structured else "text", normalized_text(text), query.country, query.limit)
    return json_response(await request.app[ANSWERS_KEY].answer("geocode", provider, parts, compute))


async def reverse(request: web.Request) -> web.Response:
    parsed = reverse_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        answer = await provider.reverse(query)
        return response_json(answer.results, provider.name, answer.notes)

    # Rounded to ~1 cm: nearer points than that get the same answer anyway.
    parts = (round(query.lat, 7), round(query.lon, 7), query.limit)
    return json_response(await request.app[ANSWERS_KEY].answer("reverse", provider, parts, compute))


async def autocomplete(request: web.Request) -> web.Response:
    parsed = autocomplete_request(request.query, request.app[REGISTRY_KEY])
    provider, query = parsed.provider, parsed.query

    async def compute() -> dict[str, Any]:
        return response_json(await provider.autocomplete(query), provider.name)

    # A trailing space changes the answer (the last word is finished), so it is part of the key.
    # The focus is rounded to ~10 m: a focus factor over kilometres does not tell such points apart.
    focus = None if query.focus is None else (round(query.focus[0], 4), round(query.focus[1], 4))
    text = (normalized_text(query.text), last_word_complete(query.text))
    parts = (*text, query.country, query.limit, focus)
    return json_response(await request.app[ANSWERS_KEY].answer("autocomplete", provider, parts, compute))


async def providers(request: web.Request) -> web.Response:
    registry = request.app[REGISTRY_KEY]
    return json_response({"geocoder": registry.describe(), "default": registry.default})
