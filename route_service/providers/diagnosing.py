"""Plugins whose snapping errors carry their diagnosis (`route_service.diagnostics`).

The registry wraps every provider's own route, matrix, waypoints and cost plugins in these,
before the leg-by-leg adapter, so each error is explained once, with the names the plugin's
caller gave its points; callers rename them further (`waypoints[3]` → `stops[3]`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from common.errors import NoRouteFound, PointNotRoutable
from route_service.diagnostics import NamedPoint, SnapDiagnostics
from route_service.model import CostQuery, MatrixQuery, RouteQuery, WaypointsQuery

Query = RouteQuery | MatrixQuery | WaypointsQuery | CostQuery


def named_points(query: Query) -> Sequence[NamedPoint]:
    """Each point of a query with the name its errors give it."""
    if isinstance(query, RouteQuery):
        return [("from", query.origin), ("to", query.destination)]
    if isinstance(query, MatrixQuery):
        sources = [(f"sources[{i}]", p) for i, p in enumerate(query.sources)]
        if query.destinations == query.sources:  # all to all: each point is reported once
            return sources
        return sources + [(f"destinations[{j}]", p) for j, p in enumerate(query.destinations)]
    if isinstance(query, WaypointsQuery):
        return [(f"waypoints[{i}]", p) for i, p in enumerate(query.waypoints)]
    return list(zip(query.names, query.points, strict=True))


def diagnosing[Q: (RouteQuery, MatrixQuery, WaypointsQuery, CostQuery), R](
    plugin: Callable[[Q], R], diagnostics: SnapDiagnostics
) -> Callable[[Q], R]:
    """`plugin`, with its not-routable and no-route errors explained point by point."""

    def explained(query: Q) -> R:
        try:
            return plugin(query)
        except (PointNotRoutable, NoRouteFound) as exc:
            raise diagnostics.explain(exc, named_points(query), query.vehicle, query.route_type) from exc

    return explained
