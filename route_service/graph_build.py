"""Build the road graph for the graph engine from an .osm.pbf extract.

The graph model is a `networkx.MultiDiGraph` (see `build_networkx`): one node per way
junction, way end or barrier; one edge per direction of each stretch of way between two
such nodes ("piece"), carrying length, highway class, oneway, per-vehicle access mode and
speed. What a way's tags allow each vehicle is `graph_tags`' policy. `build_graph` exports
that model to flat numpy arrays (`graph_format`) that the hot path in `graph_engine` reads
without networkx.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import osmium
import shapely

from common.geo import haversine_m_arrays
from common.vocabulary import VEHICLES
from route_service.graph_format import FORMAT_VERSION, MODE_NO, MODE_YES, write_graph
from route_service.graph_tags import LIMIT_TAGS, DirectionModes, barrier_passers, classify, oneway_of, way_limits


@dataclass
class WayRecord:
    osm_id: int
    refs: list[int]
    lats: list[float]
    lons: list[float]
    highway: str
    name: str
    oneway: int  # 1 forward only, -1 backward only, 0 both
    modes: dict[str, DirectionModes]
    limits: tuple[float, ...] | None = None  # graph_tags.way_limits: checked against a truck per request


@dataclass
class ReadResult:
    ways: list[WayRecord] = field(default_factory=list)
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
                result.ways.append(record)
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
    )


# ---------------------------------------------------------------- the networkx model


def split_points(ways: Iterable[WayRecord], barriers: Mapping[int, frozenset[str]]) -> set[int]:
    """Nodes where a piece must end: way ends, junctions (used twice or more), barriers."""
    uses: Counter[int] = Counter()
    ends: set[int] = set()
    for way in ways:
        uses.update(way.refs)
        ends.update((way.refs[0], way.refs[-1]))
    return ends | {ref for ref, count in uses.items() if count > 1} | (set(barriers) & set(uses))


def build_networkx(pbf: Path) -> nx.MultiDiGraph:
    """The road graph as a networkx MultiDiGraph.

    Nodes: OSM node id (barrier nodes are split into one node per incident piece, joined by
    zero-length connector edges only for vehicles that can pass), attributes lat, lon.
    Edges: key `2*piece` (way direction) and `2*piece+1` (against it), attributes piece,
    reverse, length_m, highway, name, oneway, way_id, mode {vehicle: MODE_*}, speed_kmh
    {vehicle: km/h}. Piece geometry: graph attribute `geometry` {piece: (lats, lons)}.
    """
    read = read_pbf(pbf)
    graph = nx.MultiDiGraph(geometry={}, limits={})
    splits = split_points(read.ways, read.barriers)
    piece = 0
    for way in read.ways:
        start = 0
        for i in range(1, len(way.refs)):
            if way.refs[i] in splits or i == len(way.refs) - 1:
                add_piece(graph, way, start, i, piece, read.barriers)
                piece += 1
                start = i
    add_barrier_connectors(graph, read.barriers)
    return graph


def barrier_node(ref: int, piece: int, barriers: Mapping[int, frozenset[str]]) -> tuple[int, ...] | int:
    """Graph node for OSM node `ref` as seen from `piece`: a barrier gets one copy per piece."""
    return (ref, piece) if ref in barriers else ref


def add_piece(
    graph: nx.MultiDiGraph, way: WayRecord, start: int, end: int, piece: int, barriers: Mapping[int, frozenset[str]]
) -> None:
    lats = np.asarray(way.lats[start : end + 1])
    lons = np.asarray(way.lons[start : end + 1])
    length = float(haversine_m_arrays(lats[:-1], lons[:-1], lats[1:], lons[1:]).sum())
    u = barrier_node(way.refs[start], piece, barriers)
    v = barrier_node(way.refs[end], piece, barriers)
    graph.add_node(u, lat=float(lats[0]), lon=float(lons[0]), osm_id=way.refs[start])
    graph.add_node(v, lat=float(lats[-1]), lon=float(lons[-1]), osm_id=way.refs[end])
    graph.graph["geometry"][piece] = (lats, lons)
    if way.limits is not None:
        graph.graph["limits"][piece] = way.limits
    common = {"piece": piece, "length_m": length, "highway": way.highway, "name": way.name,
              "oneway": way.oneway, "way_id": way.osm_id}  # fmt: skip
    speeds = {vehicle: m.speed_kmh for vehicle, m in way.modes.items()}
    forward = {vehicle: m.forward for vehicle, m in way.modes.items()}
    backward = {vehicle: m.backward for vehicle, m in way.modes.items()}
    graph.add_edge(u, v, key=2 * piece, reverse=False, mode=forward, speed_kmh=speeds, **common)
    graph.add_edge(v, u, key=2 * piece + 1, reverse=True, mode=backward, speed_kmh=speeds, **common)


def add_barrier_connectors(graph: nx.MultiDiGraph, barriers: Mapping[int, frozenset[str]]) -> None:
    copies: dict[int, list[tuple[int, int]]] = {}
    for node in graph.nodes:
        if isinstance(node, tuple):
            copies.setdefault(node[0], []).append(node)
    for ref, nodes in copies.items():
        modes = {vehicle: MODE_YES for vehicle in barriers[ref]}
        for a in nodes:
            for b in nodes:
                if a != b:
                    graph.add_edge(
                        a,
                        b,
                        piece=-1,
                        reverse=False,
                        length_m=0.0,
                        highway="barrier",
                        name="",
                        oneway=0,
                        way_id=0,
                        mode=modes,
                        speed_kmh=dict.fromkeys(modes, 5.0),
                    )


# ---------------------------------------------------------------- export to arrays

SAMPLE_POINTS = 64
OUTLINE_CELLS = 20_000


def export_arrays(graph: nx.MultiDiGraph) -> dict[str, np.ndarray]:
    """Flat arrays for the hot path: nodes, CSR-sorted directed edges, piece geometry."""
    index = {node: i for i, node in enumerate(graph.nodes)}
    arrays: dict[str, np.ndarray] = {
        "format_version": np.array([FORMAT_VERSION]),
        "node_lat": np.array([graph.nodes[n]["lat"] for n in graph.nodes], dtype=np.float64),
        "node_lon": np.array([graph.nodes[n]["lon"] for n in graph.nodes], dtype=np.float64),
    }
    arrays.update(edge_arrays(graph, index))
    arrays.update(piece_arrays(graph))
    arrays.update(limit_arrays(graph))
    return arrays


def limit_arrays(graph: nx.MultiDiGraph) -> dict[str, np.ndarray]:
    """The pieces with a height, width, length, weight or axle-load limit, and their limits
    (sparse: most pieces have none, and a request's check is O(limited pieces))."""
    limits: dict[int, tuple[float, ...]] = graph.graph["limits"]
    pieces = np.array(sorted(limits), dtype=np.int32)
    values = np.array([limits[p] for p in pieces.tolist()], dtype=np.float32).reshape(len(pieces), len(LIMIT_TAGS))
    return {"limited_pieces": pieces, "piece_limits": values}


def edge_arrays(graph: nx.MultiDiGraph, index: Mapping[object, int]) -> dict[str, np.ndarray]:
    edges = list(graph.edges(data=True))
    src = np.array([index[u] for u, _, _ in edges], dtype=np.int32)
    order = np.argsort(src, kind="stable")
    out: dict[str, np.ndarray] = {
        "edge_src": src[order],
        "edge_dst": np.array([index[v] for _, v, _ in edges], dtype=np.int32)[order],
        "edge_piece": np.array([d["piece"] for _, _, d in edges], dtype=np.int32)[order],
        "edge_reverse": np.array([d["reverse"] for _, _, d in edges], dtype=bool)[order],
        "edge_length": np.array([d["length_m"] for _, _, d in edges], dtype=np.float64)[order],
    }
    for vehicle in VEHICLES:
        out[f"mode_{vehicle}"] = np.array([d["mode"].get(vehicle, MODE_NO) for _, _, d in edges], np.int8)[order]
        out[f"speed_{vehicle}"] = np.array([d["speed_kmh"].get(vehicle, 0.0) for _, _, d in edges], dtype=np.float32)[
            order
        ]
    counts = np.bincount(out["edge_src"], minlength=graph.number_of_nodes())
    out["indptr"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return out


def piece_arrays(graph: nx.MultiDiGraph) -> dict[str, np.ndarray]:
    geometry: dict[int, tuple[np.ndarray, np.ndarray]] = graph.graph["geometry"]
    count = len(geometry)
    names: dict[str, int] = {"": 0}
    highways: dict[str, int] = {}
    name_idx = np.zeros(count, dtype=np.int32)
    highway_idx = np.zeros(count, dtype=np.int32)
    for _, _, data in graph.edges(data=True):
        if data["piece"] >= 0 and not data["reverse"]:
            name_idx[data["piece"]] = names.setdefault(data["name"], len(names))
            highway_idx[data["piece"]] = highways.setdefault(data["highway"], len(highways))
    lats = [geometry[p][0] for p in range(count)]
    lons = [geometry[p][1] for p in range(count)]
    sizes = np.array([len(a) for a in lats], dtype=np.int64)
    geom_lat, geom_lon = np.concatenate(lats), np.concatenate(lons)
    step = haversine_m_arrays(geom_lat[:-1], geom_lon[:-1], geom_lat[1:], geom_lon[1:])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    cum = np.concatenate([[0.0], np.cumsum(step)])
    # distance along the piece: subtract the running total at the piece's first point
    cum = cum - np.repeat(cum[ptr[:-1]], sizes)
    return {
        "geom_ptr": ptr, "geom_lat": geom_lat, "geom_lon": geom_lon, "geom_cum": cum,
        "piece_name": name_idx, "piece_highway": highway_idx,
        "names": np.array(list(names), dtype=str), "highways": np.array(list(highways), dtype=str),
    }  # fmt: skip


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
    """Read `pbf`, build the networkx model and write `out_dir/graph.npz`. Returns counts."""
    started = time.perf_counter()
    graph = build_networkx(pbf)
    arrays = export_arrays(graph)
    write_graph(out_dir, arrays)
    return {
        # What the routable data covers: diagnostics name it to a point outside (route_service.diagnostics).
        "bounds": road_bounds(arrays),
        "sample_points": sample_points(arrays),
        "outline": road_outline(arrays),
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "pieces": len(graph.graph["geometry"]),
        "build_ms": math.ceil((time.perf_counter() - started) * 1000),
    }
