"""RouteResult/MatrixResult → the JSON bodies of API.md (no aiohttp here)."""

from __future__ import annotations

from typing import Any

from common.osm_inputs import ATTRIBUTION
from route_service.model import EmergencySegment, MatrixResult, Route, RouteQuery, RouteResult, Snapped, WaypointsResult


def snapped(point: Snapped) -> dict[str, Any]:
    return {"lat": point.location.lat, "lon": point.location.lon, "distance": point.distance_m, "name": point.name}


def emergency_segment(segment: EmergencySegment) -> dict[str, Any]:
    return {
        "startIndex": segment.start_index,
        "endIndex": segment.end_index,
        "distance": segment.distance_m,
        "reason": segment.reason,
    }


def route(item: Route) -> dict[str, Any]:
    return {
        "distance": item.distance_m,
        "duration": item.duration_s,
        "geometry": {"type": "LineString", "coordinates": item.geometry},
        "legs": item.legs,
        "emergencySegments": [emergency_segment(s) for s in item.emergency_segments],
    }


def route_body(result: RouteResult, query: RouteQuery, provider: str, dataset: str) -> dict[str, Any]:
    """The best route first, then the alternatives."""
    return {
        "routes": [route(r) for r in result.routes],
        "provider": provider,
        "vehicle": query.vehicle,
        "type": query.route_type,
        "snappedFrom": snapped(result.origin),
        "snappedTo": snapped(result.destination),
        "alternativesRequested": query.alternatives,
        "alternativesFound": max(0, len(result.routes) - 1),
        "emergencyRoutingRadius": query.emergency_radius_m,
        "notes": result.notes,
        "dataset": dataset,
        "attribution": ATTRIBUTION,
    }


def matrix_body(result: MatrixResult, provider: str, dataset: str) -> dict[str, Any]:
    """Row i, column j: from sources[i] to destinations[j]; null where no route exists. A
    table not asked for (`annotations`) is left out. OSRM's tables are float64 arrays, which
    `common.service.dump_json` writes without a Python float per cell (NaN as null)."""
    tables = {"duration": result.durations_s, "distance": result.distances_m}
    return {
        **{name + "s": tables[name] for name in result.annotations},
        "sources": [snapped(s) for s in result.snapped_sources],
        "destinations": [snapped(d) for d in result.snapped_destinations],
        "provider": provider,
        "dataset": dataset,
    }


def waypoints_body(result: WaypointsResult, provider: str, dataset: str) -> dict[str, Any]:
    """POST /internal/route: one route through every waypoint, one leg per consecutive pair."""
    item = result.route
    return {
        "distance": item.distance_m,
        "duration": item.duration_s,
        "geometry": {"type": "LineString", "coordinates": item.geometry},
        "legs": [{"distance": leg["distance"], "duration": leg["duration"]} for leg in item.legs],
        "waypoints": [snapped(s) for s in result.snapped],
        "provider": provider,
        "dataset": dataset,
    }
