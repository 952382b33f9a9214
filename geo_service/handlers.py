"""HTTP handlers: parse the request, call the state, answer. Errors are raised, never formatted."""

from __future__ import annotations

from aiohttp import web

from common.service import json_response
from geo_service.parsing import autocomplete_request, geocode_request, reverse_request
from geo_service.state import AUTOCOMPLETE, GEOCODE, REVERSE, STATE_KEY


async def geocode(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    return json_response(await state.answer(GEOCODE, geocode_request(request.query, state.registry)))


async def reverse(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    return json_response(await state.answer(REVERSE, reverse_request(request.query, state.registry)))


async def autocomplete(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    return json_response(await state.answer(AUTOCOMPLETE, autocomplete_request(request.query, state.registry)))


async def providers(request: web.Request) -> web.Response:
    registry = request.app[STATE_KEY].registry
    return json_response({"geocoder": registry.describe(), "default": registry.default})
