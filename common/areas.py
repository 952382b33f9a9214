"""Areas a route must avoid: GeoJSON Polygon or MultiPolygon, validated once, for every service
that takes them (route, matrix, optimize). No aiohttp here.

Limits (documented in the OpenAPI spec): at most MAX_POLYGONS polygons, MAX_VERTICES positions
in all, MAX_AREA_KM2 in all. A ring is closed (first position repeated last) and has at least
four positions; positions are [lon, lat] numbers in range; a polygon must be valid (no
self-intersection: shapely says where). Every violation is reported at once, named by its
place in the GeoJSON (`avoid.coordinates[0][2]`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import shapely

from common.errors import ParameterErrors
from common.geo import METRES_PER_DEGREE, LatLon

MAX_POLYGONS = 20
MAX_VERTICES = 2000
MAX_AREA_KM2 = 2500.0  # 50 km x 50 km: a city's worth of closures
AREA_TYPES = ("Polygon", "MultiPolygon")

Ring = tuple[tuple[float, float], ...]  # (lon, lat) positions, closed (first == last)


@dataclass(frozen=True)
class AvoidArea:
    """Polygons a route may not enter: each polygon its outer ring first, then its holes."""

    polygons: tuple[tuple[Ring, ...], ...]

    def shape(self) -> shapely.Geometry:
        """The area as one shapely geometry (a Polygon or MultiPolygon)."""
        polygons = [shapely.Polygon(rings[0], rings[1:]) for rings in self.polygons]
        return polygons[0] if len(polygons) == 1 else shapely.MultiPolygon(polygons)

    def as_geojson(self) -> dict[str, Any]:
        """Back to GeoJSON, for forwarding to another service."""
        coordinates = [[[list(p) for p in ring] for ring in rings] for rings in self.polygons]
        if len(coordinates) == 1:
            return {"type": "Polygon", "coordinates": coordinates[0]}
        return {"type": "MultiPolygon", "coordinates": coordinates}


def parse_avoid_area(value: Any, name: str, errors: ParameterErrors) -> AvoidArea | None:
    """A GeoJSON geometry object, or its JSON text (a query parameter), or a Feature holding one."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            errors.add(name, "must be a GeoJSON Polygon or MultiPolygon (URL-encoded JSON text)")
            return None
    if isinstance(value, dict) and value.get("type") == "Feature":
        value = value.get("geometry")
    if not isinstance(value, dict) or value.get("type") not in AREA_TYPES:
        errors.add(name, f"must be a GeoJSON object of type {' or '.join(AREA_TYPES)}")
        return None
    coordinates = value.get("coordinates")
    where = f"{name}.coordinates"
    found_before = len(errors.violations)
    if value["type"] == "Polygon":
        polygons = [parse_polygon(coordinates, where, errors)]
    elif not isinstance(coordinates, list) or not coordinates:
        errors.add(where, "must be a non-empty list of polygons")
        return None
    elif len(coordinates) > MAX_POLYGONS:
        errors.add(where, f"at most {MAX_POLYGONS} polygons, got {len(coordinates)}")
        return None
    else:
        polygons = [parse_polygon(c, f"{where}[{i}]", errors) for i, c in enumerate(coordinates)]
    if len(errors.violations) > found_before:
        return None
    area = AvoidArea(tuple(p for p in polygons if p is not None))
    check_size(area, name, errors)
    return area if len(errors.violations) == found_before else None


def parse_polygon(value: Any, name: str, errors: ParameterErrors) -> tuple[Ring, ...] | None:
    if not isinstance(value, list) or not value:
        errors.add(name, "must be a non-empty list of rings (the outer ring, then any holes)")
        return None
    rings = [parse_ring(ring, f"{name}[{i}]", errors) for i, ring in enumerate(value)]
    if any(r is None for r in rings):
        return None
    polygon = tuple(r for r in rings if r is not None)
    shape = shapely.Polygon(polygon[0], polygon[1:])
    if not shape.is_valid:
        errors.add(name, f"is not a valid polygon: {shapely.is_valid_reason(shape)}")
        return None
    return polygon


def parse_ring(value: Any, name: str, errors: ParameterErrors) -> Ring | None:
    if not isinstance(value, list) or len(value) < 4:
        errors.add(name, "a ring needs at least 4 positions, the first repeated last")
        return None
    if len(value) > MAX_VERTICES:
        errors.add(name, f"at most {MAX_VERTICES} positions, got {len(value)}")
        return None
    positions = [parse_position(p, f"{name}[{i}]", errors) for i, p in enumerate(value)]
    if any(p is None for p in positions):
        return None
    ring = tuple(p for p in positions if p is not None)
    if ring[0] != ring[-1]:
        errors.add(name, "a ring must be closed: its last position must repeat its first")
        return None
    return ring


def parse_position(value: Any, name: str, errors: ParameterErrors) -> tuple[float, float] | None:
    if not isinstance(value, list) or len(value) not in (2, 3):
        errors.add(name, "must be a position [lon, lat]")
        return None
    lon, lat = value[0], value[1]
    for number, low, high, what in ((lon, -180, 180, "longitude"), (lat, -90, 90, "latitude")):
        if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(number):
            errors.add(name, f"{what} must be a number, got {str(number)[:40]}")
            return None
        if not low <= number <= high:
            errors.add(name, f"{what} must be between {low} and {high}, got {number:g} (positions are [lon, lat])")
            return None
    return float(lon), float(lat)


def check_size(area: AvoidArea, name: str, errors: ParameterErrors) -> None:
    vertices = sum(len(ring) for rings in area.polygons for ring in rings)
    if vertices > MAX_VERTICES:
        errors.add(name, f"at most {MAX_VERTICES} positions in all, got {vertices}")
    km2 = area_km2(area)
    if km2 > MAX_AREA_KM2:
        errors.add(name, f"at most {MAX_AREA_KM2:g} km² in all, got {km2:.0f} km²")


def area_km2(area: AvoidArea) -> float:
    """The area on the sphere, near enough for a limit: degrees² scaled at each polygon's latitude."""
    total = 0.0
    for rings in area.polygons:
        polygon = shapely.Polygon(rings[0], rings[1:])
        lat = polygon.centroid.y
        total += polygon.area * METRES_PER_DEGREE**2 * math.cos(math.radians(lat)) / 1e6
    return total


def check_points_outside(area: AvoidArea, points: Sequence[tuple[str, LatLon]], errors: ParameterErrors) -> None:
    """Every point lying in the area is a violation: no route from or to it avoids the area."""
    if not points:
        return
    shape = area.shape()
    shapely.prepare(shape)
    lons = np.array([p.lon for _, p in points])
    lats = np.array([p.lat for _, p in points])
    for (name, _), inside in zip(points, shapely.intersects_xy(shape, lons, lats), strict=True):
        if inside:
            errors.add(name, "lies inside an area to avoid: no route from or to it can avoid the area")


def square_around(point: LatLon, half_m: float) -> dict[str, Any]:
    """A GeoJSON square of 2 x `half_m` metres centred on the point (examples, tests, benchmarks)."""
    dlat = half_m / METRES_PER_DEGREE
    dlon = dlat / math.cos(math.radians(point.lat))
    lon, lat = point.lon, point.lat
    ring = [[lon - dlon, lat - dlat], [lon + dlon, lat - dlat], [lon + dlon, lat + dlat], [lon - dlon, lat + dlat]]
    return {"type": "Polygon", "coordinates": [[*ring, ring[0]]]}
