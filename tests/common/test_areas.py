"""Avoid areas as every service reads them: GeoJSON Polygon/MultiPolygon, each violation named
by its place, limits on polygons, positions and area, and points inside reported."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest

from common.areas import (
    MAX_AREA_KM2,
    MAX_POLYGONS,
    MAX_VERTICES,
    AvoidArea,
    area_km2,
    check_points_outside,
    parse_avoid_area,
)
from common.errors import ParameterErrors
from common.geo import LatLon

SQUARE = [[8.69, 49.40], [8.70, 49.40], [8.70, 49.41], [8.69, 49.41], [8.69, 49.40]]


def parse(value: Any) -> tuple[AvoidArea | None, list[tuple[str | None, str]]]:
    errors = ParameterErrors()
    area = parse_avoid_area(value, "avoid", errors)
    return area, [(v.parameter, v.message) for v in errors.violations]


def box(lon: float, lat: float, size: float) -> list[list[float]]:
    return [[lon, lat], [lon + size, lat], [lon + size, lat + size], [lon, lat + size], [lon, lat]]


def test_polygon_as_object_text_and_feature() -> None:
    polygon = {"type": "Polygon", "coordinates": [SQUARE]}
    for value in (polygon, orjson.dumps(polygon).decode(), {"type": "Feature", "geometry": polygon, "properties": {}}):
        area, errors = parse(value)
        assert errors == [] and area is not None
        assert area.polygons == ((tuple((x, y) for x, y in SQUARE),),)
        assert area.as_geojson() == polygon


def test_multipolygon_with_a_hole() -> None:
    hole = [[8.692, 49.402], [8.694, 49.402], [8.694, 49.404], [8.692, 49.402]]
    value = {"type": "MultiPolygon", "coordinates": [[SQUARE, hole], [box(8.8, 49.5, 0.01)]]}
    area, errors = parse(value)
    assert errors == [] and area is not None and len(area.polygons) == 2
    assert area.shape().geom_type == "MultiPolygon"
    assert parse(area.as_geojson())[0] == area


@pytest.mark.parametrize(
    ("value", "parameter", "message"),
    [
        ("{not json", "avoid", "GeoJSON Polygon or MultiPolygon"),
        ("[1, 2]", "avoid", "GeoJSON object of type Polygon or MultiPolygon"),
        ({"type": "Point", "coordinates": [8.7, 49.4]}, "avoid", "of type Polygon or MultiPolygon"),
        ({"type": "Polygon"}, "avoid.coordinates", "non-empty list of rings"),
        ({"type": "Polygon", "coordinates": []}, "avoid.coordinates", "non-empty list of rings"),
        ({"type": "Polygon", "coordinates": [SQUARE[:3]]}, "avoid.coordinates[0]", "at least 4 positions"),
        ({"type": "Polygon", "coordinates": [[*SQUARE[:4], [8.695, 49.405]]]}, "avoid.coordinates[0]", "must be closed"),
        ({"type": "Polygon", "coordinates": [[*SQUARE[:2], [8.70, 95.0], *SQUARE[3:]]]}, "avoid.coordinates[0][2]", "latitude must be between"),
        ({"type": "Polygon", "coordinates": [[*SQUARE[:2], ["8.7", 49.4], *SQUARE[3:]]]}, "avoid.coordinates[0][2]", "longitude must be a number"),
        ({"type": "Polygon", "coordinates": [[*SQUARE[:2], [True, 49.4], *SQUARE[3:]]]}, "avoid.coordinates[0][2]", "longitude must be a number"),
        ({"type": "Polygon", "coordinates": [[*SQUARE[:2], [8.7], *SQUARE[3:]]]}, "avoid.coordinates[0][2]", "position [lon, lat]"),
        # a bow tie crosses itself
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}, "avoid.coordinates", "not a valid polygon: Self-intersection"),
        ({"type": "MultiPolygon", "coordinates": []}, "avoid.coordinates", "non-empty list of polygons"),
        ({"type": "MultiPolygon", "coordinates": [[box(i, 0, 0.001)] for i in range(MAX_POLYGONS + 1)]}, "avoid.coordinates", f"at most {MAX_POLYGONS} polygons"),
        ({"type": "Polygon", "coordinates": [box(8.0, 49.0, 1.0)]}, "avoid", f"at most {MAX_AREA_KM2:g} km²"),
    ],
)  # fmt: skip
def test_each_fault_is_named_by_its_place(value: Any, parameter: str, message: str) -> None:
    area, errors = parse(value)
    assert area is None
    assert len(errors) == 1, errors
    assert errors[0][0] == parameter and message in errors[0][1], errors


def test_every_fault_at_once() -> None:
    value = {"type": "MultiPolygon", "coordinates": [[SQUARE[:3]], [[[8.7, 99.0], *SQUARE[1:]]]]}
    _, errors = parse(value)
    assert [p for p, _ in errors] == ["avoid.coordinates[0][0]", "avoid.coordinates[1][0][0]"]


def test_too_many_positions_in_one_ring_and_in_all() -> None:
    ring = [[8.7 + 0.0001 * i, 49.4 + 0.00001 * (i % 2)] for i in range(MAX_VERTICES + 1)] + [[8.7, 49.4]]
    _, errors = parse({"type": "Polygon", "coordinates": [ring]})
    assert errors[0][0] == "avoid.coordinates[0]" and f"at most {MAX_VERTICES} positions" in errors[0][1]
    circle = [[8.0 + 0.001 * math.cos(k / 50 * math.pi), 49.0 + 0.001 * math.sin(k / 50 * math.pi)] for k in range(100)]
    rings = [[[[x + 0.01 * i, y] for x, y in [*circle, circle[0]]]] for i in range(MAX_POLYGONS)]
    _, errors = parse({"type": "MultiPolygon", "coordinates": rings})  # 20 x 101 positions
    assert errors == [("avoid", f"at most {MAX_VERTICES} positions in all, got {MAX_POLYGONS * 101}")]


def test_area_on_the_sphere() -> None:
    """A box of 0.01° x 0.01° at 49.4° N is about 1.11 km x 0.72 km."""
    area, _ = parse({"type": "Polygon", "coordinates": [box(8.69, 49.40, 0.01)]})
    assert area is not None
    assert area_km2(area) == pytest.approx(1.112 * 0.724, rel=0.01)


def test_points_inside_are_named() -> None:
    area, _ = parse({"type": "Polygon", "coordinates": [SQUARE]})
    assert area is not None
    errors = ParameterErrors()
    check_points_outside(area, [("from", LatLon(49.405, 8.695)), ("to", LatLon(49.5, 8.8))], errors)
    assert [v.parameter for v in errors.violations] == ["from"]
    assert "inside an area to avoid" in errors.violations[0].message
