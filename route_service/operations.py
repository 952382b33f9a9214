"""The route service's operations, one record each: what a request is read from, its parser, its
price, where it runs, its formatter and its cache policy. One handler (`handlers.handler`)
runs every record, so a parameter added to an operation touches its typed query
(`model`), its parser entry (`parsing`) and its formatter, nothing here or in the handler.

Detour files (`detour_handlers`) stream an upload of any size and keep a handler of their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from common.admission import Cost
from common.errors import ParameterErrors
from common.service import decode_json
from route_service import street_names
from route_service.cache import cache_key
from route_service.calls import ProviderCalls
from route_service.config import DEFAULT_MATRIX_CELLS, MatrixLimits, parse_matrix_cells
from route_service.costs import is_heavy_matrix, isochrone_cost, match_cost, match_settled, matrix_cost, route_cost
from route_service.dataset import Dataset
from route_service.formatter import (
    isochrone_body,
    match_body,
    matrix_body,
    public_matrix_body,
    route_body,
    waypoints_body,
)
from route_service.matching import Thinned, spacing_m, thinned
from route_service.model import IsochroneResult, MatchResult, MatrixResult, RouteResult, TimeRuleMet, WaypointsResult
from route_service.parsing import (
    parse_isochrone,
    parse_match,
    parse_matrix,
    parse_public_matrix,
    parse_route,
    parse_waypoints,
)
from route_service.providers.base import IsochroneRequest, MatchRequest, MatrixRequest, RouteRequest, WaypointsRequest
from route_service.providers.registry import ProviderRegistry
from route_service.traces import DEFAULT_GPS_ACCURACY_M, GPX_MEDIA_TYPES, trace_from_gpx, trace_from_json

# Where a request's parameters are: the query string; a public JSON body (415 unless sent as
# JSON); an internal one (our services only: no media-type check); the body's bytes as sent.
Source = Literal["query", "json", "internal", "bytes"]


@dataclass(frozen=True)
class Inputs:
    """What a request brings, read as its operation's `source` says."""

    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any = None  # the JSON body ("json", "internal")
    raw: bytes = b""  # the body's bytes ("bytes")
    content_type: str = ""
    tier: str | None = None  # the caller's tier, forwarded by the gateway
    matrix_limits: MatrixLimits = field(default_factory=lambda: parse_matrix_cells(DEFAULT_MATRIX_CELLS))


@dataclass(frozen=True)
class Operation[P, R]:
    """One operation of the route service.

    `parse` reports every violation at once; `price` is charged to the caller's account before
    any work (None: an internal operation, on nobody's behalf); `call` runs it where it costs
    the other requests least (`calls`: the loop, the thread pool or the child process);
    `respond` writes the answer's JSON; `cache_key` (None: never cached) names a reusable
    answer; `in_thread`: its body is read and priced, and its answer written, in a thread (a
    10 000-point trace takes ~30 ms each way); `settle`: what it costs in the end, from the CPU
    seconds spent; `stops_when_gone`: the call is abandoned when its client goes (`waiting`; a
    route's ~2 ms are not worth a watch, and its answer is cached for the retry)."""

    name: str
    source: Source
    parse: Callable[[Inputs, ProviderRegistry], P]
    price: Callable[[P], Cost] | None
    call: Callable[[ProviderCalls, P, Dataset], Awaitable[R]]
    respond: Callable[[R, P, Dataset, ProviderRegistry], dict[str, Any]]
    cache_key: Callable[[P, Dataset], str] | None = None
    in_thread: bool = False
    settle: Callable[[R, float], int] | None = None
    stops_when_gone: bool = True


# ---------------------------------------------------------------- routes


async def translated_route(calls: ProviderCalls, request: RouteRequest, dataset: Dataset) -> RouteResult:
    """The route, its street names in the language asked for (the dataset's names)."""
    result = await calls.route(request)
    return street_names.of_dataset(dataset.path).translated(result, request.query.wording.language)


ROUTE = Operation[RouteRequest, RouteResult](
    "route",
    "query",
    lambda inputs, registry: parse_route(inputs.query, registry, inputs.headers),
    lambda parsed: route_cost(parsed.query, parsed.provider),
    translated_route,
    lambda result, parsed, dataset, _: route_body(result, parsed.query, parsed.provider, dataset.hash),
    cache_key=lambda parsed, dataset: cache_key(parsed.query, parsed.provider, dataset.hash),
    stops_when_gone=False,
)
WAYPOINTS = Operation[WaypointsRequest, WaypointsResult](
    "route through waypoints",
    "internal",
    lambda inputs, registry: parse_waypoints(inputs.body, registry),
    None,
    lambda calls, parsed, _: calls.route_waypoints(parsed),
    lambda result, parsed, dataset, _: waypoints_body(
        result, parsed.provider, dataset.hash, parsed.query.restrictions.time is not None
    ),
)

# ---------------------------------------------------------------- matrices


def public_matrix(inputs: Inputs, registry: ProviderRegistry) -> MatrixRequest:
    """The caller's tier bounds the cells."""
    limit, tier = inputs.matrix_limits.for_tier(inputs.tier)
    return parse_public_matrix(inputs.body, registry, limit, tier)


async def matrix_call(calls: ProviderCalls, parsed: MatrixRequest, _: Dataset) -> MatrixResult:
    return await calls.matrix(parsed, heavy=is_heavy_matrix(parsed.query, parsed.provider))


def matrix_json(result: MatrixResult, parsed: MatrixRequest, dataset: Dataset, _: ProviderRegistry) -> dict[str, Any]:
    when = parsed.query.restrictions.time
    return matrix_body(result, parsed.provider, dataset.hash, when.at if when else None)


PUBLIC_MATRIX = Operation[MatrixRequest, MatrixResult](
    "matrix",
    "json",
    public_matrix,
    lambda parsed: matrix_cost(parsed.query, parsed.provider),
    matrix_call,
    lambda result, parsed, dataset, _: public_matrix_body(result, parsed.query, parsed.provider, dataset.hash),
)
MATRIX = Operation[MatrixRequest, MatrixResult](
    "internal matrix", "internal", lambda inputs, registry: parse_matrix(inputs.body, registry), None, matrix_call, matrix_json
)

# ---------------------------------------------------------------- isochrones

ISOCHRONE = Operation[IsochroneRequest, IsochroneResult](
    "isochrone",
    "query",
    lambda inputs, registry: parse_isochrone(inputs.query, registry),
    lambda parsed: isochrone_cost(parsed.query),
    lambda calls, parsed, _: calls.isochrone(parsed),
    lambda result, parsed, dataset, _: isochrone_body(result, parsed.query, parsed.provider, dataset.hash),
)

# ---------------------------------------------------------------- traces


@dataclass(frozen=True)
class TraceWork:
    """A trace to match: the request, and the points its thinning keeps."""

    request: MatchRequest
    thin: Thinned


def read_trace(inputs: Inputs, registry: ProviderRegistry) -> TraceWork:
    """The trace (JSON, or GPX text) parsed and checked, then thinned."""
    errors = ParameterErrors()
    if inputs.content_type in GPX_MEDIA_TYPES:
        trace = trace_from_gpx(inputs.raw, dict(inputs.query), errors)
    else:
        trace = trace_from_json(decode_json(inputs.raw), errors)
    request = parse_match(trace, registry, errors)
    return TraceWork(request, thinned(trace.points, spacing_m(trace.gps_accuracy_m)))


def trace_price(work: TraceWork) -> Cost:
    query = work.request.query
    return match_cost(work.thin.steps_m, query.gps_accuracy_m or DEFAULT_GPS_ACCURACY_M, len(query.points))


def match_json(result: MatchResult, work: TraceWork, dataset: Dataset, registry: ProviderRegistry) -> dict[str, Any]:
    """The answer with why points were unmatched and the rules by time the trace met."""
    reasons, rules = unmatched(registry, work.request, result), trace_rules(registry, work.request, result)
    return match_body(result, work.request.query, work.request.provider, dataset.hash, reasons, rules)


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


MATCH = Operation[TraceWork, MatchResult](
    "match",
    "bytes",
    read_trace,
    trace_price,
    lambda calls, work, _: calls.match(work.request, work.thin),
    match_json,
    in_thread=True,
    # what it costs in the end: the CPU of reading, matching (where it ran) and writing it
    settle=lambda result, read_write_s: match_settled(read_write_s + result.cpu_s),
)
