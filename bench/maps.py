"""Every shared extract, and all five imported together as one map, for the benchmark sections
that must hold on every map (matrix, dynamic costs, isochrone, match).

Each is imported once (OSRM car- and truck-fastest, Valhalla's tiles and the road graph) under var/bench-cache/maps/<name>;
a rerun with unchanged inputs and importer reuses it. `road_points` draws seeded random road
nodes of a map's main network, so every section measures the same kind of points.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.config import REPO_ROOT
from common.geo import LatLon
from common.vocabulary import VEHICLES
from route_service.dataset import Dataset, current_dataset
from route_service.graph_format import read_graph
from route_service.importing.importer import DEFAULT_OSRM_VEHICLES, Progress, import_maps, osrm_profiles_of
from route_service.providers.registry import ProviderRegistry

SHARED_OSM = REPO_ROOT.parent / "shared" / "osm"
CACHE_DIR = REPO_ROOT / "var" / "bench-cache" / "maps"
CITIES = ("heidelberg", "munich", "helsinki", "monaco", "andorra")
EVERY_MAP = (*CITIES, "all")


@dataclass(frozen=True)
class BenchMap:
    name: str
    dataset: Dataset
    registry: ProviderRegistry

    def road_points(self, count: int, seed: int) -> list[LatLon]:
        """`count` road nodes of the main car network, drawn at random (seeded)."""
        nodes = read_graph(self.dataset.path / "graph")
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(nodes["node_lat"]))
        diagnostics = self.registry.diagnostics
        assert diagnostics is not None
        references = diagnostics.references("car", "fastest")
        roads = diagnostics.roads
        chosen: list[LatLon] = []
        for first in range(0, len(order), 4 * count):
            batch = [
                LatLon(float(nodes["node_lat"][i]), float(nodes["node_lon"][i]))
                for i in order[first : first + 4 * count]
            ]
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
    # Valhalla and the graph): with its own vehicles only, every other vehicle's request would be
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
