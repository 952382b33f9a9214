"""Plugins that hand their engine the surface road a point means (issue 32).

A point has no height. Where its nearest road lies in a tunnel and a surface road is at most
SURFACE_PREFERENCE_M farther, the point means the surface road: the README's truck example,
7.4 m from Helsinki's service tunnel three levels down and 11.6 m from Yliopistonkatu above it,
ended in the tunnel on every engine. OSRM and Valhalla snap to the nearest road, so the registry
wraps every provider's route, matrix, waypoints, cost and detour plugins in `surface_first`:
Valhalla's `locate`, which knows which edges are tunnels and can leave them out
(`surface_instead`), moves such a point onto the surface road before the engine sees it, and
the answer's snapped distances are measured from the point the caller gave.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol, cast, runtime_checkable

from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from route_service.model import (
    CostQuery,
    DetourQuery,
    MatrixQuery,
    MatrixResult,
    RouteQuery,
    RouteResult,
    Snapped,
    WaypointsQuery,
    WaypointsResult,
)
from route_service.providers.valhalla_requests import SAME_PLACE_M

Query = RouteQuery | MatrixQuery | WaypointsQuery | CostQuery | DetourQuery
# How much farther a surface road may be than the tunnel nearest a point and still be the one it
# means (m): a GPS fix's or a geocoded address's usual error.
SURFACE_PREFERENCE_M = 25.0
# Valhalla's edges near a location (its `locate`), verbose or not; none when there are none.
Locate = Callable[[dict[str, Any], bool], list[dict[str, Any]]]


@runtime_checkable
class SurfaceSnapper(Protocol):
    def surface_point(self, vehicle: str, point: LatLon, max_distance_m: float) -> LatLon | None:
        """The point on the surface road `point` means, when its nearest road lies below the
        ground (None: the nearest road is meant, or Valhalla is not loaded)."""
        ...


def surface_instead(locate: Locate, where: dict[str, Any], max_distance_m: float) -> LatLon | None:
    """The surface road meant at Valhalla location `where` when every edge nearest it is a
    tunnel: the nearest edge no tunnel within SURFACE_PREFERENCE_M more (`search_filter`'s
    `exclude_tunnel`). One `locate` for a point by a surface road, two by a tunnel."""
    # The first look counts every edge, however small its network (`minimum_reachability` 0):
    # 0.19 ms a point against 0.59 with Valhalla's reachability check (the five extracts as one,
    # 300 points); the second, rare, keeps the check, so a point is moved onto a network the
    # engines route on.
    edges = locate({**where, "search_cutoff": math.ceil(max_distance_m), "minimum_reachability": 0}, True)
    if not edges:
        return None
    nearest = min(float(edge["distance"]) for edge in edges)
    if not all(edge["edge"]["tunnel"] for edge in edges if float(edge["distance"]) <= nearest + SAME_PLACE_M):
        return None
    # Valhalla reads the cutoff as whole metres (40.6 found no road 40.0 m away): rounded up.
    reach = math.ceil(min(nearest + SURFACE_PREFERENCE_M, max_distance_m))
    surface = locate({**where, "search_cutoff": reach, "search_filter": {"exclude_tunnel": True}}, False)
    return LatLon(float(surface[0]["correlated_lat"]), float(surface[0]["correlated_lon"])) if surface else None


def surface_first[Q: (RouteQuery, MatrixQuery, WaypointsQuery, CostQuery, DetourQuery), R](
    plugin: Callable[[Q], R], surface: SurfaceSnapper
) -> Callable[[Q], R]:
    """`plugin`, handed the surface road for each point whose nearest road is below the ground."""

    def answered(query: Q) -> R:
        given = points_of(query)
        radius = VEHICLE_TABLE[query.vehicle].snap_radius_m
        meant = [surface.surface_point(query.vehicle, p, radius) or p for p in given]
        if meant == given:
            return plugin(query)
        return measured_from(plugin(cast(Q, with_points(query, meant))), query, given)

    return answered


def points_of(query: Query) -> list[LatLon]:
    if isinstance(query, RouteQuery):
        return [query.origin, query.destination]
    if isinstance(query, MatrixQuery):
        return [*query.sources, *query.destinations]
    if isinstance(query, WaypointsQuery):
        return list(query.waypoints)
    if isinstance(query, DetourQuery):
        return [query.origin, query.via, query.destination]
    return list(query.points)


def with_points(query: Query, points: Sequence[LatLon]) -> Query:
    if isinstance(query, RouteQuery):
        return replace(query, origin=points[0], destination=points[1])
    if isinstance(query, MatrixQuery):
        n = len(query.sources)
        return replace(query, sources=list(points[:n]), destinations=list(points[n:]))
    if isinstance(query, WaypointsQuery):
        return replace(query, waypoints=list(points))
    if isinstance(query, DetourQuery):
        return replace(query, origin=points[0], via=points[1], destination=points[2])
    return replace(query, points=list(points))


def measured_from[R](result: R, query: Query, given: list[LatLon]) -> R:
    """The result with each snapped point's distance from the point the caller gave."""
    if isinstance(result, RouteResult):
        result.origin, result.destination = (
            remeasured(result.origin, given[0]),
            remeasured(result.destination, given[1]),
        )
    elif isinstance(result, MatrixResult) and isinstance(query, MatrixQuery):
        n = len(query.sources)
        result.snapped_sources = [remeasured(s, p) for s, p in zip(result.snapped_sources, given[:n], strict=True)]
        result.snapped_destinations = [
            remeasured(s, p) for s, p in zip(result.snapped_destinations, given[n:], strict=True)
        ]
    elif isinstance(result, WaypointsResult):
        result.snapped = [remeasured(s, p) for s, p in zip(result.snapped, given, strict=True)]
    return result


def remeasured(snapped: Snapped, given: LatLon) -> Snapped:
    return replace(snapped, distance_m=round(haversine_m(given, snapped.location), 1))
