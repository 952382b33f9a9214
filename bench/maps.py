"""Every shared extract, and all five imported together as one map, for the benchmark sections
that must hold on every map (matrix, dynamic costs, isochrone, match).

Each is imported once (OSRM car- and truck-fastest, Valhalla's tiles) under var/bench-cache/maps/<name>;
a rerun with unchanged inputs and importer reuses it. `road_points` draws seeded random road
nodes of a map's main network, so every section measures the same kind of points.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import osmium

from common.config import REPO_ROOT
from common.geo import LatLon
from common.vocabulary import VEHICLES
from route_service.dataset import Dataset, current_dataset
from route_service.importing.importer import DEFAULT_OSRM_VEHICLES, Progress, import_maps, osrm_profiles_of
from route_service.importing.map_facts import ROAD_HIGHWAYS
from route_service.providers.registry import ProviderRegistry

SHARED_OSM = REPO_ROOT.parent / "shared" / "osm"
CACHE_DIR = REPO_ROOT / "var" / "bench-cache" / "maps"
CITIES = ("heidelberg", "munich", "helsinki", "monaco", "andorra")
EVERY_MAP = (*CITIES, "all")


@cache
def road_nodes(pbfs: tuple[Path, ...]) -> np.ndarray:
    """(n, 2) lat, lon of every node of the files' roads (map_facts.ROAD_HIGHWAYS), each once,
    in the files' order."""
    seen: dict[int, tuple[float, float]] = {}
    for pbf in pbfs:
        for way in osmium.FileProcessor(str(pbf)).with_locations().with_filter(osmium.filter.KeyFilter("highway")):
            if isinstance(way, osmium.osm.Way) and way.tags.get("highway") in ROAD_HIGHWAYS:
                for node in way.nodes:
                    if node.location.valid():
                        seen.setdefault(node.ref, (node.lat, node.lon))
    return np.array(list(seen.values()), dtype=float).reshape(-1, 2)


def input_pbfs(dataset_dir: Path, record: dict[str, Any]) -> tuple[Path, ...]:
    """The OSM files a dataset was imported from: the shared extracts, or a file in `osm/`
    beside its maps directory (a made map's, tests.conftest)."""
    names = [str(i["name"]) for i in record["inputs"]]
    return tuple(SHARED_OSM / n if (SHARED_OSM / n).is_file() else dataset_dir.parents[1] / "osm" / n for n in names)


def dataset_road_nodes(dataset: Dataset) -> np.ndarray:
    """`road_nodes` of the files the dataset was imported from."""
    return road_nodes(input_pbfs(dataset.path, dataset.manifest))


@dataclass(frozen=True)
class BenchMap:
    name: str
    dataset: Dataset
    registry: ProviderRegistry

    def road_points(self, count: int, seed: int) -> list[LatLon]:
        """`count` road nodes of the main car network, drawn at random (seeded)."""
        nodes = dataset_road_nodes(self.dataset)
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(nodes))
        diagnostics = self.registry.diagnostics
        assert diagnostics is not None
        references = diagnostics.references("car", "fastest")
        roads = diagnostics.roads
        chosen: list[LatLon] = []
        for first in range(0, len(order), 4 * count):
            batch = [LatLon(float(nodes[i, 0]), float(nodes[i, 1])) for i in order[first : first + 4 * count]]
            near = [
                p for p in batch if (s := roads.nearest_road("car", "fastest", p)) is not None and s.distance_m < 10
            ]
            joined = roads.reachable("car", "fastest", near, references).any(axis=1)
            joined &= roads.reachable("car", "fastest", references, near).any(axis=0)
            chosen += [p for p, ok in zip(near, joined, strict=True) if ok]
            if len(chosen) >= count:
                return chosen[:count]
        return chosen


def map_dir(name: str) -> Path:
    """The map's directory (a route service's MAP_DIR), imported when missing."""
    inputs = [SHARED_OSM / f"{c}.osm.pbf" for c in (CITIES if name == "all" else (name,))]
    out = CACHE_DIR / name
    # OSRM's default build (car and truck fastest), serving every vehicle (the others from
    # Valhalla): with its own vehicles only, every other vehicle's request would be
    # timed as a quick 400.
    profiles = osrm_profiles_of(DEFAULT_OSRM_VEHICLES)
    import_maps(inputs, out, profiles=profiles, vehicles=",".join(VEHICLES), progress=Progress(emit=lambda _line: None))  # fmt: skip
    return out


def bench_map(name: str) -> BenchMap:
    dataset = current_dataset(map_dir(name))
    return BenchMap(name, dataset, ProviderRegistry.load(dataset))


def every_map() -> Iterator[BenchMap]:
    for name in EVERY_MAP:
        yield bench_map(name)
