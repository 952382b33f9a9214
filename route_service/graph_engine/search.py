"""The shortest path between two snapped points, with scipy's C Dijkstra.

Per query, the edge weights of one vehicle graph are a copy of a cached base vector in
which emergency-only edges are infinite; for `radius_m > 0` the emergency edges whose
whole geometry lies within `radius_m` of the start or the destination get a finite weight.
Dijkstra then runs from a virtual source node appended to the CSR graph (the snapped start
lies inside an edge), first with a distance limit derived from the straight-line distance,
falling back to an unlimited search when the target lies beyond it (a settled node's
distance is exact, so the limit never changes the answer).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from route_service.graph_engine.path import PathResult, Stretch, assemble_path
from route_service.graph_engine.prepare import RoadGraph, VehicleGraph
from route_service.graph_engine.snap import SnapPoint

# Initial Dijkstra limit: most road routes are shorter than twice the straight line plus a margin.
LIMIT_DETOUR = 2.0
LIMIT_MARGIN_M = 3000.0
LIMIT_SPEED_MS = 30 / 3.6  # slow average speed, so the time limit is generous too

Crossing = tuple[int, float, int, float]  # (graph node, cost, edge position, offset on the snapped piece)


@dataclass(frozen=True)
class QueryGraph:
    """One vehicle graph with one query's edge weights: how a snapped point joins it, and Dijkstra on it."""

    road: RoadGraph
    graph: VehicleGraph
    weights: np.ndarray

    def partial(self, piece: int, start_m: float, end_m: float) -> tuple[float, int] | None:
        """Cost and edge position of driving piece `piece` from offset start_m to end_m."""
        graph, weights = self.graph, self.weights
        # standing still (a point snapped onto a node) needs no usable direction; prefer any open one
        options = [graph.piece_bwd] if end_m < start_m else [graph.piece_fwd]
        if end_m == start_m:
            options.append(graph.piece_bwd)
        for table in options:
            pos = int(table[piece])
            if pos >= 0 and np.isfinite(weights[pos]):
                return float(weights[pos]) * self.road.share(piece, start_m, end_m), pos
        if end_m == start_m:
            # at a node of a closed piece (an avoid area, a truck's limit): nothing of it is
            # driven, so the closure does not keep the point from leaving by the node
            for table in options:
                pos = int(table[piece])
                if pos >= 0:
                    return 0.0, pos
        return None

    def exits(self, origin: SnapPoint) -> list[Crossing]:
        """(node, cost, edge position, end offset) for leaving the start along its piece."""
        u, v = self.road.endpoints(origin.piece)
        out = []
        for node, end in ((v, float(self.road.piece_length[origin.piece])), (u, 0.0)):
            part = self.partial(origin.piece, origin.offset_m, end)
            if part is not None:
                out.append((node, part[0], part[1], end))
        return out

    def entries(self, dest: SnapPoint) -> list[Crossing]:
        """(node, cost, edge position, start offset) for reaching the destination along its piece."""
        u, v = self.road.endpoints(dest.piece)
        out = []
        for node, start in ((u, 0.0), (v, float(self.road.piece_length[dest.piece]))):
            part = self.partial(dest.piece, start, dest.offset_m)
            if part is not None:
                out.append((node, part[0], part[1], start))
        return out

    def dijkstra(self, exits: list[Crossing], limit: float, entries: list[Crossing]) -> tuple[np.ndarray, np.ndarray]:
        """Distances and predecessors from a virtual source node (index n_nodes) joined to the exits."""
        n, matrix = self.road.n_nodes, self.with_start(exits)
        while True:
            dist, pred = dijkstra(matrix, directed=True, indices=n, return_predecessors=True, limit=limit)
            best = min((dist[e[0]] + e[1] for e in entries), default=np.inf)
            # every node closer than `limit` is settled exactly; beyond it a better entry may hide
            if best <= limit or not np.isfinite(limit):
                return dist, pred
            limit = np.inf

    def reach(self, exits: list[Crossing], limit: float) -> np.ndarray:
        """Every node's cost from the start, one search bounded by `limit` (inf beyond it)."""
        return np.asarray(dijkstra(self.with_start(exits), directed=True, indices=self.road.n_nodes, limit=limit))

    def with_start(self, exits: list[Crossing]) -> csr_matrix:
        """The CSR graph with a virtual start node (index n_nodes) joined to the exits."""
        n, graph = self.road.n_nodes, self.graph
        indptr = np.append(graph.indptr, graph.indptr[-1] + len(exits))
        indices = np.append(graph.dst, np.array([e[0] for e in exits], dtype=np.int32))
        data = np.append(self.weights, [e[1] for e in exits])
        return csr_matrix((data, indices, indptr), shape=(n + 1, n + 1))

    def edge_between(self, a: int, b: int) -> int:
        graph = self.graph
        lo, hi = int(graph.indptr[a]), int(graph.indptr[a + 1])
        candidates = lo + np.flatnonzero(graph.dst[lo:hi] == b)
        return int(candidates[np.argmin(self.weights[candidates])])

    def stretch(self, pos: int, start_m: float, end_m: float) -> Stretch:
        road, graph = self.road, self.graph
        piece = int(road.a["edge_piece"][graph.edges[pos]])
        share = road.share(piece, start_m, end_m)
        return Stretch(piece, start_m, end_m, float(graph.duration_s[pos]) * share, int(graph.mode[pos]),
                       road.piece_name(piece))  # fmt: skip


def shortest_path(road: RoadGraph, vehicle: str, route_type: str, origin: SnapPoint, dest: SnapPoint,
                  radius_m: float = 0.0, *, bounded: bool = True,
                  closed_pieces: np.ndarray | None = None) -> PathResult | None:  # fmt: skip
    """The best path between two snapped points; None when none exists. `bounded`: try the
    limited search first (see the module doc); the benchmark compares both. `closed_pieces`:
    piece ids this query may not use in either direction (avoid areas, a truck's size)."""
    graph = road.vehicles[vehicle]
    weights = close_pieces(graph, query_weights(road, graph, route_type, origin, dest, radius_m), closed_pieces)
    query = QueryGraph(road, graph, weights)
    found = search(query, origin, dest, route_type, bounded)
    return None if found is None else assemble_path(road, found)


def query_weights(road: RoadGraph, graph: VehicleGraph, route_type: str, origin: SnapPoint, dest: SnapPoint,
                  radius_m: float) -> np.ndarray:  # fmt: skip
    """Edge weights for one query: emergency edges open only inside the radius discs."""
    base = graph.weights[route_type]
    if radius_m <= 0 or graph.emergency_centers is None:
        return base
    # a piece wholly inside a disc has its centre inside it: only those are tested
    ends = (origin.query_xyz, dest.query_xyz)
    near = np.unique(np.concatenate([graph.emergency_centers.query_ball_point(xyz, radius_m) for xyz in ends]))
    if len(near) == 0:
        return base
    near = near.astype(np.int64)
    pieces = road.a["edge_piece"][graph.edges[graph.emergency_pos[near]]]
    center, spread = road.piece_center[pieces], road.piece_radius[pieces]
    inside = np.zeros(len(near), dtype=bool)
    for xyz in ends:
        inside |= np.linalg.norm(center - np.asarray(xyz), axis=1) + spread <= radius_m
    weights = base.copy()
    weights[graph.emergency_pos[near[inside]]] = graph.emergency_weights[route_type][near[inside]]
    return weights


def close_pieces(graph: VehicleGraph, weights: np.ndarray, closed_pieces: np.ndarray | None) -> np.ndarray:
    """`weights` with the edges of `closed_pieces` infinite: a copy, the cached vector stays.
    O(closed pieces), not O(map): each piece has at most one edge per direction."""
    if closed_pieces is None or len(closed_pieces) == 0:
        return weights
    positions = np.concatenate([graph.piece_fwd[closed_pieces], graph.piece_bwd[closed_pieces]])
    closed = weights.copy()
    closed[positions[positions >= 0]] = np.inf
    return closed


def search(query: QueryGraph, origin: SnapPoint, dest: SnapPoint, route_type: str,
           bounded: bool) -> list[Stretch] | None:  # fmt: skip
    exits = query.exits(origin)
    entries = query.entries(dest)
    direct = None
    if origin.piece == dest.piece:
        direct = query.partial(origin.piece, origin.offset_m, dest.offset_m)
    limit = search_limit(origin, dest, route_type) if bounded else np.inf
    dist, pred = query.dijkstra(exits, limit, entries)
    best_cost, best_entry = np.inf, None
    for entry in entries:
        cost = dist[entry[0]] + entry[1]
        if cost < best_cost:
            best_cost, best_entry = cost, entry
    if direct is not None and direct[0] <= best_cost:
        return [query.stretch(direct[1], origin.offset_m, dest.offset_m)]
    if best_entry is None:
        return None
    return trace(query, pred, exits, best_entry, origin, dest)


def search_limit(origin: SnapPoint, dest: SnapPoint, route_type: str) -> float:
    crow = float(np.linalg.norm(np.subtract(origin.query_xyz, dest.query_xyz)))
    metres = LIMIT_DETOUR * crow + LIMIT_MARGIN_M + origin.distance_m + dest.distance_m
    return metres if route_type == "shortest" else metres / LIMIT_SPEED_MS


def trace(query: QueryGraph, pred: np.ndarray, exits: list[Crossing], entry: Crossing, origin: SnapPoint,
          dest: SnapPoint) -> list[Stretch]:  # fmt: skip
    """The stretches from the start, along the predecessors, to the destination."""
    road, graph = query.road, query.graph
    nodes = [entry[0]]
    while pred[nodes[-1]] != road.n_nodes:
        nodes.append(int(pred[nodes[-1]]))
    nodes.reverse()
    first = min((e for e in exits if e[0] == nodes[0]), key=lambda e: e[1])
    stretches = [query.stretch(first[2], origin.offset_m, first[3])]
    for a, b in itertools.pairwise(nodes):
        pos = query.edge_between(a, b)
        piece = int(road.a["edge_piece"][graph.edges[pos]])
        if piece < 0:
            continue  # zero-length barrier connector
        full = float(road.piece_length[piece])
        rev = bool(road.a["edge_reverse"][graph.edges[pos]])
        stretches.append(query.stretch(pos, full if rev else 0.0, 0.0 if rev else full))
    stretches.append(query.stretch(entry[2], entry[3], dest.offset_m))
    driven = [s for s in stretches if s.distance_m > 0]
    return driven or stretches[:1]
