"""Seeded stop-order instances on the shared OSM extracts, with their car road matrices (no HTTP).

    from bench.optimize_instances import instances
    for instance in instances(cities=["heidelberg"], sizes=[100], shapes=["round-trip"]):
        instance.durations  # n x n seconds, car fastest, computed by OSRM in this process

How stops are drawn, the same way on every extract:
- A uniform random point in the extract's extent (`extent`), snapped onto the nearest car road by OSRM Nearest; a point more than
  `SNAP_M` from any car road is dropped. Uniform points near roads give stops spread uniformly
  over the area the road network covers. The stop is the snapped point, so the service snaps
  it to the same place and computes the same matrix.
- Only the main strongly connected part of the car network: a stop must reach, and be reached
  from, an anchor stop in it (one-way islands, closed garages and fenced sites drop out), so
  every stop reaches every other.
- Stops at least `SPACING_M` apart (straight line): about one town-house front, so two stops are
  two doors, not one place written twice (near-duplicates make an instance artificially easy).
  15 m lets the small central extracts hold the sizes a dense delivery round has: at 50 m
  Munich held 374 places and central Helsinki 212 (so only 100 stops each); at 15 m they hold
  1594 and 922.
- Sizes an extract holds: a seeded draw of such places (until `2 * max(SIZES)` or until
  `JAMMED_AFTER` candidates in a row are too close to an earlier one) must find at least
  `CAPACITY_FACTOR` times the size, so that an instance is still a random choice among the
  places and not nearly all of them. `supported_sizes()` applies the rule.

The maps (route_service.importing.importer, car-fastest only), the per-extract facts (extent, anchor,
capacity) and each instance's stops and matrix are cached under
`var/bench-cache/optimize/`; an instance's key is city, extract hash, seed, size and shape, so a
second run (and the reference solvers' worker processes) read it back from disk. `DRAW_VERSION`
is part of every key.
"""

from __future__ import annotations

import json
import math
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import osmium
import osrm
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from common.config import REPO_ROOT
from common.geo import LatLon
from route_service.dataset import current_dataset
from route_service.importing.importer import Progress, file_sha256, import_maps
from route_service.model import MatrixQuery
from route_service.providers.osrm_provider import OsrmProvider

OSM_DIR = REPO_ROOT.parent / "shared" / "osm"
CACHE_DIR = REPO_ROOT / "var" / "bench-cache" / "optimize"
CITIES = ("heidelberg", "munich", "helsinki", "andorra", "monaco")
SIZES = (25, 50, 100, 200, 500, 1000)
OPEN, DESTINATION, ROUND_TRIP = "open", "destination", "round-trip"
SHAPES = (OPEN, DESTINATION, ROUND_TRIP)
SEED = 11
PROFILE = "car-fastest"  # the service's default vehicle and type
SNAP_M = 50.0
SPACING_M = 15.0
CAPACITY_FACTOR = 1.5
JAMMED_AFTER = 2000
ANCHOR_PROBES = 300  # enough for the main part to be the largest group among them
DRAW_BATCH = 500  # uniform points per Nearest round; candidates beyond the need are dropped
MATRIX_LOCATIONS = 2000  # per Table call here, as the service's matrices (2 x 1000): the binding's tree stays small
# In every cache key: raise it when the drawing rules above change, so no stale instance (and
# no reference computed on one) is read back.
DRAW_VERSION = 2  # 2: 15 m spacing, capacity factor 1.5 (1: 50 m, 2)


@dataclass(frozen=True)
class Instance:
    city: str
    size: int
    shape: str  # OPEN | DESTINATION | ROUND_TRIP
    durations: np.ndarray  # n x n seconds, row: from, column: to
    start: int
    end: int | None  # None: open tour; == start: round trip
    coordinates: list[tuple[float, float]]  # (lat, lon) per stop, on the road
    key: str  # the cache key: city, extract hash, seed, size, shape
    dataset: str  # the route_service dataset hash the matrix came from


# ---------------------------------------------------------------- the public entry points


def instances(
    cities: Iterable[str] = CITIES,
    sizes: Iterable[int] = SIZES,
    shapes: Iterable[str] = SHAPES,
    seed: int = SEED,
) -> Iterator[Instance]:
    """Every (city, size, shape) the city holds (see `supported_sizes`), city by city."""
    for city in cities:
        held = supported_sizes(city, seed)
        for size in sizes:
            if size not in held:
                continue
            for shape in shapes:
                yield instance(city, size, shape, seed)


def instance(city: str, size: int, shape: str, seed: int = SEED) -> Instance:
    """One instance, from the cache or drawn and cached (no capacity check: tests and the
    fairness bench ask for sizes outside SIZES)."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    key = instance_key(city, size, shape, seed)
    cached = load_instance(key)
    if cached is not None:
        return cached
    made = draw_instance(network(city, seed), city, size, shape, seed, key)
    save_instance(made)
    return made


def supported_sizes(city: str, seed: int = SEED, sizes: Iterable[int] = SIZES) -> list[int]:
    places = capacity(city, seed)
    return [size for size in sizes if CAPACITY_FACTOR * size <= places]


def capacity(city: str, seed: int = SEED) -> int:
    """Places found by the capacity draw (at most 2 * max(SIZES): enough to hold every size)."""
    return int(extract_facts(city, seed)["capacity"])


# ---------------------------------------------------------------- cache keys and files


def pbf_path(city: str) -> Path:
    return OSM_DIR / f"{city}.osm.pbf"


@cache
def extract_hash(city: str) -> str:
    return file_sha256(pbf_path(city))[:12]


def instance_key(city: str, size: int, shape: str, seed: int = SEED) -> str:
    return f"{city}-{extract_hash(city)}-d{DRAW_VERSION}-s{seed}-n{size}-{shape}"


def instance_file(key: str) -> Path:
    return CACHE_DIR / "instances" / f"{key}.npz"


def write_atomic(path: Path, data: bytes) -> None:
    """Readers (the other reference worker, a second bench run) never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def save_instance(made: Instance) -> None:
    path = instance_file(made.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{made.key}.{os.getpid()}.tmp.npz")
    np.savez_compressed(
        tmp,
        durations=made.durations,
        coordinates=np.array(made.coordinates, dtype=np.float64),
        ends=np.array([made.start, -1 if made.end is None else made.end]),
        meta=np.array(json.dumps({"city": made.city, "size": made.size, "shape": made.shape, "dataset": made.dataset})),
    )
    os.replace(tmp, path)


def load_instance(key: str) -> Instance | None:
    path = instance_file(key)
    if not path.exists():
        return None
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        start, end = (int(v) for v in data["ends"])
        coordinates = [(float(lat), float(lon)) for lat, lon in data["coordinates"]]
        return Instance(
            meta["city"], int(meta["size"]), meta["shape"], np.array(data["durations"], dtype=np.float64),
            start, None if end < 0 else end, coordinates, key, meta["dataset"],
        )  # fmt: skip


# ---------------------------------------------------------------- the road network of one extract


@dataclass
class RoadNetwork:
    """The car-fastest OSRM dataset of one extract, as route_service imports and loads it."""

    provider: OsrmProvider
    dataset: str
    box: tuple[float, float, float, float]  # lat min, lat max, lon min, lon max
    anchor: LatLon | None = None

    def snap(self, lat: float, lon: float) -> LatLon | None:
        """The nearest point on a car road, or None beyond SNAP_M. The provider has no Nearest
        call of its own; its engine is used rather than loading the dataset a second time."""
        params = osrm.NearestParameters(coordinates=[(lon, lat)], generate_hints=False)
        # No radius: OSRM then stops at the first segment; with one it keeps searching
        # (measured 11 ms instead of 0.08 ms a call).
        waypoint = self.provider._engine(PROFILE).Nearest(params)["waypoints"][0]
        if float(waypoint["distance"]) > SNAP_M:
            return None
        lon_s, lat_s = waypoint["location"]
        return LatLon(float(lat_s), float(lon_s))

    def table(self, sources: list[LatLon], destinations: list[LatLon]) -> np.ndarray:
        """Durations in seconds as the route service computes them; NaN where no route."""
        durations = self.provider.matrix(MatrixQuery(sources, destinations, "car", "fastest")).durations_s
        assert durations is not None  # asked for by default
        if isinstance(durations, np.ndarray):  # the provider's own form: NaN where no route
            return np.asarray(durations, dtype=np.float64).reshape(len(sources), len(destinations))
        rows = [[math.nan if v is None else float(v) for v in row] for row in durations]  # JSON-like form
        return np.array(rows, dtype=np.float64).reshape(len(sources), len(destinations))

    def in_main_part(self, points: list[LatLon]) -> list[bool]:
        """Whether each point reaches and is reached from the anchor (in chunks of at most
        MATRIX_LOCATIONS locations a call)."""
        assert self.anchor is not None
        found: list[bool] = []
        step = MATRIX_LOCATIONS - 1
        for first in range(0, len(points), step):
            chunk = points[first : first + step]
            there = self.table([self.anchor], chunk)[0]
            back = self.table(chunk, [self.anchor])[:, 0]
            found.extend(bool(ok) for ok in ~(np.isnan(there) | np.isnan(back)))
        return found


@cache
def network(city: str, seed: int = SEED) -> RoadNetwork:
    """Imports the extract (a no-op when its dataset is in the cache), loads it, and measures
    the extract's facts the first time."""
    maps = CACHE_DIR / "maps" / city
    import_maps([pbf_path(city)], maps, profiles=[PROFILE], progress=Progress(emit=lambda _line: None))
    dataset = current_dataset(maps)
    provider = OsrmProvider.load(dataset.path, dataset.manifest)
    path = facts_file(city, seed)
    if not path.exists():
        net = RoadNetwork(provider, dataset.hash, extent(city))
        write_atomic(path, json.dumps(measure_facts(net, city, seed), indent=2).encode())
    facts = json.loads(path.read_text())
    lat0, lat1, lon0, lon1 = (float(v) for v in facts["box"])
    return RoadNetwork(provider, dataset.hash, (lat0, lat1, lon0, lon1), LatLon(*facts["anchor"]))


def facts_file(city: str, seed: int) -> Path:
    return CACHE_DIR / "extracts" / f"{city}-{extract_hash(city)}-d{DRAW_VERSION}-s{seed}.json"


def extract_facts(city: str, seed: int = SEED) -> dict[str, Any]:
    """Extent, anchor and capacity of an extract, cached: the capacity draw takes seconds."""
    path = facts_file(city, seed)
    if not path.exists():
        network(city, seed)
    facts: dict[str, Any] = json.loads(path.read_text())
    return facts


def extent(city: str) -> tuple[float, float, float, float]:
    """Where the extract has data: its header box (Munich's nodes reach 6-10 km beyond it, the
    far ends of ways that cross its edge) cut to its nodes' extent (Heidelberg's header box
    is the whole world)."""
    lats, lons = [], []
    for node in osmium.FileProcessor(str(pbf_path(city)), osmium.osm.NODE):
        if isinstance(node, osmium.osm.Node):  # always, with the NODE filter; for the type checker
            lats.append(node.location.lat)
            lons.append(node.location.lon)
    reader = osmium.io.Reader(str(pbf_path(city)), osmium.osm.osm_entity_bits.NOTHING)
    box = reader.header().box()
    reader.close()
    if not box.valid():
        return min(lats), max(lats), min(lons), max(lons)
    low, high = box.bottom_left, box.top_right
    return max(min(lats), low.lat), min(max(lats), high.lat), max(min(lons), low.lon), min(max(lons), high.lon)


def measure_facts(net: RoadNetwork, city: str, seed: int) -> dict[str, Any]:
    net.anchor = find_anchor(net, rng_for(seed, city, "anchor"))
    places = spaced_points(road_points(net, rng_for(seed, city, "capacity")), 2 * max(SIZES), jam=True)
    return {"box": list(net.box), "anchor": [net.anchor.lat, net.anchor.lon], "capacity": len(places)}


def find_anchor(net: RoadNetwork, rng: np.random.Generator) -> LatLon:
    """A road point in the main part: the first of the largest mutually reachable group of
    ANCHOR_PROBES random road points."""
    probes = list(snapped_points(net, rng, ANCHOR_PROBES))
    keep = largest_group(net.table(probes, probes))
    return probes[keep[0]]


def largest_group(durations: np.ndarray) -> list[int]:
    """Indexes of the largest strongly connected group (every pair has a route both ways)."""
    reachable = csr_matrix(~np.isnan(durations))
    _count, labels = connected_components(reachable, directed=True, connection="strong")
    biggest = int(np.bincount(labels).argmax())
    return [int(i) for i in np.flatnonzero(labels == biggest)]


# ---------------------------------------------------------------- drawing stops


def rng_for(seed: int, city: str, *parts: object) -> np.random.Generator:
    """A generator per purpose, so that adding a size or shape changes no other instance."""
    words = [seed, zlib.crc32(city.encode()), *(zlib.crc32(str(p).encode()) for p in parts)]
    return np.random.default_rng(words)


def snapped_points(net: RoadNetwork, rng: np.random.Generator, count: int) -> Iterator[LatLon]:
    """Uniform points in the extent, snapped; `count` of them (off-road draws do not count)."""
    lat0, lat1, lon0, lon1 = net.box
    found = 0
    while found < count:
        point = net.snap(float(rng.uniform(lat0, lat1)), float(rng.uniform(lon0, lon1)))
        if point is not None:
            found += 1
            yield point


def road_points(net: RoadNetwork, rng: np.random.Generator) -> Iterator[LatLon]:
    """An endless stream of snapped points in the main part, checked DRAW_BATCH at a time."""
    while True:
        batch = list(snapped_points(net, rng, DRAW_BATCH))
        yield from (p for p, ok in zip(batch, net.in_main_part(batch), strict=True) if ok)


class SpacedSet:
    """Points at least SPACING_M apart, with a grid of SPACING_M cells for the check."""

    def __init__(self, lat0: float) -> None:
        self.m_per_lon = 111_320.0 * math.cos(math.radians(lat0))
        self.points: list[LatLon] = []
        self.cells: dict[tuple[int, int], list[tuple[float, float]]] = {}

    def xy(self, p: LatLon) -> tuple[float, float]:
        return p.lon * self.m_per_lon, p.lat * 110_574.0

    def add(self, p: LatLon) -> bool:
        x, y = self.xy(p)
        cx, cy = int(x // SPACING_M), int(y // SPACING_M)
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for ox, oy in self.cells.get((cx + dx, cy + dy), ()):
                    if math.hypot(x - ox, y - oy) < SPACING_M:
                        return False
        self.cells.setdefault((cx, cy), []).append((x, y))
        self.points.append(p)
        return True


def spaced_points(
    stream: Iterator[LatLon], count: int, *, jam: bool = False, taken: Sequence[LatLon] = ()
) -> list[LatLon]:
    """Up to `count` points of the stream at least SPACING_M from each other and from `taken`.
    `jam`: stop early after JAMMED_AFTER refusals in a row (the capacity draw); otherwise a
    jammed extract raises instead of looping forever."""
    spaced: SpacedSet | None = None
    refused = 0
    for point in stream:
        if spaced is None:
            spaced = SpacedSet(point.lat)
            for earlier in taken:
                spaced.add(earlier)
        if spaced.add(point):
            refused = 0
            if len(spaced.points) - len(taken) >= count:
                break
        else:
            refused += 1
            if refused >= JAMMED_AFTER:
                if jam:
                    break
                raise RuntimeError(f"only {len(spaced.points)} places at least {SPACING_M:g} m apart")
    return [] if spaced is None else spaced.points[len(taken) :]


def draw_instance(net: RoadNetwork, city: str, size: int, shape: str, seed: int, key: str) -> Instance:
    """Stops from the road stream until `size` of them reach each other in the full matrix
    (the anchor check makes a miss rare; a stop that still misses is replaced)."""
    stream = road_points(net, rng_for(seed, city, size, shape))
    points: list[LatLon] = []
    while True:
        points += spaced_points(stream, size - len(points), taken=points)
        durations = net.table(points, points)
        keep = largest_group(durations)
        if len(keep) == size:
            break
        points = [points[i] for i in keep]
    start, end = 0, {OPEN: None, DESTINATION: size - 1, ROUND_TRIP: 0}[shape]
    coordinates = [(p.lat, p.lon) for p in points]
    return Instance(city, size, shape, durations, start, end, coordinates, key, net.dataset)
