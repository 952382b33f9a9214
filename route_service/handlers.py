"""HTTP handlers of the route service: parse (which validates and chooses the provider), price
(`costs`; the caller's account pays through `common.admission`, heavy work holding one of its
slots), call (`state` and `calls` decide where; heavy work stops when its client goes,
`waiting`), respond with what `formatter` writes and the admission's RateLimit-Cost headers.
/internal/* calls are made on nobody's behalf and are not charged."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from aiohttp import web

from common.admission import Cost, caller_of, measured
from common.errors import ParameterErrors
from common.internal_auth import INTERNAL_TIER_HEADER
from common.service import decode_json, dump_json, json_response, read_json, require_json_media_type
from common.waiting import unless_gone
from route_service.costs import is_heavy_matrix, isochrone_cost, match_cost, match_settled, matrix_cost, route_cost
from route_service.formatter import (
    isochrone_body,
    match_body,
    matrix_body,
    providers_body,
    public_matrix_body,
    waypoints_body,
)
from route_service.matching import Thinned, spacing_m, thinned
from route_service.model import MatchResult, TimeRuleMet
from route_service.parsing import (
    parse_isochrone,
    parse_match,
    parse_matrix,
    parse_public_matrix,
    parse_route,
    parse_waypoints,
)
from route_service.providers.base import MatchRequest
from route_service.providers.registry import ProviderRegistry
from route_service.state import STATE_KEY
from route_service.traces import DEFAULT_GPS_ACCURACY_M, GPX_MEDIA_TYPES, trace_from_gpx, trace_from_json


async def route(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    parsed = parse_route(request.query, registry, request.headers)
    async with state.admission.admit(caller_of(request.headers), route_cost(parsed.query, parsed.provider)) as admitted:
        body, cache = await state.route(parsed, dataset)
    return web.Response(body=body, content_type="application/json", headers={"X-Cache": cache, **admitted.headers})


async def providers(request: web.Request) -> web.Response:
    dataset, registry = request.app[STATE_KEY].ready()
    return json_response(providers_body(registry.providers.values(), registry.default_name, dataset))


async def public_matrix(request: web.Request) -> web.Response:
    """POST /v1/matrix: the caller's tier (forwarded by the gateway) bounds the cells."""
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    limit, tier = state.matrix_limits.for_tier(request.headers.get(INTERNAL_TIER_HEADER))
    parsed = parse_public_matrix(await read_json(request), registry, limit, tier)
    price = matrix_cost(parsed.query, parsed.provider)
    async with state.admission.admit(caller_of(request.headers), price) as admitted:
        result = await unless_gone(request, state.calls.matrix(parsed, heavy=price.heavy))
    body = public_matrix_body(result, parsed.query, parsed.provider, dataset.hash)
    return json_response(body, headers=admitted.headers)


async def matrix(request: web.Request) -> web.Response:
    """Internal (not routed by the gateway): durations and distances between point sets."""
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    parsed = parse_matrix(await read_json(request, check_media_type=False), registry)
    heavy = is_heavy_matrix(parsed.query, parsed.provider)
    result = await unless_gone(request, state.calls.matrix(parsed, heavy=heavy))
    when = parsed.query.restrictions.time
    return json_response(matrix_body(result, parsed.provider, dataset.hash, when.at if when else None))


async def route_waypoints(request: web.Request) -> web.Response:
    """Internal (not routed by the gateway): one route through waypoints in the given order,
    with geometry and per-leg distance and duration (the optimize service's tour)."""
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    parsed = parse_waypoints(await read_json(request, check_media_type=False), registry)
    result = await unless_gone(request, state.calls.route_waypoints(parsed))
    timed = parsed.query.restrictions.time is not None
    return json_response(waypoints_body(result, parsed.provider, dataset.hash, timed))


async def match(request: web.Request) -> web.Response:
    """POST /v1/match: a GPS trace (JSON, or GPX text) matched to the roads, thinned first."""
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    if request.content_type not in GPX_MEDIA_TYPES:
        require_json_media_type(request.content_type)
    raw, query = await request.read(), dict(request.query)
    # A 10 000-point trace costs ~30 ms to read, thin and price and as much to write: in a thread,
    # the loop gets its turn every few ms (the interpreter's switch interval) instead of other
    # requests waiting for it whole (probe p99 22x idle under the campaign's match attack,
    # bench/isolation.py, 2026-11-26).
    (parsed, thin, price), read_s = await asyncio.to_thread(measured, lambda: read_match(raw, request.content_type, query, registry))
    caller = caller_of(request.headers)
    async with state.admission.admit(caller, price) as admitted:
        result = await unless_gone(request, state.calls.match(parsed, thin))
        body, write_s = await asyncio.to_thread(measured, lambda: match_json(registry, parsed, result, dataset.hash))
        await state.admission.settle(caller, admitted, match_settled(read_s + result.cpu_s + write_s))
    return web.Response(body=body, content_type="application/json", headers=admitted.headers)


def match_json(registry: ProviderRegistry, parsed: MatchRequest, result: MatchResult, dataset: str) -> bytes:
    """The answer with why points were unmatched and the rules by time the trace met."""
    reasons, rules = unmatched(registry, parsed, result), trace_rules(registry, parsed, result)
    return dump_json(match_body(result, parsed.query, parsed.provider, dataset, reasons, rules))


def unmatched(registry: ProviderRegistry, parsed: MatchRequest, result: MatchResult) -> dict[int, str]:
    """Why each unmatched point was left out (route_service.diagnostics)."""
    query = parsed.query
    if registry.diagnostics is None or all(result.matched):
        return {}
    accuracy = query.gps_accuracy_m or DEFAULT_GPS_ACCURACY_M
    return registry.diagnostics.unmatched(query.points, result.matched, query.vehicle, query.route_type, accuracy)


def trace_rules(registry: ProviderRegistry, parsed: MatchRequest, result: MatchResult) -> list[TimeRuleMet] | None:
    """With the trace's own times (issue 33): the rules by time it met where it was matched,
    from the registry's timed roads (Valhalla's); None without times or without them."""
    query = parsed.query
    if registry.timed_roads is None or not query.timestamps:
        return None
    places = [(where.location, datetime.fromtimestamp(seconds, UTC))
              for where, seconds in zip(result.snapped, query.timestamps, strict=False) if where is not None]  # fmt: skip
    return registry.timed_roads.trace_rules(query.vehicle, places)


def read_match(
    raw: bytes, content_type: str, query: dict[str, str], registry: ProviderRegistry
) -> tuple[MatchRequest, Thinned, Cost]:
    """The trace parsed and checked, thinned, and what matching it will cost."""
    errors = ParameterErrors()
    if content_type in GPX_MEDIA_TYPES:
        trace = trace_from_gpx(raw, query, errors)
    else:
        trace = trace_from_json(decode_json(raw), errors)
    parsed = parse_match(trace, registry, errors)
    thin = thinned(trace.points, spacing_m(trace.gps_accuracy_m))
    return parsed, thin, match_cost(thin.steps_m, trace.gps_accuracy_m, len(trace.points))


async def isochrone(request: web.Request) -> web.Response:
    """GET /v1/isochrone: the areas reachable within the given times or distances."""
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    parsed = parse_isochrone(request.query, registry)
    async with state.admission.admit(caller_of(request.headers), isochrone_cost(parsed.query)) as admitted:
        result = await unless_gone(request, state.calls.isochrone(parsed))
    body = isochrone_body(result, parsed.query, parsed.provider, dataset.hash)
    return json_response(body, headers=admitted.headers)
