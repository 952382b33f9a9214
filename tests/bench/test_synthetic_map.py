"""bench/synthetic_map.py: N copies of an extract side by side make a valid map in which
every copy routes exactly as the original does, and no object of one copy touches another."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import osmium
import pytest

from bench.synthetic_map import ID_STRIDE, main, objects, offsets, source_box
from common.geo import LatLon
from route_service.dataset import current_dataset
from route_service.importing.importer import Progress, import_maps
from route_service.model import RouteQuery
from route_service.providers.osrm_provider import OsrmProvider

COPIES = 3


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> Path:
    out = tmp_path_factory.mktemp("synthetic") / f"helsinki-{COPIES}.osm.pbf"
    assert main(["--copies", str(COPIES), "--source", "helsinki", "--out", str(out)]) == 0
    return out


def kinds(path: Path) -> Counter[str]:
    return Counter(o.type_str() for o in osmium.FileProcessor(str(path)))


def test_every_object_once_per_copy_with_its_own_ids(synthetic: Path, shared_osm: Path) -> None:
    source = kinds(shared_osm / "helsinki.osm.pbf")
    assert kinds(synthetic) == Counter({k: COPIES * v for k, v in source.items()})
    ids = [n.id for n in objects(synthetic, osmium.osm.Node)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids), "nodes sorted by id, each once"


def test_ways_refer_to_nodes_of_their_own_copy(synthetic: Path) -> None:
    for way in objects(synthetic, osmium.osm.Way):
        copy = way.id // ID_STRIDE
        assert all(n.ref // ID_STRIDE == copy for n in way.nodes)


def test_copies_lie_apart(synthetic: Path, shared_osm: Path) -> None:
    original = source_box([shared_osm / "helsinki.osm.pbf"])
    boxes: dict[int, list[float]] = {}
    for node in objects(synthetic, osmium.osm.Node):
        box = boxes.setdefault(node.id // ID_STRIDE, [180, 90, -180, -90])
        lon, lat = node.location.lon, node.location.lat
        box[:] = [min(box[0], lon), min(box[1], lat), max(box[2], lon), max(box[3], lat)]
    assert len(boxes) == COPIES
    width = original.max_lon - original.min_lon
    assert boxes[0][0] == pytest.approx(original.min_lon, abs=1e-6)
    assert boxes[1][0] - boxes[0][2] > 0.04 and boxes[1][2] - boxes[1][0] == pytest.approx(width, abs=1e-6)
    assert boxes[2][1] - boxes[0][3] > 0.04, "the third copy starts a second row"


def test_a_copy_routes_as_the_original(synthetic: Path, tmp_path: Path, shared_osm: Path) -> None:
    """A longitude shift is a rotation about the Earth's axis: the same streets, the same route."""
    result = import_maps(
        [synthetic], tmp_path / "maps", profiles=["car-fastest"], progress=Progress(emit=lambda _l: None)
    )
    dataset = current_dataset(result.path.parent)
    provider = OsrmProvider.load(dataset.path, dataset.manifest)
    dlon, dlat = offsets(COPIES, source_box([shared_osm / "helsinki.osm.pbf"]))[1]
    assert dlat == 0 and dlon > 0
    origin, destination = LatLon(60.1685, 24.9410), LatLon(60.1700, 24.9500)
    first = provider.route(RouteQuery(origin, destination, steps=False)).routes[0]
    moved = provider.route(
        RouteQuery(LatLon(origin.lat, origin.lon + dlon), LatLon(destination.lat, destination.lon + dlon), steps=False)
    ).routes[0]
    assert moved.distance_m == pytest.approx(first.distance_m, abs=1.0)
    assert moved.duration_s == pytest.approx(first.duration_s, abs=0.5)
