"""A point means the surface road (issue 32), from Valhalla (issue 56): where its nearest road is
a tunnel and a surface road is at most SURFACE_PREFERENCE_M farther, every engine is handed the
surface road; a point by a tunnel with no surface road that near keeps the tunnel.

The made map: a grid of streets (Valhalla passes over networks of fewer than 50 nodes) with a
service tunnel 56 m north of its southern street, joined to the grid by ramps; the points lie
between two of the grid's columns, 109 m from each."""

from __future__ import annotations

from pathlib import Path

import osmium
import pytest
from osmium.osm.mutable import Node, Way

from common.geo import LatLon, haversine_m
from route_service.dataset import Dataset
from route_service.importing.importer import Progress, import_maps
from route_service.model import RouteQuery
from route_service.providers.registry import ProviderRegistry
from route_service.providers.valhalla import ValhallaProvider

ROWS, COLUMNS, LAT_STEP, LON_STEP = 8, 8, 0.002, 0.003
TUNNEL_LAT, TUNNEL_WEST, TUNNEL_EAST = 49.0005, 8.003, 8.009
# 15.6 m from the tunnel, 40 m from the street "Sued" south of it: the street is meant.
BETWEEN = LatLon(49.00036, 8.0075)
# 5.6 m from the tunnel, 50 m from the street: the tunnel is meant.
BY_THE_TUNNEL = LatLon(49.00045, 8.0075)


def write_map(path: Path) -> Path:
    writer = osmium.SimpleWriter(str(path))
    try:
        grid = {(r, c): 1 + r * COLUMNS + c for r in range(ROWS) for c in range(COLUMNS)}
        for (r, c), node in grid.items():
            writer.add_node(Node(id=node, location=(8.0 + c * LON_STEP, 49.0 + r * LAT_STEP)))
        ends = {901: (TUNNEL_WEST, TUNNEL_LAT), 902: (TUNNEL_EAST, TUNNEL_LAT)}
        for node, location in ends.items():
            writer.add_node(Node(id=node, location=location))
        for r in range(ROWS):
            name = "Sued" if r == 0 else f"Reihe {r}"
            row = [grid[r, c] for c in range(COLUMNS)]
            writer.add_way(Way(id=100 + r, nodes=row, tags={"highway": "residential", "name": name}))
        for c in range(COLUMNS):
            column = [grid[r, c] for r in range(ROWS)]
            writer.add_way(Way(id=200 + c, nodes=column, tags={"highway": "residential", "name": f"Spalte {c}"}))
        tunnel = {"highway": "service", "name": "Tunnel", "tunnel": "yes", "layer": "-2"}
        writer.add_way(Way(id=300, nodes=[901, 902], tags=tunnel))
        for way, (end, up) in enumerate(((901, 1), (902, 3)), start=301):  # ramps up to row 1
            writer.add_way(Way(id=way, nodes=[end, grid[1, up]], tags={"highway": "service", "name": "Rampe"}))
    finally:
        writer.close()
    return path


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ProviderRegistry:
    work = tmp_path_factory.mktemp("surface")
    pbf = write_map(work / "tunnel.osm.pbf")
    result = import_maps([pbf], work / "maps", profiles=["car-fastest"], progress=Progress(emit=lambda _l: None))
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


def valhalla(registry: ProviderRegistry) -> ValhallaProvider:
    provider = registry.sources["valhalla"]
    assert isinstance(provider, ValhallaProvider)
    return provider


def test_a_point_nearest_a_tunnel_means_the_surface_road_a_little_farther(registry: ProviderRegistry) -> None:
    meant = valhalla(registry).surface_point("car", BETWEEN, 60.0)
    assert meant is not None and meant.lat == pytest.approx(49.0, abs=1e-5)
    assert haversine_m(BETWEEN, meant) == pytest.approx(40, abs=1)


def test_a_point_by_a_tunnel_far_from_any_surface_road_means_the_tunnel(registry: ProviderRegistry) -> None:
    assert valhalla(registry).surface_point("car", BY_THE_TUNNEL, 60.0) is None


def test_a_point_nearest_a_surface_road_is_left_alone(registry: ProviderRegistry) -> None:
    assert valhalla(registry).surface_point("car", LatLon(49.0001, 8.0075), 60.0) is None
    assert valhalla(registry).surface_point("car", LatLon(48.99, 8.0075), 60.0) is None, "no road at all"


@pytest.mark.parametrize("provider", ["osrm", "valhalla"])
def test_every_engine_routes_from_the_road_the_point_means(registry: ProviderRegistry, provider: str) -> None:
    """The answer's snapped distance is measured from the point the caller gave."""
    route = registry.providers[provider].route
    destination = LatLon(49.0 + 5 * LAT_STEP, 8.0 + 5 * LON_STEP)
    origin = route(RouteQuery(BETWEEN, destination)).origin
    assert origin.name == "Sued" and origin.distance_m == pytest.approx(40, abs=1)
    kept = route(RouteQuery(BY_THE_TUNNEL, destination)).origin
    assert kept.name == "Tunnel" and kept.distance_m == pytest.approx(5.6, abs=1)
