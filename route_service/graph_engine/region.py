"""Point-to-point search on the part of the road graph near the start and the destination.

The map tiles (`tiles`) within an ellipse around the start and the destination become a small
CSR graph, and scipy's Dijkstra runs on that alone: no array as long as the map is copied,
appended to or searched on a request (the search on the whole graph did all three: on 10
copies of Heidelberg an emergency route took 1.9 times as long as on one, bench/scale.py).

The region's best path is the best of the whole graph when no path that leaves the region can
be cheaper: such a path leaves first by some edge (u, w), so it costs at least dist(u) +
weight(u, w) + the straight line from w to the destination at the vehicle's top speed (edges
are never shorter than their chords). When one might be cheaper the region grows to the ellipse
that holds every path as cheap as the one found (straight-line metres from the start plus to
the destination ≤ cost times the top speed), which settles it; only when the first region found no path
at all does it grow by REACH_FACTORS, and after the last, or when a region would hold most of
the map (a map of one town), the caller searches the whole graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from route_service.graph_engine.prepare import to_xyz
from route_service.graph_engine.query_graph import Crossing, Found, QueryGraph
from route_service.graph_engine.snap import SnapPoint
from route_service.graph_engine.tiles import NodeTiles, Runs, concat_runs, runs_of

# The first region, by route type: its ellipse's size in straight lines between the snapped
# points, plus a margin. Measured on 100 Heidelberg emergency routes (bench/scale.py's pairs),
# nodes in all the regions a route searched: fastest 1.2 -> 36 500 (1.95 regions), 2.0 ->
# 32 500, 3.0 -> 26 200 (1.11); shortest 1.2 -> 13 900 (1.26), 2.0 -> 17 800 (margin 500 m).
# The fastest bound is weak (the top speed, 96 km/h, against town speeds), so fastest routes
# search most of a town.
FIRST_REACH = {"fastest": 3.0, "shortest": 1.2}
REACH_MARGIN_M = 500.0
REACH_FACTORS = (6.0, 12.0)  # later regions when the first found no path
MAX_REGIONS = 4
# A region holding more than this share of the map's junctions is not built: the whole graph's
# search (C all through) is cheaper then. On one Heidelberg a fastest route's region holds about
# 3/4 of it and cost 1.2 ms more than the whole graph's search; on 10 copies it holds 7 %.
WHOLE_MAP_SHARE = 0.5
# Edge lengths exceed their chords by rounding only (by 1.6e-9 m at most on Heidelberg).
BOUND_SLACK = 1.0 - 1e-6


@dataclass(frozen=True)
class Region:
    """A search region as a CSR graph: the nodes of its tiles, local node i is `nodes[i]`, the
    virtual start is len(nodes)."""

    road_tiles: NodeTiles
    runs: Runs
    nodes: np.ndarray
    matrix: csr_matrix
    leaving_src: np.ndarray  # local source node of each usable edge leaving the region
    leaving_cost: np.ndarray  # its weight plus the least cost from its end to the destination

    def local(self, node: int) -> int:
        return int(self.runs.locals(self.road_tiles.node_ord[[node]])[0][0])


@dataclass(frozen=True)
class Ends:
    """The snapped start and destination in space, and the lower bound's cost per metre."""

    start: np.ndarray
    dest: np.ndarray
    per_metre: float
    forced_tiles: np.ndarray  # the tiles of the nodes the start leaves by and the end is reached by

    @property
    def crow(self) -> float:
        return float(np.linalg.norm(self.start - self.dest))


def local_search(query: QueryGraph, origin: SnapPoint, dest: SnapPoint, route_type: str, exits: list[Crossing],
                 entries: list[Crossing], direct_cost: float) -> Found | None:  # fmt: skip
    """The best path through junctions, found in a region that proves it the best of the whole
    graph; None when no region did (the caller then searches the whole graph)."""
    if not exits or not entries:
        return Found(np.inf, None, [])  # nothing leaves the start, or nothing reaches the end
    ends = query_ends(query, origin, dest, route_type, exits, entries)
    reach = FIRST_REACH[route_type] * ends.crow + REACH_MARGIN_M
    later = [f * ends.crow + REACH_MARGIN_M for f in REACH_FACTORS]
    for _ in range(MAX_REGIONS):
        chosen = region_tiles(query, ends, reach)
        tiles = query.road.tiles
        if int(np.sum(tiles.ptr[chosen + 1] - tiles.ptr[chosen])) > WHOLE_MAP_SHARE * query.road.n_nodes:
            return None  # most of the map: the search of the whole graph is cheaper
        region = build_region(query, chosen, exits, ends)
        found, proven = search_region(region, entries, direct_cost)
        if proven:
            return found
        best = min(found.cost, direct_cost)
        if np.isfinite(best):
            reach = max(best / ends.per_metre, reach) * 1.001 + 1.0  # holds every path as cheap
        elif later:
            reach = later.pop(0)
        else:
            break
    return None


def query_ends(query: QueryGraph, origin: SnapPoint, dest: SnapPoint, route_type: str, exits: list[Crossing],
               entries: list[Crossing]) -> Ends:  # fmt: skip
    assert query.graph.metres_per_cost is not None
    start = to_xyz(np.array([origin.lat]), np.array([origin.lon]))[0]
    end = to_xyz(np.array([dest.lat]), np.array([dest.lon]))[0]
    forced = np.array([e[0] for e in exits] + [e[0] for e in entries], dtype=np.int64)
    per_metre = BOUND_SLACK / query.graph.metres_per_cost[route_type]
    return Ends(start, end, per_metre, query.road.tiles.node_tile[forced])


def region_tiles(query: QueryGraph, ends: Ends, reach_m: float) -> np.ndarray:
    """Sorted ids of the tiles with a node that may lie within the ellipse, and the forced ones."""
    tiles = query.road.tiles
    middle = (ends.start + ends.dest) / 2
    # a point of the ellipse lies within half its size of the midpoint
    near = np.asarray(tiles.tree.query_ball_point(middle, reach_m / 2 + tiles.max_radius), dtype=np.int64)
    center = tiles.center[near]
    total = np.linalg.norm(center - ends.start, axis=1) + np.linalg.norm(center - ends.dest, axis=1)
    return np.union1d(near[total - 2 * tiles.radius[near] <= reach_m], ends.forced_tiles)


def build_region(query: QueryGraph, chosen: np.ndarray, exits: list[Crossing], ends: Ends) -> Region:
    """The region's usable edges as a CSR graph with the virtual start, and the edges leaving it.
    Tile ids run along rows of latitude, so the chosen tiles are a few runs of consecutive ids
    whose nodes and edges are contiguous slices (`tiles.Runs`)."""
    road, graph = query.road, query.graph
    tiles, by_tile = road.tiles, graph.edge_tiles
    assert by_tile is not None
    runs = runs_of(tiles, by_tile, chosen)
    nodes = concat_runs(tiles.nodes, runs.start, runs.end)
    pos = concat_runs(by_tile.positions, runs.edge_start, runs.edge_end)
    shift = np.repeat(runs.local - runs.start, runs.edge_end - runs.edge_start)
    src = concat_runs(by_tile.src_ord, runs.edge_start, runs.edge_end) + shift
    dst_ord = concat_runs(by_tile.dst_ord, runs.edge_start, runs.edge_end).astype(np.int64)
    dst, inside = runs.locals(dst_ord)
    weight = query.weights.take(pos)
    usable = np.isfinite(weight)
    inside &= usable
    leaving = usable & ~inside
    k = len(nodes)
    start_to, _ = runs.locals(tiles.node_ord[[e[0] for e in exits]])
    indptr = np.concatenate([[0], np.cumsum(np.bincount(src[inside], minlength=k)), [0]])
    indptr[-1] = indptr[-2] + len(exits)
    indices = np.concatenate([dst[inside], start_to]).astype(np.int32)
    data = np.concatenate([weight[inside], [e[1] for e in exits]])
    out = tiles.nodes[dst_ord[leaving]]
    out_xyz = to_xyz(road.a["node_lat"][out], road.a["node_lon"][out])
    ahead = np.linalg.norm(out_xyz - ends.dest, axis=1) * ends.per_metre
    matrix = csr_matrix((data, indices, indptr), shape=(k + 1, k + 1))
    return Region(tiles, runs, nodes, matrix, src[leaving], weight[leaving] + ahead)


def search_region(region: Region, entries: list[Crossing], direct_cost: float) -> tuple[Found, bool]:
    """Dijkstra on the region: its best path, and whether no path leaving it can beat that."""
    k = len(region.nodes)
    dist, pred = dijkstra(region.matrix, directed=True, indices=k, return_predecessors=True)
    best_cost, best_entry = np.inf, None
    for entry in entries:
        cost = dist[region.local(entry[0])] + entry[1]
        if cost < best_cost:
            best_cost, best_entry = float(cost), entry
    leaving = float(np.min(dist[region.leaving_src] + region.leaving_cost, initial=np.inf))
    proven = min(best_cost, direct_cost) <= leaving
    if best_entry is None:
        return Found(np.inf, None, []), proven
    chain = [region.local(best_entry[0])]
    while pred[chain[-1]] != k:
        chain.append(int(pred[chain[-1]]))
    return Found(best_cost, best_entry, [int(n) for n in region.nodes[chain[::-1]]]), proven
