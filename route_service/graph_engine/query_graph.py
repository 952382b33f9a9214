"""One vehicle graph with one query's edge weights (`weights.Weights`): how a snapped point
joins the graph, and scipy's Dijkstra on the whole of it from a virtual start node."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from route_service.graph_engine.path import Stretch
from route_service.graph_engine.prepare import RoadGraph, VehicleGraph
from route_service.graph_engine.snap import SnapPoint
from route_service.graph_engine.tiles import spans
from route_service.graph_engine.weights import Weights

Crossing = tuple[int, float, int, float]  # (graph node, cost, edge position, offset on the snapped piece)


@dataclass(frozen=True)
class Found:
    """A search's best path through junctions: its cost, the entry to the destination's piece
    it ends with (None: no path), and its graph nodes from the first after the start."""

    cost: float
    entry: Crossing | None
    nodes: list[int]


@dataclass(frozen=True)
class QueryGraph:
    """One vehicle graph with one query's edge weights: how a snapped point joins it, and Dijkstra on it."""

    road: RoadGraph
    graph: VehicleGraph
    weights: Weights

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
                return weights[pos] * self.road.share(piece, start_m, end_m), pos
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
        """The whole CSR graph with a virtual start node (index n_nodes) joined to the exits."""
        n, graph = self.road.n_nodes, self.graph
        indptr = np.append(graph.indptr, graph.indptr[-1] + len(exits))
        indices = np.append(graph.dst, np.array([e[0] for e in exits], dtype=np.int32))
        data = np.append(self.weights.dense(), [e[1] for e in exits])
        return csr_matrix((data, indices, indptr), shape=(n + 1, n + 1))

    def edges_along(self, nodes: list[int]) -> np.ndarray:
        """The position of the cheapest edge from each node of the path to the next (the first
        of equally cheap ones), all in a few array operations rather than a search per step."""
        graph = self.graph
        a, b = np.asarray(nodes[:-1], dtype=np.int64), np.asarray(nodes[1:], dtype=np.int64)
        first = graph.indptr[a].astype(np.int64)
        count = graph.indptr[a + 1] - first
        step = np.repeat(np.arange(len(a)), count)
        pos = spans(first, first + count)
        weight = np.where(graph.dst[pos] == b[step], self.weights.take(pos), np.inf)
        order = np.lexsort((weight, step))  # by step, then weight; stable, so ties keep edge order
        _, best = np.unique(step[order], return_index=True)
        return np.asarray(pos[order[best]])

    def stretch(self, pos: int, start_m: float, end_m: float) -> Stretch:
        road, graph = self.road, self.graph
        piece = int(road.a["edge_piece"][graph.edges[pos]])
        share = road.share(piece, start_m, end_m)
        return Stretch(piece, start_m, end_m, float(graph.duration_s[pos]) * share, int(graph.mode[pos]),
                       road.piece_name(piece))  # fmt: skip
