"""HTTP handlers: parse the request, call the state, answer. Errors are raised, never formatted."""

from __future__ import annotations

from aiohttp import web

from common.admission import caller_of, cpu_of_units
from common.errors import BatchTooLarge
from common.service import json_response, read_limited_body
from common.waiting import unless_gone
from geo_service.batch import MAX_BATCH_BYTES, Form, counted_lines, header_checked
from geo_service.costs import batch_cost, batch_settled
from geo_service.formatter import batch_json
from geo_service.parsing import autocomplete_request, batch_request, geocode_request, reverse_request
from geo_service.state import AUTOCOMPLETE, GEOCODE, REVERSE, STATE_KEY


async def geocode(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    return json_response(await state.answer(GEOCODE, geocode_request(request.query, state.registry, request.headers)))


async def reverse(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    return json_response(await state.answer(REVERSE, reverse_request(request.query, state.registry, request.headers)))


async def autocomplete(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    return json_response(await state.answer(AUTOCOMPLETE, autocomplete_request(request.query, state.registry, request.headers)))


async def batch(request: web.Request) -> web.Response:
    """POST /v1/geocoder/batch. Checks in the order a client fixes them: the Content-Type (415),
    the parameters (400), the size and a CSV's header as it arrives (413, 400), the price of the
    lines the body can hold (413/429, before any parse); then the file as a whole (400), and
    every line is answered or gets its own error. Then the price is settled to the work measured
    (`costs.batch_settled`): cached lines given back, dear ones charged."""
    state, caller = request.app[STATE_KEY], caller_of(request.headers)
    parsed_request = batch_request(request.query, request.content_type, request.charset, state.registry,
                                   in_job=caller is not None and caller.job)  # fmt: skip
    header_check = header_checked if parsed_request.form is Form.CSV else None
    body = await read_limited_body(request, MAX_BATCH_BYTES, BatchTooLarge, "the batch", header_check)
    lines = min(counted_lines(body, parsed_request.form), parsed_request.max_lines)
    async with state.admission.admit(caller, batch_cost(lines)) as admitted:
        parsed = await unless_gone(request, state.parse_batch(caller, body, parsed_request))
        most_s = cpu_of_units(state.admission.most_units(caller))
        answers, lookups_s = await unless_gone(request, state.answer_batch(parsed_request, parsed, most_s))
        await state.admission.settle(caller, admitted, batch_settled(parsed.lines_read, lookups_s))
    return json_response(batch_json(answers, parsed_request.defaults["provider"]), headers=admitted.headers)


async def providers(request: web.Request) -> web.Response:
    registry = request.app[STATE_KEY].registry
    return json_response({"geocoder": registry.describe(), "default": registry.default})
