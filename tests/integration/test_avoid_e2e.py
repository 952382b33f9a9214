"""Avoid areas end to end on the imported Monaco map: /v1/route, /v1/matrix and
/v1/optimize/stops through the gateway keep out of a box on real streets, and name a point
inside it or a malformed area in both error formats."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson
import pytest
import shapely

from tests.integration.conftest import LEGACY, PROBLEM, Caller
from tests.integration.test_optimize_e2e import STOPS
from tests.integration.test_route_e2e import CASINO, STADIUM, route_path
from tests.route_service.test_avoid_areas import box_around


@pytest.fixture
async def area(api: Caller) -> dict[str, Any]:
    """A box of 80 m across the middle of the casino → stadium route."""
    status, body = await api("GET", route_path(CASINO, STADIUM, "&provider=valhalla&steps=false"))
    assert status == 200, body
    path = body["routes"][0]["geometry"]["coordinates"]
    lon, lat = path[len(path) // 2]
    return box_around(lon, lat, 40.0)


def encoded(area: dict[str, Any]) -> str:
    return quote(orjson.dumps(area).decode(), safe="")


async def test_route_and_matrix_keep_out_of_the_area(api: Caller, area: dict[str, Any]) -> None:
    status, body = await api("GET", route_path(CASINO, STADIUM, f"&steps=false&avoid={encoded(area)}"))
    assert status == 200, body
    assert body["provider"] == "valhalla"
    assert not shapely.LineString(body["routes"][0]["geometry"]["coordinates"]).intersects(shapely.Polygon(area["coordinates"][0]))
    avoiding_s = body["routes"][0]["duration"]
    status, body = await api("GET", route_path(CASINO, STADIUM, f"&steps=false&provider=valhalla&avoid={encoded(area)}"))
    assert status == 200 and body["routes"][0]["duration"] == avoiding_s, body  # named, the same answer
    points = [dict(zip(("lat", "lon"), map(float, p.split(",")), strict=True)) for p in (CASINO, STADIUM)]
    status, matrix = await api("POST", "/v1/matrix", {"sources": points, "avoid": area})
    assert status == 200 and matrix["provider"] == "valhalla", matrix  # as its routes
    assert matrix["durations"][0][1] <= avoiding_s * 1.03 + 5  # its exact search: never dearer than the route


async def test_optimized_tour_keeps_out_of_the_area(api: Caller, area: dict[str, Any]) -> None:
    status, body = await api("POST", f"/v1/optimize/stops?avoid={encoded(area)}", STOPS)
    assert status == 200, body
    assert not shapely.LineString(body["geometry"]["coordinates"]).intersects(shapely.Polygon(area["coordinates"][0]))


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_a_stop_inside_the_area_is_named_in_both_formats(api: Caller, accept: dict[str, str]) -> None:
    casino = STOPS[0]["coordinate"]
    around = box_around(casino["lon"], casino["lat"], 50.0)
    status, body = await api("POST", f"/v1/optimize/stops?avoid={encoded(around)}", STOPS, headers=accept)
    assert status == 400, body
    if accept is LEGACY:
        assert [d["message"].split(":")[0] for d in body["details"]] == ["stops[0]"]
    else:
        assert body["detail"].startswith("stops[0]: lies inside an area to avoid")


async def test_a_malformed_area_is_named_on_every_operation(api: Caller) -> None:
    broken = {"type": "Polygon", "coordinates": [[[7.42, 43.73], [7.43, 43.73], [7.43, 43.74]]]}
    status, body = await api("GET", route_path(CASINO, STADIUM, f"&avoid={encoded(broken)}"))
    assert status == 400 and body["detail"].startswith("avoid.coordinates[0]: a ring needs at least 4 positions")
    status, body = await api("POST", "/v1/matrix", {"sources": [{"lat": 43.7393, "lon": 7.4279}], "avoid": broken})
    assert status == 400 and body["detail"].startswith("avoid.coordinates[0]:")
    status, body = await api("POST", f"/v1/optimize/stops?avoid={encoded(broken)}", STOPS)
    assert status == 400 and body["detail"].startswith("avoid.coordinates[0]:")
    status, body = await api("GET", route_path(CASINO, STADIUM, "&avoid=%7Bnot%20json"))
    assert status == 400 and "GeoJSON" in body["detail"]
