"""HTTP parameters → typed requests, reporting every violation at once (no aiohttp here).

This is where a request is validated, once: its parameters, then (the registry's last word)
the provider that answers it, whose plugin the typed request carries (`providers.base`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.errors import InvalidParameter, ParameterErrors
from common.geo import LatLon
from common.params import parse_choice, parse_int, parse_latlon, parse_latlon_text
from common.vocabulary import DEFAULT_ROUTE_TYPE, DEFAULT_VEHICLE, ROUTE_TYPES, VEHICLES
from route_service.model import (
    MATRIX_ANNOTATIONS,
    MAX_ALTERNATIVES,
    MAX_EMERGENCY_RADIUS_M,
    MatrixQuery,
    RouteQuery,
    WaypointsQuery,
)
from route_service.providers.base import MatrixRequest, RouteRequest, WaypointsRequest
from route_service.providers.registry import ProviderRegistry

MAX_MATRIX_SIDE = 1000
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def parse_provider(params: Mapping[str, str], errors: ParameterErrors) -> str | None:
    raw = params.get("provider")
    if raw is None:
        return None
    name = raw.strip().lower()
    if not name:
        errors.add("provider", "must not be blank; omit it for the default provider")
        return None
    return name


def parse_bool(params: Mapping[str, str], name: str, errors: ParameterErrors, *, default: bool) -> bool:
    raw = params.get(name)
    if raw is None:
        return default
    value = _BOOLEANS.get(raw.strip().lower())
    if value is None:
        errors.add(name, f"must be true or false, got {raw[:40]!r}")
        return default
    return value


def parse_route(params: Mapping[str, str], registry: ProviderRegistry) -> RouteRequest:
    """GET /v1/route's parameters; raises one InvalidParameter listing every violation."""
    errors = ParameterErrors()
    origin = parse_latlon(params, "from", errors)
    destination = parse_latlon(params, "to", errors)
    vehicle = parse_choice(params, "vehicle", errors, default=DEFAULT_VEHICLE, choices=VEHICLES)
    route_type = parse_choice(params, "type", errors, default=DEFAULT_ROUTE_TYPE, choices=ROUTE_TYPES)
    alternatives = parse_int(params, "alternatives", errors, default=0, minimum=0, maximum=MAX_ALTERNATIVES)
    radius = parse_int(params, "emergencyRoutingRadius", errors, default=0, minimum=0, maximum=MAX_EMERGENCY_RADIUS_M)
    steps = parse_bool(params, "steps", errors, default=True)
    name = parse_provider(params, errors)
    provider = registry.choose(name, vehicle, route_type, errors, emergency=radius > 0)
    assert origin is not None and destination is not None  # guaranteed: errors would have raised
    query = RouteQuery(origin, destination, vehicle, route_type, alternatives, radius, steps)
    return RouteRequest(query, provider.name, provider.route)


# ---------------------------------------------------------------- matrix


def parse_point(value: Any) -> LatLon | str:
    """`{"lat": .., "lon": ..}` (or a "<lat>,<lon>" string), or why it is not one."""
    if isinstance(value, str):
        return parse_latlon_text(value.strip())
    if not isinstance(value, dict) or not {"lat", "lon"} <= value.keys():
        return "must be an object {lat, lon}"
    lat, lon = value["lat"], value["lon"]
    if (
        isinstance(lat, bool)
        or isinstance(lon, bool)
        or not isinstance(lat, int | float)
        or not isinstance(lon, int | float)
    ):
        return "lat and lon must be numbers"
    return parse_latlon_text(f"{float(lat)!r},{float(lon)!r}")


def parse_points(body: Mapping[str, Any], name: str, errors: ParameterErrors, fewest: int, most: int) -> list[LatLon]:
    raw = body.get(name)
    if not isinstance(raw, list) or not fewest <= len(raw) <= most:
        errors.add(name, f"must be a list of {fewest} to {most} points {{lat, lon}}")
        return []
    points: list[LatLon] = []
    for index, item in enumerate(raw):
        parsed = parse_point(item)
        if isinstance(parsed, str):
            errors.add(f"{name}[{index}]", parsed)
        else:
            points.append(parsed)
    return points


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
    vehicle, route_type, name = parse_profile(params, errors)
    annotations = parse_annotations(body.get("annotations", list(MATRIX_ANNOTATIONS)), errors)
    provider = registry.choose(name, vehicle, route_type, errors)
    if provider.matrix is None:
        raise InvalidParameter(f"the {provider.name} provider computes no matrices", parameter="provider")
    query = MatrixQuery(sources, destinations, vehicle, route_type, annotations)
    return MatrixRequest(query, provider.name, provider.matrix)


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


def parse_profile(params: Mapping[str, str], errors: ParameterErrors) -> tuple[str, str, str | None]:
    """The vehicle, type and provider (None: the registry chooses) of an internal body or a detour upload."""
    vehicle = parse_choice(params, "vehicle", errors, default=DEFAULT_VEHICLE, choices=VEHICLES)
    route_type = parse_choice(params, "type", errors, default=DEFAULT_ROUTE_TYPE, choices=ROUTE_TYPES)
    return vehicle, route_type, parse_provider(params, errors)


# ---------------------------------------------------------------- one route through many waypoints


MAX_ROUTE_WAYPOINTS = 2000


def parse_waypoints(body: Any, registry: ProviderRegistry) -> WaypointsRequest:
    """POST /internal/route's JSON body."""
    errors = ParameterErrors()
    params = internal_body_options(body, "waypoints", errors)
    waypoints = parse_points(body, "waypoints", errors, 2, MAX_ROUTE_WAYPOINTS)
    vehicle, route_type, name = parse_profile(params, errors)
    provider = registry.choose(name, vehicle, route_type, errors)
    return WaypointsRequest(WaypointsQuery(waypoints, vehicle, route_type), provider.name, provider.waypoints)
