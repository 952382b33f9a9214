"""Valhalla's requests as our queries ask them (no aiohttp, no engine calls): where a point is
located, the costing of a vehicle, route type and per-request costs, and the truck limits of a
located edge. Shared by the route, matrix and emergency plugins (providers.valhalla*)."""

from __future__ import annotations

from typing import Any

import shapely

from common.geo import LatLon
from common.vehicles import VEHICLE_TABLE
from route_service import polyline
from route_service.model import Restrictions, TruckDimensions

# Valhalla's access restrictions (`locate`'s verbose answer) by the truck dimension each limits,
# in TruckDimensions' order (TRUCK_PARAMETERS).
LIMITS = {"max_height": 0, "max_width": 1, "max_length": 2, "max_weight": 3, "max_axle_load": 4}
# The edges a location may start on: those no farther than the nearest one plus this (m).
SAME_PLACE_M = 0.5


def location(point: LatLon, vehicle: str) -> dict[str, Any]:
    """A break location on the nearest road no farther than the vehicle's radius, as the other
    providers, that reaches more than a handful of others (Valhalla's `minimum_reachability`, as
    OSRM's small components: a footway island inside a building is passed over, like our graph
    snaps onto its main network). `search_cutoff`, not `radius`: Valhalla takes every edge within
    `radius` as a start, and a 500 m one made a pedestrian route 15-20x slower in Munich and
    Helsinki (37-60 ms p50 against 2-3, `python -m bench engines`)."""
    return {"lat": point.lat, "lon": point.lon, "search_cutoff": int(VEHICLE_TABLE[vehicle].snap_radius_m)}


def costing(vehicle: str, route_type: str, restrictions: Restrictions) -> dict[str, Any]:
    name = VEHICLE_TABLE[vehicle].valhalla_costing
    options: dict[str, Any] = {}
    if route_type == "shortest":
        options["shortest"] = True
    if VEHICLE_TABLE[vehicle].takes_dimensions:
        options.update(truck_options(restrictions.truck or TruckDimensions()))
    request: dict[str, Any] = {"costing": name, "costing_options": {name: options}}
    if restrictions.avoid is not None:
        # Outer rings only: Valhalla excludes whole polygons (its holes cannot be passed).
        request["exclude_polygons"] = [[list(p) for p in rings[0]] for rings in restrictions.avoid.polygons]
    return request


def exceeded(edge: dict[str, Any], truck: TruckDimensions) -> list[tuple[int, float]]:
    """The limits of a located edge the truck exceeds: (dimension index, limit)."""
    dimensions = truck.with_defaults()
    found = []
    for restriction in edge.get("access_restrictions") or []:
        index = LIMITS.get(str(restriction.get("type")))
        if index is None or not restriction.get("truck") or restriction.get("except_destination"):
            continue
        limit = float(restriction.get("value") or 0.0)
        if 0 < limit < dimensions[index]:
            found.append((index, limit))
    return found


def middle_of(edge: dict[str, Any]) -> dict[str, float]:
    """The point halfway along a located edge's shape (its way's piece between two junctions)."""
    points = polyline.decode((edge.get("edge_info") or {}).get("shape") or "", 6)  # (lon, lat)
    if len(points) < 2:
        return {"lat": float(edge["correlated_lat"]), "lon": float(edge["correlated_lon"])}
    middle = shapely.LineString(points).interpolate(0.5, normalized=True)
    return {"lat": float(middle.y), "lon": float(middle.x)}


def truck_options(truck: TruckDimensions) -> dict[str, float]:
    height, width, length, weight, axle_load = truck.with_defaults()
    options = {"height": height, "width": width, "length": length, "weight": weight}
    if axle_load:
        options["axle_load"] = axle_load
    return options
