"""Build the road graph for the graph engine from an .osm.pbf extract.

The graph (defined readably by the networkx model in `graph_model`): one node per way junction,
way end or barrier; one edge per direction of each stretch of way between two such nodes
("piece"), carrying length, highway class, oneway, per-vehicle access mode and speed. What a
way's tags allow each vehicle is `graph_tags`' policy; the file is `graph_format`'s.

Memory-lean for country-sized maps: the ways are read into flat columns (`WayColumns`, a few
machine words a node) and `assemble` turns them into the file's arrays with numpy, with no
Python object per node, edge or piece. Measured on 10 copies of Heidelberg (2.2 M nodes): the
networkx model peaked at 2.0 GB and took 74 s, the columns 404 MB and 28 s (1x: 251 -> 85 MB).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import osmium
import shapely

from common.geo import haversine_m_arrays
from common.vocabulary import VEHICLES
from route_service.graph_format import FORMAT_VERSION, MODE_NO, MODE_YES, write_graph
from route_service.graph_tags import (
    LIMIT_TAGS,
    DirectionModes,
    barrier_passers,
    classify,
    is_underground,
    oneway_of,
    way_limits,
)
from route_service.time_rules import CONDITIONAL_KEYS, parse_rules


@dataclass
class WayRecord:
    """One routable way, while it is read (and for the networkx model)."""

    osm_id: int
    refs: list[int]
    lats: list[float]
    lons: list[float]
    highway: str
    name: str
    oneway: int  # 1 forward only, -1 backward only, 0 both
    modes: dict[str, DirectionModes]
    limits: tuple[float, ...] | None = None  # graph_tags.way_limits: checked against a truck per request
    underground: bool = False  # graph_tags.is_underground: snapping prefers a surface road near it
    timed: str | None = None  # tags (JSON, with "@id") of a way with rules by time (route_service.time_rules)


class WayColumns:
    """Every routable way, column by column: way w's nodes are refs[ref_ptr[w]:ref_ptr[w + 1]].
    Strings are kept once each (`texts`), the ways hold their index."""

    def __init__(self) -> None:
        self.refs, self.lats, self.lons = array("q"), array("d"), array("d")
        self.ref_ptr = array("q", [0])
        self.osm_id = array("q")
        self.highway, self.name, self.oneway = array("i"), array("i"), array("b")
        self.forward = {v: array("b") for v in VEHICLES}
        self.backward = {v: array("b") for v in VEHICLES}
        self.speed = {v: array("d") for v in VEHICLES}
        self.limits: dict[int, tuple[float, ...]] = {}  # way index -> its limits (few ways have any)
        self.underground: list[int] = []  # indexes of the ways below the ground (few)
        self.timed: dict[int, str] = {}  # way index -> its tags, for ways with rules by time (few)
        self.texts: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.osm_id)

    def text_id(self, text: str) -> int:
        return self.texts.setdefault(text, len(self.texts))

    def add(self, way: WayRecord) -> None:
        if way.limits is not None:
            self.limits[len(self)] = way.limits
        if way.underground:
            self.underground.append(len(self))
        if way.timed is not None:
            self.timed[len(self)] = way.timed
        self.refs.extend(way.refs)
        self.lats.extend(way.lats)
        self.lons.extend(way.lons)
        self.ref_ptr.append(len(self.refs))
        self.osm_id.append(way.osm_id)
        self.highway.append(self.text_id(way.highway))
        self.name.append(self.text_id(way.name))
        self.oneway.append(way.oneway)
        for vehicle in VEHICLES:
            modes = way.modes.get(vehicle)
            self.forward[vehicle].append(modes.forward if modes else MODE_NO)
            self.backward[vehicle].append(modes.backward if modes else MODE_NO)
            self.speed[vehicle].append(modes.speed_kmh if modes else 0.0)

    def records(self) -> Iterator[WayRecord]:
        """The ways as records again (the networkx model reads them so)."""
        texts = list(self.texts)
        underground = set(self.underground)
        for w in range(len(self)):
            start, end = self.ref_ptr[w], self.ref_ptr[w + 1]
            modes = {
                v: DirectionModes(self.forward[v][w], self.backward[v][w], self.speed[v][w])
                for v in VEHICLES
                if (self.forward[v][w], self.backward[v][w]) != (MODE_NO, MODE_NO)  # a vehicle the way admits
            }
            yield WayRecord(
                self.osm_id[w], list(self.refs[start:end]), list(self.lats[start:end]), list(self.lons[start:end]),
                texts[self.highway[w]], texts[self.name[w]], self.oneway[w], modes, self.limits.get(w),
                w in underground, self.timed.get(w),
            )  # fmt: skip


@dataclass
class ReadResult:
    ways: WayColumns = field(default_factory=WayColumns)
    # barrier node id -> vehicles that can pass it
    barriers: dict[int, frozenset[str]] = field(default_factory=dict)


# ---------------------------------------------------------------- reading


def read_pbf(pbf: Path) -> ReadResult:
    """Routable ways (with node locations) and blocking barrier nodes of the extract."""
    result = ReadResult()
    processor = (
        osmium.FileProcessor(str(pbf)).with_locations().with_filter(osmium.filter.KeyFilter("highway", "barrier"))
    )
    for obj in processor:
        if isinstance(obj, osmium.osm.Node):
            if "barrier" in obj.tags:
                passers = barrier_passers(dict(obj.tags))
                if len(passers) < len(VEHICLES):
                    result.barriers[obj.id] = passers
        elif isinstance(obj, osmium.osm.Way) and "highway" in obj.tags:
            record = way_record(obj)
            if record is not None:
                result.ways.add(record)
    return result


def way_record(way: osmium.osm.Way) -> WayRecord | None:
    tags = {tag.k: tag.v for tag in way.tags}
    modes = {vehicle: m for vehicle in VEHICLES if (m := classify(tags, vehicle)) is not None}
    if not modes or len(way.nodes) < 2:
        return None
    refs, lats, lons = [], [], []
    for node in way.nodes:
        if not node.location.valid():
            continue  # node missing from the extract: the way is cut at the boundary
        refs.append(node.ref)
        lats.append(node.lat)
        lons.append(node.lon)
    if len(refs) < 2:
        return None
    return WayRecord(
        way.id,
        refs,
        lats,
        lons,
        tags["highway"],
        tags.get("name") or tags.get("ref") or "",
        oneway_of(tags, "car"),
        modes,
        way_limits(tags),
        is_underground(tags),
        timed_tags(tags, way.id),
    )


def timed_tags(tags: Mapping[str, str], way_id: int) -> str | None:
    """A way's tags as JSON when it has rules by time (their keys: time_rules.CONDITIONAL_KEYS):
    at a time, the rules that hold are written over them and the tag policy reads them again."""
    if not any(key in tags for key in CONDITIONAL_KEYS):
        return None
    return orjson.dumps({**tags, "@id": way_id}).decode()


# ---------------------------------------------------------------- the networkx model


def split_points(ways: Iterable[WayRecord], barriers: Mapping[int, frozenset[str]]) -> set[int]:
    """Nodes where a piece must end: way ends, junctions (used twice or more), barriers."""
    uses: Counter[int] = Counter()
    ends: set[int] = set()
    for way in ways:
        uses.update(way.refs)
        ends.update((way.refs[0], way.refs[-1]))
    return ends | {ref for ref, count in uses.items() if count > 1} | (set(barriers) & set(uses))


# ---------------------------------------------------------------- assembly: the ways' columns → the file's arrays


def assemble(ways: WayColumns, barriers: Mapping[int, frozenset[str]]) -> dict[str, np.ndarray]:
    """The arrays of `graph_format`, equal to `graph_model.export_arrays` of the networkx model
    (the tests check it on every shared extract), built with numpy from the columns."""
    refs = np.frombuffer(ways.refs, dtype=np.int64)
    lats, lons = np.frombuffer(ways.lats, dtype=np.float64), np.frombuffer(ways.lons, dtype=np.float64)
    starts, ends, piece_way = pieces_of(refs, np.frombuffer(ways.ref_ptr, dtype=np.int64), barriers)
    sizes = ends - starts + 1
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    points = np.arange(ptr[-1]) - np.repeat(ptr[:-1] - starts, sizes)
    geometry = piece_geometry(lats[points], lons[points], sizes)
    del points
    nodes = PieceNodes.of(refs[starts], refs[ends], barriers)
    node_points = np.empty(2 * len(starts), dtype=np.int64)
    node_points[0::2], node_points[1::2] = starts, ends
    first = node_points[nodes.first_seen]
    edges = EdgeList.of(nodes, piece_lengths(geometry), len(first))
    arrays: dict[str, np.ndarray] = {
        "format_version": np.array([FORMAT_VERSION]),
        "node_lat": lats[first],
        "node_lon": lons[first],
        **edges.arrays(ways, piece_way, nodes, barriers),
        **geometry,
        **piece_texts(ways, piece_way, edges),
        **piece_limits(ways, piece_way),
        "underground_pieces": np.flatnonzero(np.isin(piece_way, ways.underground)).astype(np.int32),
        **piece_timed(ways, piece_way),
    }
    return arrays


def pieces_of(
    refs: np.ndarray, ref_ptr: np.ndarray, barriers: Mapping[int, frozenset[str]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each piece's first and last position in `refs`, and its way: a way is cut at its ends,
    at nodes other ways use (junctions, other ways' ends) and at blocking barriers."""
    used, uses = np.unique(refs, return_counts=True)
    first, last = ref_ptr[:-1], ref_ptr[1:] - 1
    cuts = np.union1d(used[uses > 1], np.concatenate([refs[first], refs[last]]))
    barrier_ids = np.fromiter(barriers, np.int64, len(barriers))
    cuts = np.union1d(cuts, np.intersect1d(barrier_ids, used, assume_unique=True))
    boundary = np.isin(refs, cuts)
    boundary[first] = boundary[last] = True
    positions = np.flatnonzero(boundary)
    way_of = np.searchsorted(ref_ptr, positions, side="right") - 1
    inside = way_of[:-1] == way_of[1:]  # consecutive cuts of one way; not a way's end → the next's start
    return positions[:-1][inside], positions[1:][inside], way_of[:-1][inside]


def piece_geometry(lats: np.ndarray, lons: np.ndarray, sizes: np.ndarray) -> dict[str, np.ndarray]:
    """The pieces' points one after the other, with the metres along each piece."""
    step = haversine_m_arrays(lats[:-1], lons[:-1], lats[1:], lons[1:])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    cum = np.concatenate([[0.0], np.cumsum(step)])
    # distance along the piece: subtract the running total at the piece's first point
    cum = cum - np.repeat(cum[ptr[:-1]], sizes)
    return {"geom_ptr": ptr, "geom_lat": lats, "geom_lon": lons, "geom_cum": cum}


def piece_lengths(geometry: Mapping[str, np.ndarray]) -> np.ndarray:
    """Each piece's length: the sum of its steps (summed in another order than the model's
    `sum()`, so equal to it within 1e-12 relative, not bit for bit)."""
    lats, lons, ptr = geometry["geom_lat"], geometry["geom_lon"], geometry["geom_ptr"]
    step = np.append(haversine_m_arrays(lats[:-1], lons[:-1], lats[1:], lons[1:]), 0.0)
    step[ptr[1:] - 1] = 0.0  # from a piece's last point to the next piece's first: no road
    return np.add.reduceat(step, ptr[:-1]) if len(ptr) > 1 else np.zeros(0)


@dataclass(frozen=True)
class PieceNodes:
    """The graph's nodes, numbered in the order the pieces first name them (the model's order):
    `u`/`v` each piece's first/last node; a barrier has a node of its own per piece."""

    u: np.ndarray
    v: np.ndarray
    first_seen: np.ndarray  # per node: its first place in the sequence u0, v0, u1, v1, ...
    barrier_copies: list[tuple[int, list[int]]]  # barrier OSM id -> its nodes, in node order

    @classmethod
    def of(cls, u_refs: np.ndarray, v_refs: np.ndarray, barriers: Mapping[int, frozenset[str]]) -> PieceNodes:
        sequence = np.empty(2 * len(u_refs), dtype=np.int64)
        sequence[0::2], sequence[1::2] = u_refs, v_refs
        copy_of: dict[int, int] = {}  # negative key of a barrier copy -> its OSM id
        keys: dict[tuple[int, int], int] = {}
        for place in np.flatnonzero(np.isin(sequence, np.fromiter(barriers, np.int64, len(barriers)))).tolist():
            ref = int(sequence[place])
            key = keys.setdefault((ref, place // 2), -1 - len(keys))
            copy_of[key] = ref
            sequence[place] = key
        unique, first_seen, inverse = np.unique(sequence, return_index=True, return_inverse=True)
        order = np.argsort(first_seen, kind="stable")
        number = np.empty(len(unique), dtype=np.int64)
        number[order] = np.arange(len(unique))
        node = number[inverse]
        ordered = unique[order]
        copies: dict[int, list[int]] = {}
        for index in np.flatnonzero(ordered < 0).tolist():
            copies.setdefault(copy_of[int(ordered[index])], []).append(index)
        return cls(node[0::2], node[1::2], first_seen[order], list(copies.items()))


@dataclass(frozen=True)
class EdgeList:
    """Directed edges in the file's order: by source node, then as the model iterates them (a
    source's targets in the order first joined, then in insertion order)."""

    src: np.ndarray
    dst: np.ndarray
    piece: np.ndarray  # -1: a connector around a passable barrier
    reverse: np.ndarray
    length: np.ndarray
    connector_ref: np.ndarray  # the barrier's OSM id for connectors, else 0

    @classmethod
    def of(cls, nodes: PieceNodes, lengths: np.ndarray, node_count: int) -> EdgeList:
        count = len(nodes.u)
        pairs = [(a, b, ref) for ref, copies in nodes.barrier_copies for a in copies for b in copies if a != b]
        connectors = np.array(pairs, dtype=np.int64).reshape(-1, 3)
        src = np.concatenate([np.column_stack([nodes.u, nodes.v]).ravel(), connectors[:, 0]])
        dst = np.concatenate([np.column_stack([nodes.v, nodes.u]).ravel(), connectors[:, 1]])
        inserted = np.arange(len(src))
        _, joined, which = np.unique(src * node_count + dst, return_index=True, return_inverse=True)
        order = np.lexsort((inserted, joined[which], src))
        piece = np.concatenate([np.repeat(np.arange(count), 2), np.full(len(connectors), -1)])
        reverse = np.concatenate([np.tile([False, True], count), np.zeros(len(connectors), dtype=bool)])
        length = np.concatenate([np.repeat(lengths, 2), np.zeros(len(connectors))])
        ref = np.concatenate([np.zeros(2 * count, dtype=np.int64), connectors[:, 2]])
        return cls(src[order], dst[order], piece[order], reverse[order], length[order], ref[order])

    def arrays(
        self, ways: WayColumns, piece_way: np.ndarray, nodes: PieceNodes, barriers: Mapping[int, frozenset[str]]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {
            "edge_src": self.src.astype(np.int32),
            "edge_dst": self.dst.astype(np.int32),
            "edge_piece": self.piece.astype(np.int32),
            "edge_reverse": self.reverse,
            "edge_length": self.length,
        }
        on_road = self.piece >= 0
        way = piece_way[self.piece[on_road]]
        backward = self.reverse[on_road]
        connectors = np.flatnonzero(~on_road)
        for vehicle in VEHICLES:
            mode = np.zeros(len(self.src), dtype=np.int8)
            speed = np.zeros(len(self.src), dtype=np.float32)
            forward_modes = np.frombuffer(ways.forward[vehicle], dtype=np.int8)[way]
            backward_modes = np.frombuffer(ways.backward[vehicle], dtype=np.int8)[way]
            mode[on_road] = np.where(backward, backward_modes, forward_modes)
            speed[on_road] = np.frombuffer(ways.speed[vehicle], dtype=np.float64)[way]
            passes = np.array([vehicle in barriers[int(r)] for r in self.connector_ref[connectors]], dtype=bool)
            mode[connectors[passes]], speed[connectors[passes]] = MODE_YES, 5.0
            out[f"mode_{vehicle}"], out[f"speed_{vehicle}"] = mode, speed
        counts = np.bincount(self.src, minlength=len(nodes.first_seen))
        out["indptr"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return out


def piece_texts(ways: WayColumns, piece_way: np.ndarray, edges: EdgeList) -> dict[str, np.ndarray]:
    """Per piece an index into the tables of names and highway classes, the tables in the order
    the edges first show each text (the name table starts with "")."""
    texts = list(ways.texts)
    forward = edges.piece[(edges.piece >= 0) & ~edges.reverse]
    out: dict[str, np.ndarray] = {}
    for column, table, start in (("name", "names", [""]), ("highway", "highways", [])):
        text_of_way = np.frombuffer(getattr(ways, column), dtype=np.int32)
        seen = text_of_way[piece_way[forward]]
        _, first = np.unique(seen, return_index=True)
        index: dict[str, int] = dict.fromkeys(start, 0)
        lookup = np.zeros(len(texts), dtype=np.int32)
        for text_id in seen[np.sort(first)].tolist():
            lookup[text_id] = index.setdefault(texts[text_id], len(index))
        out[f"piece_{column}"] = lookup[text_of_way[piece_way]]
        out[table] = np.array(list(index), dtype=str)
    return out


def piece_limits(ways: WayColumns, piece_way: np.ndarray) -> dict[str, np.ndarray]:
    """The pieces with a height, width, length, weight or axle-load limit, and their limits
    (sparse: most pieces have none, and a request's check is O(limited pieces))."""
    limited_ways = np.fromiter(ways.limits, np.int64, len(ways.limits))
    pieces = np.flatnonzero(np.isin(piece_way, limited_ways)).astype(np.int32)
    values = [ways.limits[int(w)] for w in piece_way[pieces]]
    return {
        "limited_pieces": pieces,
        "piece_limits": np.array(values, dtype=np.float32).reshape(len(pieces), len(LIMIT_TAGS)),
    }


def piece_timed(ways: WayColumns, piece_way: np.ndarray) -> dict[str, np.ndarray]:
    """The pieces of ways with rules by time, each with an index into their ways' tags."""
    order = sorted(ways.timed)
    pieces = np.flatnonzero(np.isin(piece_way, np.array(order, dtype=np.int64))).astype(np.int32)
    index = {way: i for i, way in enumerate(order)}
    return {
        "timed_pieces": pieces,
        "timed_way": np.array([index[int(w)] for w in piece_way[pieces]], dtype=np.int32),
        "timed_tags": np.array([ways.timed[w] for w in order], dtype=str),
    }


def time_rule_counts(tags_table: np.ndarray) -> dict[str, int]:
    """What the import found of rules by time: applied, not about time (`wet`), unreadable."""
    counts = {"timed_ways": len(tags_table), "time_rules": 0, "rules_not_about_time": 0, "rules_unparseable": 0}
    for text in tags_table.tolist():
        parsed = parse_rules(orjson.loads(text))
        counts["time_rules"] += len(parsed.rules)
        counts["rules_not_about_time"] += len(parsed.not_about_time)
        counts["rules_unparseable"] += len(parsed.unparseable)
    return counts


# ---------------------------------------------------------------- what the map covers

SAMPLE_POINTS = 64
OUTLINE_CELLS = 20_000


def road_bounds(arrays: Mapping[str, np.ndarray]) -> list[float] | None:
    """[min_lon, min_lat, max_lon, max_lat] of the road nodes (None for a map without roads)."""
    lat, lon = arrays["node_lat"], arrays["node_lon"]
    if not len(lat):
        return None
    return [round(float(v), 6) for v in (lon.min(), lat.min(), lon.max(), lat.max())]


def sample_points(arrays: Mapping[str, np.ndarray], count: int = SAMPLE_POINTS) -> list[list[float]]:
    """[lon, lat] of `count` road nodes drawn at random (seeded: the same map, the same points),
    so spread as the roads are: diagnostics find the map's main network among them."""
    lat, lon = arrays["node_lat"], arrays["node_lon"]
    chosen = np.random.default_rng(0).choice(len(lat), size=min(count, len(lat)), replace=False)
    return [[round(float(lon[i]), 6), round(float(lat[i]), 6)] for i in np.sort(chosen)]


def road_outline(arrays: Mapping[str, np.ndarray], most_cells: int = OUTLINE_CELLS) -> dict[str, Any] | None:
    """Where the map has roads, as a GeoJSON MultiPolygon: the union of the grid cells holding a
    road node, the cell the smallest power-of-two multiple of 0.005° (about 500 m) that keeps
    the cells at `most_cells`. Several regions in one map stay apart, unlike a hull."""
    lat, lon = arrays["node_lat"], arrays["node_lon"]
    if not len(lat):
        return None
    size = 0.005
    while True:
        cells = np.unique(np.column_stack([np.floor(lon / size), np.floor(lat / size)]), axis=0)
        if len(cells) <= most_cells:
            break
        size *= 2
    boxes = shapely.box(cells[:, 0] * size, cells[:, 1] * size, (cells[:, 0] + 1) * size, (cells[:, 1] + 1) * size)
    shape = shapely.union_all(boxes).simplify(size / 2)
    polygons = list(shape.geoms) if isinstance(shape, shapely.MultiPolygon) else [shape]
    return {
        "type": "MultiPolygon",
        "coordinates": [
            [[[round(x, 5), round(y, 5)] for x, y in ring.coords] for ring in (p.exterior, *p.interiors)]
            for p in polygons
        ],
    }


def build_graph(pbf: Path, out_dir: Path) -> dict[str, Any]:
    """Read `pbf`, assemble the arrays and write `out_dir/graph.npz`. Returns counts."""
    started = time.perf_counter()
    read = read_pbf(pbf)
    arrays = assemble(read.ways, read.barriers)
    del read
    write_graph(out_dir, arrays)
    return {
        # What the routable data covers: diagnostics name it to a point outside (route_service.diagnostics).
        "bounds": road_bounds(arrays),
        "sample_points": sample_points(arrays),
        "outline": road_outline(arrays),
        "nodes": len(arrays["node_lat"]),
        "edges": len(arrays["edge_src"]),
        "pieces": len(arrays["geom_ptr"]) - 1,
        **time_rule_counts(arrays["timed_tags"]),
        "build_ms": math.ceil((time.perf_counter() - started) * 1000),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m route_service.importing.graph_build MAP.osm.pbf OUT_DIR`: builds, prints the counts as JSON.

    The importer runs the build this way so that its memory goes back to the system when the
    build ends: run in the importer's own thread, ~0.5 GB of it stayed in the importer for the
    rest of a 30x import (bench/RESULTS.md, Scale).
    """
    parser = argparse.ArgumentParser(prog="python -m route_service.importing.graph_build", description=main.__doc__)
    parser.add_argument("pbf", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    print(json.dumps(build_graph(args.pbf, args.out_dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
