"""The request (JSON array of stops and query parameters) → OptimizeRequest, reporting every
violation at once (no aiohttp here).

Checks in order: too many stops (413, alone: the API's 1000, or fewer for the caller's tier's
matrix cells), then every stop, flag and parameter together (400; `timeLimit` within the
tier's cap), then the region's diameter (413) — all before any routing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from common.areas import check_points_outside, parse_avoid_area
from common.errors import DiameterTooLarge, MalformedBody, ParameterErrors, TooManyStops
from common.params import PROFILE, flag, is_number, parse_point_object, read_query, short
from common.providers import requested_provider
from optimize_service.costs import Allowance, check_cells
from optimize_service.formats import parse_start_time, parse_time_limit
from optimize_service.geo import farthest_pair
from optimize_service.stops.model import (
    MAX_DIAMETER_M,
    MAX_SERVICE_TIME_S,
    MAX_STOPS,
    MAX_TIME_LIMIT_S,
    MIN_TIME_LIMIT_S,
    OptimizeRequest,
    Options,
    Stop,
    TourEnds,
)

# With strict=true a stop that cannot be served fails the request (its 400 names each one).
STRICT = flag("strict", False)


def parse_request(
    body: Any,
    query: Mapping[str, str],
    now: datetime,
    known_providers: frozenset[str] | None = None,
    allowance: Allowance | None = None,
) -> OptimizeRequest:
    """Raises TooManyStops, one ApiError listing every violation, or DiameterTooLarge.
    `allowance`: the caller's tier's bounds (optimize_service.costs); None: the API's alone."""
    if isinstance(body, list) and len(body) > MAX_STOPS:
        raise TooManyStops(f"{len(body)} stops sent, at most {MAX_STOPS} are allowed per request", parameter="stops")
    if isinstance(body, list):  # before the stops are read: the count is known
        check_cells(len(body), 1, allowance, f"{len(body)} stops", "stops")
    errors = ParameterErrors()
    stops = parse_stops(body, errors)
    ends = tour_ends(stops, errors)
    options = parse_options(query, now, errors, known_providers, allowance)
    if options.avoid is not None:
        check_points_outside(options.avoid, [(f"stops[{i}]", s.coordinate) for i, s in enumerate(stops)], errors)
    errors.raise_if_any()
    check_diameter(stops)
    return OptimizeRequest(stops, ends, options)


# ---------------------------------------------------------------- stops


def parse_stops(body: Any, errors: ParameterErrors) -> list[Stop]:
    if not isinstance(body, list):
        errors.add(None, "the body must be a JSON array of stops {name, coordinate, start?, destination?}", MalformedBody)
        return []
    if not body:
        errors.add("stops", "at least one stop is required")
    stops: list[Stop] = []
    for index, item in enumerate(body):
        stop = parse_stop(item, f"stops[{index}]", errors)
        if stop is not None:
            stops.append(stop)
    # Indexes into `stops` must match the request's: any broken stop fails the request anyway.
    return stops if len(stops) == len(body) else []


def parse_stop(item: Any, where: str, errors: ParameterErrors) -> Stop | None:
    if not isinstance(item, dict):
        errors.add(where, "must be an object {name, coordinate: {lat, lon}, start?, destination?}")
        return None
    before = len(errors.violations)
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.add(f"{where}.name", "is required: a non-blank string")
    coordinate = parse_point_object(item.get("coordinate"), f"{where}.coordinate", errors)
    start = parse_flag(item, "start", where, errors)
    destination = parse_flag(item, "destination", where, errors)
    service = parse_seconds(item.get("serviceTime"), f"{where}.serviceTime", errors, default=0.0)
    if len(errors.violations) > before or coordinate is None:
        return None
    return Stop(str(name), coordinate, start, destination, service)


def parse_flag(item: dict[str, Any], key: str, where: str, errors: ParameterErrors) -> bool:
    value = item.get(key, False)
    if not isinstance(value, bool):
        errors.add(f"{where}.{key}", f"must be true or false, got {short(value)}")
        return False
    return value


def parse_seconds(value: Any, where: str, errors: ParameterErrors, *, default: float) -> float:
    if value is None:
        return default
    if not is_number(value) or not 0 <= value <= MAX_SERVICE_TIME_S:
        errors.add(where, f"must be a number of seconds between 0 and {MAX_SERVICE_TIME_S:g}, got {short(value)}")
        return default
    return float(value)


def tour_ends(stops: list[Stop], errors: ParameterErrors) -> TourEnds:
    """The API contract: at most one start and one destination; without a start the first stop starts;
    without a destination the tour is open; one stop both → round trip."""
    starts = [i for i, stop in enumerate(stops) if stop.start]
    destinations = [i for i, stop in enumerate(stops) if stop.destination]
    for role, marked in (("start", starts), ("destination", destinations)):
        for extra in marked[1:]:
            errors.add(f"stops[{extra}].{role}", f"only one stop may be the {role} (stops[{marked[0]}] already is)")
    return TourEnds(starts[0] if starts else 0, destinations[0] if destinations else None)


def check_diameter(stops: list[Stop]) -> None:
    if len(stops) < 2:
        return
    i, j, distance = farthest_pair([stop.coordinate for stop in stops])
    if distance > MAX_DIAMETER_M:
        raise DiameterTooLarge(
            f"stops[{i}] ({stops[i].name!r}) and stops[{j}] ({stops[j].name!r}) are {distance / 1000:.1f} km apart, but "
            f"all stops must lie within {MAX_DIAMETER_M / 1000:.0f} km of each other (great-circle distance)",
            parameter="stops",
        )


# ---------------------------------------------------------------- query parameters


def parse_options(
    query: Mapping[str, str],
    now: datetime,
    errors: ParameterErrors,
    known_providers: frozenset[str] | None,
    allowance: Allowance | None = None,
) -> Options:
    start_time = parse_start_time(query.get("startTime"), now, errors)
    vehicle, route_type = read_query(query, PROFILE, errors)
    return Options(
        start_time=start_time,
        vehicle=vehicle,
        route_type=route_type,
        provider=parse_provider(query.get("provider"), errors, known_providers),
        time_limit_s=parse_time_limit(query.get("timeLimit"), True, MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S, errors, allowance),
        # A query parameter, as on /v1/route: the contract fixes the body as the array of stops.
        avoid=parse_avoid_area(query["avoid"], "avoid", errors) if "avoid" in query else None,
        strict=STRICT.read(query, errors),
        timed="startTime" in query,
    )


def parse_provider(raw: str | None, errors: ParameterErrors, known: frozenset[str] | None) -> str | None:
    # `known` is None when the route service could not list its providers: it checks itself then.
    return requested_provider(raw, known, errors)
