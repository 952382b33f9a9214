"""HTTP parameters → typed queries, reporting every violation at once (no aiohttp here)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from common.errors import ParameterErrors
from common.params import LatLon, parse_choice, parse_int, parse_latlon, parse_latlon_text
from route_service.model import (
    MATRIX_ANNOTATIONS,
    MAX_ALTERNATIVES,
    MAX_EMERGENCY_RADIUS_M,
    ROUTE_TYPES,
    VEHICLES,
    MatrixQuery,
    RouteQuery,
    WaypointsQuery,
)

MAX_MATRIX_SIDE = 1000
# Checks the provider choice against the loaded providers (ProviderRegistry.check).
ProviderCheck = Callable[[str | None, int, ParameterErrors], None]
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclass(frozen=True)
class RouteRequest:
    query: RouteQuery
    provider: str | None  # None: the registry chooses


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


def parse_route(params: Mapping[str, str], check_provider: ProviderCheck) -> RouteRequest:
    """GET /v1/route's parameters; raises one InvalidParameter listing every violation."""
    errors = ParameterErrors()
    origin = parse_latlon(params, "from", errors)
    destination = parse_latlon(params, "to", errors)
    vehicle = parse_choice(params, "vehicle", errors, default="car", choices=VEHICLES)
    route_type = parse_choice(params, "type", errors, default="fastest", choices=ROUTE_TYPES)
    alternatives = parse_int(params, "alternatives", errors, default=0, minimum=0, maximum=MAX_ALTERNATIVES)
    radius = parse_int(params, "emergencyRoutingRadius", errors, default=0, minimum=0, maximum=MAX_EMERGENCY_RADIUS_M)
    steps = parse_bool(params, "steps", errors, default=True)
    provider = parse_provider(params, errors)
    check_provider(provider, radius, errors)
    errors.raise_if_any()
    assert origin is not None and destination is not None  # guaranteed: errors would have raised
    query = RouteQuery(origin, destination, vehicle, route_type, alternatives, radius, steps)
    return RouteRequest(query, provider)


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


def parse_matrix(body: Any) -> tuple[MatrixQuery, str | None]:
    """POST /internal/matrix's JSON body → (query, provider name or None)."""
    errors = ParameterErrors()
    params = internal_body_options(body, "sources, destinations", errors)
    sources = parse_points(body, "sources", errors, 1, MAX_MATRIX_SIDE)
    destinations = parse_points(body, "destinations", errors, 1, MAX_MATRIX_SIDE)
    vehicle, route_type, provider = parse_profile(params, errors)
    annotations = parse_annotations(body.get("annotations", list(MATRIX_ANNOTATIONS)), errors)
    errors.raise_if_any()
    return MatrixQuery(sources, destinations, vehicle, route_type, annotations), provider


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
    """An internal body's vehicle, type and provider (None: the default provider)."""
    vehicle = parse_choice(params, "vehicle", errors, default="car", choices=VEHICLES)
    route_type = parse_choice(params, "type", errors, default="fastest", choices=ROUTE_TYPES)
    return vehicle, route_type, parse_provider(params, errors)


# ---------------------------------------------------------------- one route through many waypoints


MAX_ROUTE_WAYPOINTS = 2000


def parse_waypoints(body: Any) -> tuple[WaypointsQuery, str | None]:
    """POST /internal/route's JSON body → (query, provider name or None)."""
    errors = ParameterErrors()
    params = internal_body_options(body, "waypoints", errors)
    waypoints = parse_points(body, "waypoints", errors, 2, MAX_ROUTE_WAYPOINTS)
    vehicle, route_type, provider = parse_profile(params, errors)
    errors.raise_if_any()
    return WaypointsQuery(waypoints, vehicle, route_type), provider
