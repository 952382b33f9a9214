"""Each input's main network stays routable on a map of several extracts (route_service.importing.osrm_components):
the rule on made-up components, the files read from real extracts, and every shared city routing
on all five merged exactly as on its own map."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from common.geo import Bounds, LatLon
from route_service.dataset import Dataset
from route_service.importing.importer import ImportResult, inputs_cut_off
from route_service.importing.osrm_components import (
    SMALL_COMPONENT_SIZES,
    WHOLE_MAP,
    Components,
    input_extent,
    input_extents,
    read_components,
    tiny_main_networks,
)
from route_service.model import MatrixQuery
from route_service.providers.registry import ProviderRegistry
from tests.conftest import CITIES
from tests.route_service.osm_samples import dataset_road_nodes

NORTH = Bounds(min_lon=0.0, min_lat=10.0, max_lon=1.0, max_lat=11.0)
SOUTH = Bounds(min_lon=0.0, min_lat=0.0, max_lon=1.0, max_lat=1.0)


def made_up(rows: list[tuple[int, bool, float]]) -> Components:
    """(component, tiny, latitude) per edge-based node, every one at longitude 0.5."""
    return Components(
        component=np.array([r[0] for r in rows], dtype=np.uint32),
        tiny=np.array([r[1] for r in rows]),
        lat=np.array([r[2] for r in rows]),
        lon=np.full(len(rows), 0.5),
    )


def test_an_input_whose_largest_component_is_tiny_is_named() -> None:
    # North: component 7 (3 nodes, tiny) beside component 8 (1 node, large); south: 1 large.
    rows = [(7, True, 10.5)] * 3 + [(8, False, 10.5), (1, False, 0.5), (1, False, 0.5)]
    assert tiny_main_networks(made_up(rows), [SOUTH, NORTH]) == [1]


def test_a_tiny_fragment_beside_a_large_main_network_is_left_alone() -> None:
    rows = [(1, False, 0.5)] * 5 + [(2, True, 0.5)] * 2
    assert tiny_main_networks(made_up(rows), [SOUTH]) == []


def test_inputs_without_roads_or_extent_are_skipped() -> None:
    rows = [(1, True, 0.5)]
    assert tiny_main_networks(made_up(rows), [None, NORTH]) == []


def test_the_sizes_tried_fall_from_osrms_default() -> None:
    assert SMALL_COMPONENT_SIZES[0] == 1000
    assert list(SMALL_COMPONENT_SIZES) == sorted(SMALL_COMPONENT_SIZES, reverse=True)


def test_one_input_is_the_whole_map_without_reading_it(tmp_path: Path) -> None:
    assert input_extents([tmp_path / "not-read.osm.pbf"]) == [WHOLE_MAP]


def test_component_files_that_cannot_be_read_keep_osrms_choice(tmp_path: Path) -> None:
    """A truncated or foreign extract (another OSRM version) is no reason to fail an import:
    OSRM's tiny components stand, and the log says so."""
    base, log = tmp_path / "map.osrm", tmp_path / "import.log"
    for suffix in (".ebg_nodes", ".geometry", ".nbg_nodes"):
        Path(f"{base}{suffix}").write_bytes(b"not a tar archive")
    assert inputs_cut_off(base, [NORTH, SOUTH], log) == []
    assert "components not read" in log.read_text()
    assert inputs_cut_off(tmp_path / "missing.osrm", [NORTH], log) == []


@pytest.mark.parametrize("city", CITIES)
def test_an_inputs_extent_holds_its_roads(city: str, shared_osm: Path, city_maps: Callable[[str], ImportResult]) -> None:
    """A header box is used when it is one, else the nodes' extent (Heidelberg's header says a
    quarter of the world). Extracts keep whole ways, so some road nodes lie beyond the box the
    extract was cut with (a quarter of Munich's); the main network is found by the majority."""
    extent = input_extent(shared_osm / f"{city}.osm.pbf")
    assert extent is not None
    assert extent.max_lon - extent.min_lon < 2 and extent.max_lat - extent.min_lat < 2
    components = read_components(city_maps(city).path / "osrm" / "car-fastest" / "map.osrm")
    inside = (components.lat >= extent.min_lat) & (components.lat <= extent.max_lat)
    inside &= (components.lon >= extent.min_lon) & (components.lon <= extent.max_lon)
    assert inside.mean() > 0.6, "most of the extract's road nodes lie in the extent read"


def test_every_city_routes_on_all_five_merged_as_on_its_own_map(city_maps: Callable[[str], ImportResult]) -> None:
    """Before: central Helsinki's main network (~700 edge-based nodes) was tiny beside the others,
    and points off it (a one-way stub, a fragment) lost the route to it: 1342 of 10 000 cells of a
    100-stop matrix there had no route on the merged map. Points: random road nodes that route
    both ways on the city's own map."""
    merged = registry_of(city_maps("all"))
    for city in CITIES:
        own = registry_of(city_maps(city))
        points = routable_road_nodes(city_maps(city), own, count=40)
        query = MatrixQuery(points, points, "car", "fastest")
        together = merged.providers["osrm"].matrix
        assert together is not None
        found = np.asarray(together(query).durations_s, dtype=float)
        assert not np.isnan(found).any(), f"{city}: {int(np.isnan(found).sum())} routes missing on the merged map"
        np.testing.assert_allclose(found, own_durations(own, query), atol=0.5, err_msg=city)


def routable_road_nodes(result: ImportResult, registry: ProviderRegistry, count: int) -> list[LatLon]:
    nodes = dataset_road_nodes(result.record, result.path)
    rng = np.random.default_rng(20261126)
    chosen = rng.choice(len(nodes), size=10 * count, replace=False)
    candidates = [LatLon(float(nodes[i, 0]), float(nodes[i, 1])) for i in chosen]
    assert registry.diagnostics is not None
    roads = registry.diagnostics.roads
    points = [p for p in candidates if (s := roads.nearest_road("car", "fastest", p)) and s.distance_m < 10]
    points = points[: 3 * count]
    missing = np.isnan(own_durations(registry, MatrixQuery(points, points, "car", "fastest")))
    kept_index = list(range(len(points)))
    while missing[np.ix_(kept_index, kept_index)].any():  # drop the point missing the most routes
        sub = missing[np.ix_(kept_index, kept_index)]
        kept_index.pop(int(np.argmax(sub.sum(axis=0) + sub.sum(axis=1))))
    kept = [points[i] for i in kept_index][:count]
    assert len(kept) >= count // 2, "most road nodes route both ways on their own map"
    return kept


def own_durations(registry: ProviderRegistry, query: MatrixQuery) -> np.ndarray:
    matrix = registry.providers["osrm"].matrix
    assert matrix is not None
    return np.asarray(matrix(query).durations_s, dtype=float)


def registry_of(result: ImportResult) -> ProviderRegistry:
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
