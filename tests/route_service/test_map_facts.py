"""What the roads cover, read at import without the road graph (route_service.importing.map_facts,
issue 56), on every shared extract and all of them as one map: the bounds hold every road, the
sample points are road nodes, the outline covers every road and ends near the last one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import osmium
import pytest
import shapely

from common.geo import METRES_PER_DEGREE
from route_service.dataset import Dataset
from route_service.diagnostics import MIN_AREA_SAMPLES
from route_service.importing import map_facts
from route_service.importing.importer import ImportResult
from route_service.importing.map_facts import CUT_NEAR_EDGE_DEG, is_road, read_coverage
from tests.conftest import CITIES, EVERY_MAP, SHARED_OSM

# How far past its last road the outline may end (m): the isochrones clipped to it must not run
# farther past the data (the graph's outline ran 700 m past Helsinki's west edge).
MOST_PAST_ROAD_M = 100.0


def road_lines(pbfs: list[Path]) -> list[np.ndarray]:
    """Every road of the maps as [lon, lat] rows, read as the importer reads them."""
    lines = []
    for pbf in pbfs:
        found = osmium.FileProcessor(str(pbf)).with_locations().with_filter(osmium.filter.KeyFilter("highway"))
        for way in found:
            if isinstance(way, osmium.osm.Way) and is_road(way.tags):
                points = [(n.lon, n.lat) for n in way.nodes if n.location.valid()]
                if len(points) >= 2:
                    lines.append(np.array(points))
    return lines


def metres(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances between [lon, lat] rows, flat-earth (they are at most a few hundred metres)."""
    scale = np.cos(np.radians(a[:, 1]))
    return np.hypot((a[:, 0] - b[:, 0]) * scale, a[:, 1] - b[:, 1]) * METRES_PER_DEGREE


@pytest.fixture(scope="module", params=EVERY_MAP)
def imported(
    request: pytest.FixtureRequest, city_maps: Callable[[str], ImportResult], shared_osm: Path
) -> tuple[str, Dataset, list[np.ndarray]]:
    result = city_maps(request.param)
    names = CITIES if request.param == "all" else (request.param,)
    roads = road_lines([shared_osm / f"{name}.osm.pbf" for name in names])
    return request.param, Dataset(result.hash, result.path, result.record), roads


def test_the_facts_are_the_imports_own_not_the_graphs(imported: tuple[str, Dataset, list[np.ndarray]]) -> None:
    _, dataset, _ = imported
    coverage = dataset.manifest["coverage"]
    assert dataset.bounds is not None and dataset.bounds.as_list() == coverage["bounds"]
    assert dataset.outline == coverage["outline"] and len(dataset.sample_points) == 64


def test_the_bounds_hold_every_road_and_touch_the_outermost(imported: tuple[str, Dataset, list[np.ndarray]]) -> None:
    _, dataset, roads = imported
    nodes = np.vstack(roads)
    assert dataset.bounds is not None
    min_lon, min_lat, max_lon, max_lat = dataset.bounds.as_list()
    assert (nodes[:, 0] >= min_lon).all() and (nodes[:, 0] <= max_lon).all()
    assert (nodes[:, 1] >= min_lat).all() and (nodes[:, 1] <= max_lat).all()
    assert np.allclose([min_lon, min_lat, max_lon, max_lat], [*nodes.min(axis=0), *nodes.max(axis=0)], atol=2e-6)


def test_the_sample_points_are_road_nodes_spread_over_the_map(
    imported: tuple[str, Dataset, list[np.ndarray]],
) -> None:
    name, dataset, roads = imported
    nodes = {(round(float(lon), 6), round(float(lat), 6)) for lon, lat in np.vstack(roads)}
    points = [(p.lon, p.lat) for p in dataset.sample_points]
    assert len(set(points)) == 64 and set(points) <= nodes
    if name == "all":  # every extract holds enough of them to find its main network by (diagnostics)
        for city in CITIES:
            own = np.vstack(road_lines([SHARED_OSM / f"{city}.osm.pbf"]))
            low, high = own.min(axis=0), own.max(axis=0)
            inside = [low[0] <= p.lon <= high[0] and low[1] <= p.lat <= high[1] for p in dataset.sample_points]
            assert sum(inside) >= MIN_AREA_SAMPLES, city


def test_the_outline_covers_every_road_and_ends_near_the_last_one(
    imported: tuple[str, Dataset, list[np.ndarray]],
) -> None:
    _, dataset, roads = imported
    outline = shapely.geometry.shape(dataset.outline)
    assert outline.is_valid and outline.geom_type == "MultiPolygon"
    lines = np.array([shapely.LineString(road) for road in roads])
    uncovered = shapely.difference(shapely.union_all(lines), outline)
    assert uncovered.length * METRES_PER_DEGREE < 1.0, "every road lies inside the outline"
    corners = shapely.get_coordinates(outline.boundary)
    nearest = shapely.STRtree(lines).nearest(shapely.points(corners))
    on_road = shapely.get_coordinates(shapely.shortest_line(lines[nearest], shapely.points(corners)))[::2]
    past = metres(corners, on_road)
    assert past.max() <= MOST_PAST_ROAD_M, f"the outline ends {past.max():.0f} m past the nearest road"


@pytest.mark.parametrize("name", ["helsinki", "all"])
def test_the_outline_ends_by_helsinkis_westernmost_road(
    name: str, city_maps: Callable[[str], ImportResult], shared_osm: Path
) -> None:
    """The graph's outline, of 0.01° cells on the five extracts as one, ran 700 m past it."""
    result = city_maps(name)
    outline = shapely.geometry.shape(Dataset(result.hash, result.path, result.record).outline)
    helsinki = np.vstack(road_lines([shared_osm / "helsinki.osm.pbf"]))
    west = helsinki[helsinki[:, 0].argmin()]
    part = next(p for p in outline.geoms if p.intersects(shapely.Point(west)))
    edge = np.array([[part.bounds[0], west[1]]])
    assert 0 < metres(edge, west[None, :])[0] <= MOST_PAST_ROAD_M


def test_a_dataset_reads_its_facts_from_its_coverage_only(tmp_path: Path) -> None:
    """A dataset's road graph (importer 7 and before) is no longer read (issue 56)."""
    facts = {"bounds": [1.0, 2.0, 3.0, 4.0], "sample_points": [[1.5, 2.5]], "outline": {"type": "MultiPolygon"}}
    new = Dataset("new", tmp_path, {"graph": {**facts, "bounds": [0.0, 0.0, 9.0, 9.0]}, "coverage": facts})
    assert new.bounds is not None and new.bounds.as_list() == facts["bounds"]
    assert [(p.lat, p.lon) for p in new.sample_points] == [(2.5, 1.5)] and new.outline == facts["outline"]
    old = Dataset("old", tmp_path, {"graph": {**facts, "nodes": 3}})
    assert old.bounds is None and old.outline is None


# What /v1/providers and /map may send of the outline (bytes of JSON): the whole one of the five
# shared extracts as one is 582 KB.
MOST_DRAWN_BYTES = 100_000


def test_the_drawn_outline_is_small_and_close_to_the_whole_one(
    imported: tuple[str, Dataset, list[np.ndarray]],
) -> None:
    _, dataset, _ = imported
    drawn = dataset.drawn_outline
    assert drawn is not None and len(orjson.dumps(drawn)) <= MOST_DRAWN_BYTES
    whole, shape = shapely.geometry.shape(dataset.outline), shapely.geometry.shape(drawn)
    assert shape.geom_type == "MultiPolygon"
    outside = shapely.make_valid(whole).difference(shapely.make_valid(shape).buffer(150 / METRES_PER_DEGREE))
    outside_m2 = outside.area * METRES_PER_DEGREE**2  # an upper bound (longitudes' degrees are shorter)
    assert outside_m2 < 1000, "no part of the whole outline 150 m outside the drawn one (but slivers of repair)"


def test_the_map_cuts_its_through_roads_at_its_edge(imported: tuple[str, Dataset, list[np.ndarray]]) -> None:
    """Every extract's box cuts main roads (each shared extract has at least 4 such ends); each
    cut lies on a road and near the outline's outer edge."""
    _, dataset, roads = imported
    cuts = dataset.cut_points
    assert cuts is not None and len(cuts) >= 4
    lines = shapely.union_all([shapely.LineString(road) for road in roads])
    points = shapely.points(cuts)
    assert shapely.dwithin(lines, points, 1e-6).all(), "a cut is a road's node"
    outline = shapely.geometry.shape(dataset.outline)
    edge = shapely.union_all([part.exterior for part in getattr(outline, "geoms", [outline])])
    assert shapely.dwithin(edge, points, CUT_NEAR_EDGE_DEG).all()


def test_a_map_past_the_most_cells_gets_coarser_cells_still_covering_every_road(
    shared_osm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outline's cells are bounded whatever the map's size (its union is superlinear: 746 k
    cells took 32 s on 10x Heidelberg): past MOST_CELLS each cell doubles, and the roads stay inside."""
    pbf = shared_osm / "heidelberg.osm.pbf"
    whole = read_coverage(pbf)
    monkeypatch.setattr(map_facts, "MOST_CELLS", whole["cells"] // 10)
    bounded = read_coverage(pbf)
    assert bounded["cells"] <= whole["cells"] // 10 and bounded["cell_deg"] >= 4 * whole["cell_deg"]
    lines = shapely.union_all([shapely.LineString(road) for road in road_lines([pbf])])
    assert shapely.difference(lines, shapely.geometry.shape(bounded["outline"])).length * METRES_PER_DEGREE < 1.0
