"""HTTP parameters → typed requests, reporting every violation at once (no aiohttp here).

This is where a request is validated, once: its parameters, then (the registry's last word)
the provider that answers it, whose plugin the typed request carries (`providers.base`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from common.areas import AvoidArea, check_points_outside, parse_avoid_area
from common.errors import DatasetNotReady, InvalidParameter, MatrixTooLarge, ParameterErrors
from common.geo import LatLon
from common.languages import NO_HEADERS, parse_language
from common.params import (
    PROFILE,
    Point,
    Whole,
    flag,
    json_kind,
    number_or_nan,
    one_of,
    parse_instant,
    parse_point_list,
    parse_truck_dimensions,
    read_query,
    short,
)
from common.vehicles import TRUCK_DIMENSIONS
from common.vocabulary import DEFAULT_UNITS, INSTRUCTION_LANGUAGES, UNITS
from route_service.model import (
    ISOCHRONE_METRICS,
    MATRIX_ANNOTATIONS,
    MAX_ALTERNATIVES,
    MAX_EMERGENCY_RADIUS_M,
    NO_RESTRICTIONS,
    IsochroneQuery,
    MatchQuery,
    MatrixQuery,
    Restrictions,
    RouteQuery,
    RouteTime,
    TruckDimensions,
    WaypointsQuery,
    Wording,
)
from route_service.providers.base import IsochroneRequest, MatchRequest, MatrixRequest, RouteRequest, WaypointsRequest
from route_service.providers.registry import ProviderRegistry
from route_service.traces import Trace

MAX_MATRIX_SIDE = 1000
# GET /v1/route's own parameters (the profile, wording, restrictions and provider are read as
# every routing operation reads them).
ROUTE_QUERY = (
    Point("from"),
    Point("to"),
    Whole("alternatives", 0, MAX_ALTERNATIVES, 0),
    Whole("emergencyRoutingRadius", 0, MAX_EMERGENCY_RADIUS_M, 0),
    flag("steps", True),
    flag("geometry", True),
)
UNITS_FIELD = one_of("units", UNITS, DEFAULT_UNITS)


def parse_route(params: Mapping[str, str], registry: ProviderRegistry,
                headers: Mapping[str, str] = NO_HEADERS) -> RouteRequest:  # fmt: skip
    """GET /v1/route's parameters (and Accept-Language); raises one InvalidParameter listing
    every violation."""
    errors = ParameterErrors()
    origin, destination, alternatives, radius, steps, geometry = read_query(params, ROUTE_QUERY, errors)
    vehicle, route_type = parse_vehicle_and_type(params, errors)
    wording = parse_wording(params, headers, errors)
    name = params.get("provider")  # the registry reads it (common.providers: the one rule)
    restrictions = Restrictions(
        avoid=parse_avoid(params, [("from", origin), ("to", destination)], errors),
        truck=parse_truck(params, vehicle, errors),
        time=parse_route_time(params, errors),
    )
    chosen_for = registry.moot_time(name, restrictions, [origin, destination])
    provider = registry.choose(
        name,
        vehicle,
        route_type,
        errors,
        emergency=radius > 0,
        restrictions=chosen_for,
        alternatives=alternatives or 0,
    )
    assert origin is not None and destination is not None  # guaranteed: errors would have raised
    # the time stays in the query (the answer says it, the cache tells it apart) even when no
    # rule by time is near and the provider chosen ignores it
    query = RouteQuery(origin, destination, vehicle, route_type, alternatives, radius, steps, restrictions, wording, geometry)
    return RouteRequest(query, provider.name, provider.route)


def parse_wording(params: Mapping[str, str], headers: Mapping[str, str], errors: ParameterErrors) -> Wording:
    """`language` (BCP 47, else Accept-Language, else English; common.languages) and `units`
    of the steps' sentences (issue 35)."""
    language = parse_language(params, headers, INSTRUCTION_LANGUAGES, errors)
    units = UNITS_FIELD.read(params, errors)
    return Wording(language, units)


def parse_route_time(params: Mapping[str, str], errors: ParameterErrors) -> RouteTime | None:
    """`departureTime` or `arrivalTime` (at most one; issue 33): rules by time apply when each
    road is reached. Without either the route holds at any time, as before."""
    given = [name for name in ("departureTime", "arrivalTime") if name in params]
    if len(given) > 1:
        errors.add("arrivalTime", "give departureTime or arrivalTime, not both")
        return None
    if not given:
        return None
    at = parse_instant(params[given[0]], given[0], errors)
    return None if at is None else RouteTime(at, arrival=given[0] == "arrivalTime")


def parse_truck(
    source: Mapping[str, Any], vehicle: str, errors: ParameterErrors, prefix: str = ""
) -> TruckDimensions | None:
    """`height`, `width`, `length` (m), `weight`, `axleLoad` (t): query texts or JSON numbers
    (common.params.parse_truck_dimensions). None when none is given."""
    values = parse_truck_dimensions(source, vehicle, errors, prefix)
    if values is None:
        return None
    return TruckDimensions(**{TRUCK_DIMENSIONS[name][0]: value for name, value in values.items()})


def parse_truck_object(body: Mapping[str, Any], vehicle: str, errors: ParameterErrors) -> TruckDimensions | None:
    """A body's `truck` object (a matrix's, a tour's): the dimensions as parse_truck reads them."""
    truck = body.get("truck")
    if truck is not None and not isinstance(truck, dict):
        errors.add("truck", "must be an object {height?, width?, length?, weight?, axleLoad?}")
        truck = None
    for key in sorted(set(truck or {}) - set(TRUCK_DIMENSIONS))[:5]:
        errors.add(f"truck.{str(key)[:40]}", f"is not a truck dimension (those are {', '.join(TRUCK_DIMENSIONS)})")
    return parse_truck(truck or {}, vehicle, errors, prefix="truck.")


def parse_avoid(
    source: Mapping[str, Any], points: Sequence[tuple[str, LatLon | None]], errors: ParameterErrors
) -> AvoidArea | None:
    """The optional `avoid` area (GeoJSON text in a query, an object in a body); a point of the
    request inside it is named: no route from or to it avoids the area."""
    raw = source.get("avoid")
    if raw is None:
        return None
    area = parse_avoid_area(raw, "avoid", errors)
    if area is not None:
        check_points_outside(area, [(n, p) for n, p in points if p is not None], errors)
    return area


# ---------------------------------------------------------------- matrix


def parse_points(body: Mapping[str, Any], name: str, errors: ParameterErrors, fewest: int, most: int) -> list[LatLon]:
    return parse_point_list(body.get(name), name, errors, fewest, most)


def internal_body_options(body: Any, fields: str, errors: ParameterErrors) -> dict[str, str]:
    """An internal endpoint's body must be an object; its vehicle/type/provider as text."""
    if not isinstance(body, dict):
        errors.add(None, f"the body must be a JSON object {{{fields}, vehicle?, type?, provider?}}")
        errors.raise_if_any()
    return {k: str(v) for k, v in body.items() if k in ("vehicle", "type", "provider") and v is not None}


def parse_matrix(body: Any, registry: ProviderRegistry) -> MatrixRequest:
    """POST /internal/matrix's JSON body."""
    errors = ParameterErrors()
    params = internal_body_options(body, "sources, destinations", errors)
    sources = parse_points(body, "sources", errors, 1, MAX_MATRIX_SIDE)
    destinations = parse_points(body, "destinations", errors, 1, MAX_MATRIX_SIDE)
    return matrix_request(body, params, sources, destinations, registry, errors)


# The public body's fields; anything else is reported (a typo such as `destination` would
# otherwise silently give the all-to-all matrix).
PUBLIC_MATRIX_FIELDS = frozenset(
    {"sources", "destinations", "vehicle", "type", "provider", "annotations", "avoid", "truck", "departureTime"}
)


def parse_public_matrix(body: Any, registry: ProviderRegistry, cell_limit: int, tier: str) -> MatrixRequest:
    """POST /v1/matrix's JSON body. Without `destinations` (or with null) the matrix is all
    to all, sources to sources. More cells than the caller's tier allows is a 413 of its own,
    decided from the list lengths before a single point is read."""
    errors = ParameterErrors()
    params = internal_body_options(body, "sources, destinations?, annotations?", errors)
    for field in sorted(set(body) - PUBLIC_MATRIX_FIELDS - {"arrivalTime"})[:10]:
        errors.add(
            str(field)[:40], f"is not a field of this body (those are {', '.join(sorted(PUBLIC_MATRIX_FIELDS))})"
        )
    all_to_all = body.get("destinations") is None
    check_cells(body.get("sources"), body.get("sources" if all_to_all else "destinations"), cell_limit, tier)
    sources = parse_points(body, "sources", errors, 1, MAX_MATRIX_SIDE)
    destinations = sources if all_to_all else parse_points(body, "destinations", errors, 1, MAX_MATRIX_SIDE)
    return matrix_request(body, params, sources, destinations, registry, errors)


def matrix_request(
    body: dict[str, Any], params: dict[str, str], sources: list[LatLon], destinations: list[LatLon],
    registry: ProviderRegistry, errors: ParameterErrors,
) -> MatrixRequest:  # fmt: skip
    """The rest of either matrix body (profile, annotations, provider), then the typed request."""
    vehicle, route_type, name = parse_profile(params, errors)
    annotations = parse_annotations(body.get("annotations", list(MATRIX_ANNOTATIONS)), errors)
    named = [(f"sources[{i}]", p) for i, p in enumerate(sources)]
    if destinations is not sources:
        named += [(f"destinations[{j}]", p) for j, p in enumerate(destinations)]
    departure = parse_matrix_departure(body, errors)
    restrictions = Restrictions(
        avoid=parse_avoid(body, named, errors),
        truck=parse_truck_object(body, vehicle, errors),
        time=None if departure is None else RouteTime(departure),
    )
    chosen_for = registry.moot_time(name, restrictions, [*sources, *destinations])
    provider = registry.choose(
        name, vehicle, route_type, errors, restrictions=chosen_for, serving="matrix"
    )
    if provider.matrix is None:
        raise InvalidParameter(f"the {provider.name} provider computes no matrices", parameter="provider")
    when_open = departure is not None and body.get("whenOpen") is True
    query = MatrixQuery(sources, destinations, vehicle, route_type, annotations, restrictions, when_open)
    return MatrixRequest(query, provider.name, provider.matrix)


def parse_matrix_departure(body: dict[str, Any], errors: ParameterErrors) -> datetime | None:
    """A matrix's `departureTime` (issue 33): every source leaves then. `arrivalTime` is
    refused: a matrix's cells have no common arrival."""
    if "arrivalTime" in body:
        errors.add("arrivalTime", "a matrix leaves every source at one time: give departureTime")
    raw = body.get("departureTime")
    if raw is None:
        return None
    if not isinstance(raw, str):
        errors.add("departureTime", f"must be an ISO 8601 date-time string with a UTC offset, got {short(raw)}")
        return None
    return parse_instant(raw, "departureTime", errors)


def check_cells(sources: Any, destinations: Any, cell_limit: int, tier: str) -> None:
    """413 when both are lists whose product exceeds the tier's limit (their own shape is
    `parse_points`'s business)."""
    if not isinstance(sources, list) or not isinstance(destinations, list):
        return
    cells = len(sources) * len(destinations)
    if cells > cell_limit:
        raise MatrixTooLarge(
            f"{len(sources)} sources x {len(destinations)} destinations = {cells} cells, "
            f"the {tier} tier allows at most {cell_limit} cells per request"
        )


def parse_annotations(raw: Any, errors: ParameterErrors) -> tuple[str, ...]:
    """Which tables to answer: `["duration"]` costs the route service half the memory and the
    caller half the JSON of the default `["duration", "distance"]`."""
    if (
        not isinstance(raw, list)
        or not raw
        or any(item not in MATRIX_ANNOTATIONS for item in raw)
        or len(set(raw)) != len(raw)
    ):
        errors.add("annotations", f"must be a list of distinct values among {', '.join(MATRIX_ANNOTATIONS)}")
        return MATRIX_ANNOTATIONS
    return tuple(raw)


def parse_vehicle_and_type(params: Mapping[str, str], errors: ParameterErrors) -> tuple[str, str]:
    """`vehicle` and `type`, for every operation that routes (the one place they are read)."""
    vehicle, route_type = read_query(params, PROFILE, errors)
    return vehicle, route_type


def parse_profile(params: Mapping[str, str], errors: ParameterErrors) -> tuple[str, str, str | None]:
    """The vehicle, type and provider as given (None: the registry chooses; `registry.choose`
    reads the name by common.providers' rule) of an internal body or a detour upload."""
    vehicle, route_type = parse_vehicle_and_type(params, errors)
    return vehicle, route_type, params.get("provider")


# ---------------------------------------------------------------- one route through many waypoints


MAX_ROUTE_WAYPOINTS = 2000


def parse_waypoints(body: Any, registry: ProviderRegistry) -> WaypointsRequest:
    """POST /internal/route's JSON body."""
    errors = ParameterErrors()
    params = internal_body_options(body, "waypoints", errors)
    waypoints = parse_points(body, "waypoints", errors, 2, MAX_ROUTE_WAYPOINTS)
    vehicle, route_type, name = parse_profile(params, errors)
    named = [(f"waypoints[{i}]", p) for i, p in enumerate(waypoints)]
    departures = parse_leg_departures(body.get("legDepartures"), len(waypoints) - 1, errors)
    start = parse_matrix_departure(body, errors)
    time = RouteTime(departures[0]) if departures else RouteTime(start) if start else None
    restrictions = Restrictions(avoid=parse_avoid(body, named, errors), truck=parse_truck_object(body, vehicle, errors),
                                time=time)  # fmt: skip
    service = parse_service_times(body.get("serviceTimes"), len(waypoints), errors)
    chosen_for = registry.moot_time(name, restrictions, waypoints)
    provider = registry.choose(name, vehicle, route_type, errors, restrictions=chosen_for, serving="waypoints")
    query = WaypointsQuery(waypoints, vehicle, route_type, restrictions, departures, service)
    return WaypointsRequest(query, provider.name, provider.waypoints)


def parse_service_times(raw: Any, waypoints: int, errors: ParameterErrors) -> tuple[float, ...]:
    """The optimizer's `serviceTimes` (seconds at each waypoint) for a tour leaving at `departureTime`."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) != waypoints or not all(json_kind(v) == "a number" and v >= 0 for v in raw):
        errors.add("serviceTimes", f"must be a list of {waypoints} numbers of seconds ≥ 0, one per waypoint")
        return ()
    return tuple(float(v) for v in raw)


def parse_leg_departures(raw: Any, legs: int, errors: ParameterErrors, name: str = "legDepartures") -> tuple[datetime, ...]:
    """The optimizer's `legDepartures` (issue 33): when each leg leaves, one per leg."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) != legs or not all(isinstance(item, str) for item in raw):
        errors.add(name, f"must be a list of {legs} ISO 8601 date-times, one per leg")
        return ()
    found = [parse_instant(item, f"{name}[{i}]", errors) for i, item in enumerate(raw)]
    return tuple(item for item in found if item is not None) if all(found) else ()


# ---------------------------------------------------------------- a GPS trace to match


def parse_match(trace: Trace, registry: ProviderRegistry, errors: ParameterErrors) -> MatchRequest:
    """POST /v1/match, its trace read (route_service.traces): the profile and the provider."""
    vehicle, route_type, name = parse_profile(trace.options, errors)
    provider = registry.choose(name, vehicle, route_type, errors, serving="match")
    if provider.match is None:
        raise InvalidParameter(f"the {provider.name} provider matches no traces", parameter="provider")
    query = MatchQuery(trace.points, trace.timestamps, vehicle, route_type, True, trace.gps_accuracy_m)
    return MatchRequest(query, provider.name, provider.match)


# ---------------------------------------------------------------- isochrones

MAX_ISOCHRONE_LIMITS = 4
MAX_ISOCHRONE_SECONDS = 3600
MAX_ISOCHRONE_METRES = 100_000


def parse_isochrone(params: Mapping[str, str], registry: ProviderRegistry) -> IsochroneRequest:
    """GET /v1/isochrone: `point`, and `time` (s) or `distance` (m): 1 to 4 ascending values."""
    errors = ParameterErrors()
    point = Point("point").read(params, errors)
    vehicle, route_type = parse_vehicle_and_type(params, errors)
    metric, limits = parse_limits(params, errors)
    departure = parse_departure(params, errors)
    name = params.get("provider")  # the registry reads it (common.providers: the one rule)
    restrictions = Restrictions(time=RouteTime(departure)) if departure is not None else NO_RESTRICTIONS
    provider = registry.choose(
        name, vehicle, route_type, errors, needs="isochrone", serving="isochrone", restrictions=restrictions
    )
    if provider.isochrone is None and name is None:  # no provider of this map has the capability
        raise DatasetNotReady("isochrones are unavailable: Valhalla's tiles of this map are not loaded")
    if provider.isochrone is None:
        raise InvalidParameter(f"the {provider.name} provider computes no isochrones", parameter="provider")
    assert point is not None  # errors would have raised
    query = IsochroneQuery(point, limits, metric, vehicle, route_type, departure)
    return IsochroneRequest(query, provider.name, provider.isochrone)


def parse_departure(params: Mapping[str, str], errors: ParameterErrors,
                    no_arrival: str = "an area is reached from its point at one time") -> datetime | None:  # fmt: skip
    """`departureTime` of an isochrone or a detour file (issue 33): the area leaves the point
    then, every line's routes leave then. Neither has a single arrival (`no_arrival` says why),
    so `arrivalTime` is refused."""
    if "arrivalTime" in params:
        errors.add("arrivalTime", f"{no_arrival}: give departureTime")
    raw = params.get("departureTime")
    return None if raw is None else parse_instant(raw, "departureTime", errors)


def parse_limits(params: Mapping[str, str], errors: ParameterErrors) -> tuple[str, tuple[float, ...]]:
    given = [m for m in ISOCHRONE_METRICS if params.get(m) is not None]
    if len(given) != 1:
        errors.add("time", "give either time (seconds) or distance (metres), e.g. time=300,600,900")
        return "time", (0.0,)
    metric = given[0]
    most = MAX_ISOCHRONE_SECONDS if metric == "time" else MAX_ISOCHRONE_METRES
    parts = params[metric].split(",")
    values = [number_or_nan(part.strip()) for part in parts]
    if not 1 <= len(values) <= MAX_ISOCHRONE_LIMITS or not all(0 < v <= most for v in values):
        unit = "seconds" if metric == "time" else "metres"
        errors.add(metric, f"must be 1 to {MAX_ISOCHRONE_LIMITS} comma-separated {unit} above 0 and at most {most}")
        return metric, (0.0,)
    if len(set(values)) != len(values):
        errors.add(metric, "each value at most once")
    return metric, tuple(sorted(values))
