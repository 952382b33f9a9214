"""What the map's roads cover, read from the OSM extract at import without any road graph (issue
56): the roads' bounds, road nodes drawn at random (route_service.diagnostics takes the main
network's reference points among them) and the outline of where the map has roads (isochrones'
data mask, /v1/providers, the /map page). The manifest keeps them as `coverage`
(route_service.dataset).

Memory is bounded whatever the map's size: the sample comes from a reservoir of SAMPLE_POINTS
per 1° block, the outline from a set of grid cells (8 bytes each) that the roads pass through,
at most MOST_CELLS.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import osmium
import shapely
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

from common.geo import METRES_PER_DEGREE

# The ways that are roads: every highway class some vehicle of ours may use (car, truck,
# bicycle, pedestrian, and motor vehicles in emergencies), as the road graph's tag policy had them.
ROAD_HIGHWAYS = frozenset({
    "motorway", "motorway_link", "trunk", "trunk_link", "primary", "primary_link", "secondary", "secondary_link",
    "tertiary", "tertiary_link", "unclassified", "residential", "living_street", "service", "road", "track",
    "path", "cycleway", "footway", "pedestrian", "bridleway", "steps", "corridor", "platform", "access_ramp",
    "busway", "bus_guideway",
})  # fmt: skip
SAMPLE_POINTS = 64
# Each group of touching 1° blocks with roads gets at least this many of the sample points (while
# 64 go round), the rest go as the road nodes lie: drawn from the whole map, the five extracts as one put 1 of 64
# on central Helsinki (2.5 % of the road nodes), and diagnostics need 2 on an area to find its
# main network (route_service.diagnostics.MIN_AREA_SAMPLES); the graph's draw had put 4 there.
LEAST_PER_AREA = 4
# The outline's cell: 0.0005° a side, 56 m of latitude by 28-41 m of longitude on the shared
# extracts (60.2° to 42.5° N), so the outline ends at most a cell's diagonal (63-69 m there, 79 m
# anywhere) past the last road. The graph's cell grew with the map's box: 0.005° doubled until
# 20 000 cells, 0.01° (1.1 km) on the five extracts as one, 700 m past Helsinki's west edge.
CELL_DEG = 0.0005
# Past this many cells the cells double in size until they fit, so the outline's work is bounded
# whatever the map's size (its union is superlinear: on 10x Heidelberg 91 190 cells took 0.5 s,
# 289 775 5.5 s, 745 607 32 s). The five extracts as one have 121 472 and keep 0.0005°; a
# country gets coarser cells (Germany ~0.008°, 900 m).
MOST_CELLS = 300_000
MERGE_EVERY = 500_000  # cell keys gathered before they are merged into the set
BATCH_POINTS = 200_000  # road nodes gathered before they are reckoned (3.2 MB of coordinates)
# Holes in the outline smaller than this are filled: a park or a block without a road is still
# inside the map's data; a lake or a forest of a square kilometre stays out, as it did.
SMALLEST_HOLE_M2 = 1_000_000.0
OUTLINE_MARGIN = 0.25
# The map cuts a road where a through road (these classes) ends at a dead end near the data's
# outer edge: the shared extracts keep whole ways, so a road leaving the area ends at its last
# node outside (a road may also end inside, at a way left out: a construction site). Near: within
# CUT_NEAR_EDGE_DEG of the outline's outer rings, its holes ignored (lakes and fields between
# roads are no edge), as the road graph's two 0.002° mask cells.
THROUGH_HIGHWAYS = frozenset({
    "motorway", "motorway_link", "trunk", "trunk_link", "primary", "primary_link", "secondary", "secondary_link",
    "tertiary", "tertiary_link",
})  # fmt: skip
CUT_NEAR_EDGE_DEG = 0.004
ROW_BITS = 21  # a cell key: column << ROW_BITS | row (360° / 0.0005° = 720 000 columns < 2**20)


class CoverageReader:
    """The roads' bounds, sample and cells, read way by way (node locations from osmium's index)
    and reckoned BATCH_POINTS at a time: numpy per batch, not per way (per way, 10x Heidelberg
    took 40 s)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)  # seeded: the same map, the same sample
        self.nodes_seen = 0
        self.blocks: dict[tuple[int, int], Reservoir] = {}
        self.low = np.array([math.inf, math.inf])
        self.high = np.array([-math.inf, -math.inf])
        self.cell_deg = CELL_DEG
        self.cells = np.zeros(0, dtype=np.int64)
        self.pending: list[np.ndarray] = []
        self.pending_count = 0
        self.through_ends: dict[int, tuple[float, float]] = {}  # node id → (lon, lat)
        self.batch: list[float] = []  # lon, lat, lon, lat, … of the batch's ways, one after the other
        self.lengths: list[int] = []  # the batch's ways' node counts

    def read(self, pbf: Path) -> None:
        for way in road_ways(pbf):
            self.way(way)
        self.reckon()

    def way(self, way: Any) -> None:
        located = [node for node in way.nodes if node.location.valid()]
        if len(located) < 2:
            return  # a way cut at the extract's edge down to one node is no road
        for node in located:
            self.batch += (node.lon, node.lat)
        self.lengths.append(len(located))
        if way.tags.get("highway") in THROUGH_HIGHWAYS:
            # its first and last nodes on the map (an extract cut by a box ends a way at its last
            # node inside: Helsinki's)
            for node in (located[0], located[-1]):
                self.through_ends[node.ref] = (node.lon, node.lat)
        if len(self.batch) >= 2 * BATCH_POINTS:
            self.reckon()

    def reckon(self) -> None:
        """The batch's ways into the bounds, the sample and the cells."""
        if not self.lengths:
            return
        points = np.array(self.batch).reshape(-1, 2)
        lengths = np.array(self.lengths)
        self.batch, self.lengths = [], []
        self.low, self.high = np.minimum(self.low, points.min(axis=0)), np.maximum(self.high, points.max(axis=0))
        self.nodes_seen += len(points)
        starts = np.cumsum(lengths) - lengths
        # Inner nodes only: a way's ends are mostly junctions, where OSRM's route and its table may
        # snap onto different edges (a Helsinki reference on Eteläranta was reached by the table,
        # not by the route).
        inner = np.ones(len(points), dtype=bool)
        inner[starts] = inner[starts + lengths - 1] = False
        self.draw(points[inner])
        joins = np.zeros(len(points) - 1, dtype=bool)  # segment i ends a way and starts the next: none
        joins[starts[1:] - 1] = True
        keys = np.unique(cell_keys(densified(points, self.cell_deg / 4, joins), self.cell_deg))
        self.pending.append(keys)
        self.pending_count += len(keys)
        if self.pending_count >= MERGE_EVERY:
            self.merge()

    def draw(self, points: np.ndarray) -> None:
        """Each point into its 1° block's reservoir, in the file's order."""
        blocks = np.floor(points).astype(np.int64)
        found, which = np.unique(blocks, axis=0, return_inverse=True)
        for index, block in enumerate(found):
            key = (int(block[0]), int(block[1]))
            self.blocks.setdefault(key, Reservoir()).draw(points[which.ravel() == index], self.rng)

    def merge(self) -> None:
        self.cells = np.unique(np.concatenate([self.cells, *self.pending]))
        self.pending, self.pending_count = [], 0
        while len(self.cells) > MOST_CELLS:
            column, row = self.cells >> ROW_BITS, self.cells & ((1 << ROW_BITS) - 1)
            self.cells = np.unique((column >> 1) << ROW_BITS | (row >> 1))
            self.cell_deg *= 2

    def coverage(self) -> dict[str, Any]:
        self.merge()
        if not self.nodes_seen:
            return {"bounds": None, "sample_points": [], "outline": None, "cell_deg": self.cell_deg, "cells": 0}
        bounds = [*(math.floor(v * 1e6) / 1e6 for v in self.low), *(math.ceil(v * 1e6) / 1e6 for v in self.high)]
        return {
            "bounds": bounds,  # [min_lon, min_lat, max_lon, max_lat], rounded outwards
            "sample_points": [[round(float(lon), 6), round(float(lat), 6)] for lon, lat in spread(self.blocks)],
            "outline": outline(self.cells, self.cell_deg),
            "cell_deg": self.cell_deg,
            "cells": len(self.cells),
            "road_nodes": self.nodes_seen,
        }


class Reservoir:
    """SAMPLE_POINTS points drawn at random from those seen (algorithm R), in the file's order."""

    def __init__(self) -> None:
        self.seen = 0
        self.points = np.zeros((0, 2))

    def draw(self, points: np.ndarray, rng: np.random.Generator) -> None:
        fill = min(len(points), SAMPLE_POINTS - len(self.points))
        self.points = np.vstack([self.points, points[:fill]])
        rest = points[fill:]
        slots = (rng.random(len(rest)) * (self.seen + fill + np.arange(1, len(rest) + 1))).astype(np.int64)
        for index in np.flatnonzero(slots < SAMPLE_POINTS):  # in order: a later point replaces an earlier
            self.points[slots[index]] = rest[index]
        self.seen += len(points)


def spread(blocks: dict[tuple[int, int], Reservoir], count: int = SAMPLE_POINTS) -> np.ndarray:
    """`count` points of the blocks' reservoirs: LEAST_PER_AREA for each group of touching blocks
    (an extract, a city), the rest as the road nodes lie; within a group, as its blocks' nodes lie
    (a minimum per block put 4 samples on Heidelberg's sparse eastern fringe, where bicycles
    found no route between the farthest references)."""
    keys = sorted(blocks)
    if not keys:
        return np.zeros((0, 2))
    seen = np.array([blocks[key].seen for key in keys], dtype=float)
    held = np.array([len(blocks[key].points) for key in keys])
    group = block_groups(keys)
    labels = np.unique(group)
    group_seen = np.array([seen[group == g].sum() for g in labels])
    group_held = np.array([held[group == g].sum() for g in labels])
    quota = np.zeros(len(keys), dtype=np.int64)
    for label, share in zip(labels, apportion(group_seen, group_held, count, LEAST_PER_AREA), strict=True):
        members = np.flatnonzero(group == label)
        quota[members] = apportion(seen[members], held[members], int(share), 0)
    return np.vstack([blocks[key].points[:q] for key, q in zip(keys, quota, strict=True)])


def apportion(seen: np.ndarray, held: np.ndarray, count: int, least: int) -> np.ndarray:
    """How many of `count` each reservoir gives: `least` each (fewer when they are too many), the
    rest as their points were seen (largest remainders), never more than one holds."""
    quota = np.minimum(held, min(least, count // len(seen)))
    share = (count - quota.sum()) * seen / seen.sum()
    quota = np.minimum(held, quota + np.floor(share).astype(np.int64))
    for index in np.argsort(-(share % 1), kind="stable"):
        if quota.sum() >= count:
            break
        quota[index] = min(held[index], quota[index] + 1)
    return quota


def block_groups(keys: list[tuple[int, int]]) -> np.ndarray:
    """A label per block: blocks that touch (corners too) share one; each its own past
    SAMPLE_POINTS blocks, where no group could get its least share anyway."""
    if len(keys) > SAMPLE_POINTS:
        return np.arange(len(keys))
    corners = np.array(keys)
    touching = (np.abs(corners[:, None, :] - corners[None, :, :]) <= 1).all(axis=2)
    return np.asarray(connected_components(csr_array(touching), directed=False)[1])


def is_road(tags: Any) -> bool:
    return tags.get("highway") in ROAD_HIGHWAYS and tags.get("area") != "yes"


def road_ways(pbf: Path) -> Iterator[Any]:
    """The file's roads with their nodes' locations; osmium's filter in C++ hands Python only the
    ways tagged highway."""
    ways = osmium.FileProcessor(str(pbf), osmium.osm.NODE | osmium.osm.WAY).with_locations()
    for way in ways.with_filter(osmium.filter.KeyFilter("highway")):
        if isinstance(way, osmium.osm.Way) and is_road(way.tags):
            yield way


def densified(points: np.ndarray, step: float, joins: np.ndarray | None = None) -> np.ndarray:
    """The polyline's points with more between them, no two farther apart than `step` degrees
    in either axis: every cell a segment crosses holds one of them (but for corners it cuts
    by less than `step`). `joins` marks segments that are none (one way's end to the next's
    start): nothing is put on them."""
    deltas = np.diff(points, axis=0)
    if joins is not None:
        deltas[joins] = 0.0
    counts = np.maximum(1, np.ceil(np.abs(deltas).max(axis=1) / step).astype(np.int64))
    starts = np.repeat(points[:-1], counts, axis=0)
    firsts = np.repeat(np.cumsum(counts) - counts, counts)
    offsets = (np.arange(len(starts)) - firsts) / np.repeat(counts, counts)
    return np.vstack([starts + np.repeat(deltas, counts, axis=0) * offsets[:, None], points[-1:]])


def cell_keys(points: np.ndarray, cell_deg: float) -> np.ndarray:
    column = np.floor((points[:, 0] + 180.0) / cell_deg).astype(np.int64)
    row = np.floor((points[:, 1] + 90.0) / cell_deg).astype(np.int64)
    return column << ROW_BITS | row


def outline(cells: np.ndarray, cell_deg: float) -> dict[str, Any]:
    """The cells as a GeoJSON MultiPolygon: each row's runs of neighbouring cells joined into
    boxes, the boxes into polygons, small holes filled. Separate regions stay apart."""
    column, row = cells >> ROW_BITS, cells & ((1 << ROW_BITS) - 1)
    order = np.lexsort((column, row))
    column, row = column[order], row[order]
    breaks = np.flatnonzero((np.diff(row) != 0) | (np.diff(column) != 1)) + 1
    first, last = np.r_[0, breaks], np.r_[breaks, len(cells)] - 1
    west, east = column[first] * cell_deg - 180.0, (column[last] + 1) * cell_deg - 180.0
    south = row[first] * cell_deg - 90.0
    # Each box a little larger (OUTLINE_MARGIN of a cell all round): the parts that touch at a
    # corner only (a diagonal road's cells) join, and the staircase of cells can be simplified by
    # as much without uncovering a road.
    margin = cell_deg * OUTLINE_MARGIN
    boxes = shapely.box(west - margin, south - margin, east + margin, south + cell_deg + margin)
    # Part by part: the whole at once took 76 s on 10x Heidelberg, its 38 parts 5.8 s.
    shape = shapely.union_all(shapely.simplify(shapely.get_parts(shapely.union_all(boxes)), margin))
    # Small holes filled, then joined again: a part inside a filled hole becomes one with it.
    filled = [shapely.Polygon(p.exterior, [h for h in p.interiors if hole_m2(h) >= SMALLEST_HOLE_M2])
              for p in getattr(shape, "geoms", [shape])]  # fmt: skip
    joined = shapely.union_all(filled)
    return {
        "type": "MultiPolygon",
        "coordinates": [[ring_of(p.exterior), *map(ring_of, p.interiors)] for p in getattr(joined, "geoms", [joined])],
    }


def ring_of(ring: Any) -> list[list[float]]:
    return [[round(x, 6), round(y, 6)] for x, y in ring.coords]


def hole_m2(ring: Any) -> float:
    area = shapely.Polygon(ring)
    return float(area.area * METRES_PER_DEGREE**2 * math.cos(math.radians(area.centroid.y)))


def cut_points(pbf: Path, ends: dict[int, tuple[float, float]], outline_json: dict[str, Any] | None) -> list[list[float]]:
    """[lon, lat] of the through roads' dead ends near the outline's outer edge (a second pass:
    its memory is one count a through road's end)."""
    if not ends or outline_json is None:
        return []
    degree = dict.fromkeys(ends, 0)  # how many times the roads pass each end (1: a dead end)
    for way in road_ways(pbf):
        located = [node.ref for node in way.nodes if node.location.valid()]
        if len(located) >= 2:  # a way the extract cut down to one node joins nothing (CoverageReader.way)
            for ref in located:
                if ref in degree:
                    degree[ref] += 1
    dead = np.array([ends[ref] for ref, count in degree.items() if count == 1]).reshape(-1, 2)
    edge = shapely.union_all([shapely.LinearRing(polygon[0]) for polygon in outline_json["coordinates"]])
    near = shapely.dwithin(edge, shapely.points(dead), CUT_NEAR_EDGE_DEG) if len(dead) else np.zeros(0, dtype=bool)
    return [[round(float(lon), 6), round(float(lat), 6)] for lon, lat in dead[near]]


def read_coverage(pbf: Path) -> dict[str, Any]:
    """The map's coverage (bounds, sample points, outline, where it cuts roads) from its OSM file."""
    reader = CoverageReader()
    reader.read(pbf)
    coverage = reader.coverage()
    coverage["cut_points"] = cut_points(pbf, reader.through_ends, coverage["outline"])
    return coverage
