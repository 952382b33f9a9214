"""The road graph as a networkx model: the readable definition of what `graph_build` writes.

One node per way junction, way end or barrier; one edge per direction of each stretch of way
between two such nodes ("piece"), carrying length, highway class, oneway, per-vehicle access
mode and speed. The importer does not use it: `graph_build.assemble` writes the same arrays
straight from the ways' columns, because this model holds a Python object per node, edge and
piece (2.0 GB peak at 10 copies of Heidelberg, where the arrays need a tenth of that). The
tests keep it as their oracle: the arrays must equal `export_arrays(build_networkx(pbf))` on
every shared extract, and shortest paths are checked against networkx on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import networkx as nx
import numpy as np

from common.geo import haversine_m_arrays
from common.vocabulary import VEHICLES
from route_service.graph_format import FORMAT_VERSION, MODE_NO, MODE_YES
from route_service.graph_tags import LIMIT_TAGS
from route_service.importing.graph_build import WayRecord, piece_geometry, read_pbf, split_points


def build_networkx(pbf: Path) -> nx.MultiDiGraph:
    """The road graph as a networkx MultiDiGraph.

    Nodes: OSM node id (barrier nodes are split into one node per incident piece, joined by
    zero-length connector edges only for vehicles that can pass), attributes lat, lon.
    Edges: key `2*piece` (way direction) and `2*piece+1` (against it), attributes piece,
    reverse, length_m, highway, name, oneway, way_id, mode {vehicle: MODE_*}, speed_kmh
    {vehicle: km/h}. Piece geometry: graph attribute `geometry` {piece: (lats, lons)}.
    """
    read = read_pbf(pbf)
    graph = nx.MultiDiGraph(geometry={}, limits={}, underground=set(), timed={})
    ways = list(read.ways.records())
    splits = split_points(ways, read.barriers)
    piece = 0
    for way in ways:
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
    if way.underground:
        graph.graph["underground"].add(piece)
    if way.timed is not None:
        graph.graph["timed"][piece] = way.timed
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


# ---------------------------------------------------------------- the model as the file's arrays


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
    arrays["underground_pieces"] = np.array(sorted(graph.graph["underground"]), dtype=np.int32)
    arrays.update(timed_arrays(graph))
    return arrays


def timed_arrays(graph: nx.MultiDiGraph) -> dict[str, np.ndarray]:
    timed: dict[int, str] = graph.graph["timed"]
    pieces = sorted(timed)
    table = list(dict.fromkeys(timed[p] for p in pieces))  # the ways' tags, in the ways' order
    return {
        "timed_pieces": np.array(pieces, dtype=np.int32),
        "timed_way": np.array([table.index(timed[p]) for p in pieces], dtype=np.int32),
        "timed_tags": np.array(table, dtype=str),
    }


def limit_arrays(graph: nx.MultiDiGraph) -> dict[str, np.ndarray]:
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
    sizes = np.array([len(geometry[p][0]) for p in range(count)], dtype=np.int64)
    lats = np.concatenate([geometry[p][0] for p in range(count)]) if count else np.zeros(0)
    lons = np.concatenate([geometry[p][1] for p in range(count)]) if count else np.zeros(0)
    return {
        **piece_geometry(lats, lons, sizes),
        "piece_name": name_idx, "piece_highway": highway_idx,
        "names": np.array(list(names), dtype=str), "highways": np.array(list(highways), dtype=str),
    }  # fmt: skip
