"""One route through many waypoints in order, for any provider (no aiohttp here).

Providers that can do it in one call (`WaypointRouter`, e.g. OSRM) do; the others are asked
leg by leg through `RouteProvider.route`, with their errors renamed to the waypoint they
concern so the caller can tell which of its points is at fault.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np

from common.errors import ApiError
from route_service.model import (
    Route,
    RouteProvider,
    RouteQuery,
    Snapped,
    WaypointRouter,
    WaypointsQuery,
    WaypointsResult,
)


def route_through(provider: RouteProvider, query: WaypointsQuery) -> WaypointsResult:
    if isinstance(provider, WaypointRouter):
        return provider.route_waypoints(query)
    return route_leg_by_leg(provider, query)


def route_leg_by_leg(provider: RouteProvider, query: WaypointsQuery) -> WaypointsResult:
    pieces: list[np.ndarray] = []
    legs: list[dict[str, object]] = []
    snapped: list[Snapped] = []
    distance = duration = 0.0
    for index, (origin, destination) in enumerate(pairwise(query.waypoints)):
        leg_query = RouteQuery(origin, destination, query.vehicle, query.route_type, steps=False)
        try:
            result = provider.route(leg_query)
        except ApiError as exc:
            raise renamed(exc, {"from": f"waypoints[{index}]", "to": f"waypoints[{index + 1}]"}) from exc
        best = result.routes[0]
        # Consecutive legs share their joining point: keep it once.
        pieces.append(best.geometry[1:] if pieces else best.geometry)
        legs.append({"distance": best.distance_m, "duration": best.duration_s})
        snapped.extend([result.origin, result.destination] if index == 0 else [result.destination])
        distance += best.distance_m
        duration += best.duration_s
    geometry = np.concatenate(pieces)
    route = Route(distance_m=round(distance, 1), duration_s=round(duration, 1), geometry=geometry, legs=legs)
    return WaypointsResult(route=route, snapped=snapped)


def renamed(error: ApiError, names: dict[str, str]) -> ApiError:
    """The same typed error with its parameters renamed (`from` → `waypoints[3]`)."""
    violations = [replace(v, parameter=names.get(v.parameter or "", v.parameter)) for v in error.violations]
    try:
        return type(error)(violations=violations, headers=error.headers)
    except TypeError:  # an error type with its own constructor: not one a provider raises
        return error
