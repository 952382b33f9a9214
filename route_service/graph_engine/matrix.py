"""One-to-many costs (a matrix row): one unlimited Dijkstra from the start, then both metrics
for every destination. The search minimises one metric (duration for `fastest`, distance for
`shortest`); the other is summed along the shortest-path tree."""

from __future__ import annotations

import numpy as np

from route_service.graph_engine.prepare import RoadGraph
from route_service.graph_engine.search import Crossing, QueryGraph, close_pieces
from route_service.graph_engine.snap import SnapPoint
from route_service.graph_engine.weights import Weights

Cell = tuple[float, float]  # (duration s, distance m)


def one_to_many(road: RoadGraph, vehicle: str, route_type: str, origin: SnapPoint,
                dests: list[SnapPoint], closed_pieces: np.ndarray | None = None) -> list[Cell | None]:  # fmt: skip
    """(duration s, distance m) from one start to many destinations (None: unreachable),
    never through `closed_pieces`."""
    graph = road.vehicles[vehicle]
    query = QueryGraph(road, graph, close_pieces(graph, Weights(graph.weights[route_type]), closed_pieces))
    exits = query.exits(origin)
    dist, pred = query.dijkstra(exits, np.inf, [])
    other = graph.length_m if route_type == "fastest" else graph.duration_s
    secondary = tree_sums(query, other, dist, pred, exits, origin)
    return [matrix_cell(query, other, dist, secondary, origin, d, route_type) for d in dests]


def tree_sums(query: QueryGraph, other: np.ndarray, dist: np.ndarray, pred: np.ndarray, exits: list[Crossing],
              origin: SnapPoint) -> np.ndarray:  # fmt: skip
    """The secondary metric (distance or duration) along the shortest-path tree, for every node."""
    road, graph = query.road, query.graph
    n = road.n_nodes
    src = np.repeat(np.arange(n), np.diff(graph.indptr))
    weights = query.weights.dense()
    tight = (pred[graph.dst] == src) & np.isclose(dist[src] + weights, dist[graph.dst], rtol=1e-9, atol=1e-6)
    step = np.zeros(n + 1)
    order = np.flatnonzero(tight)
    step[graph.dst[order[::-1]]] = other[order[::-1]]  # any tight edge into a node will do
    for node, cost, pos, end in exits:
        if pred[node] == n and np.isclose(cost, dist[node]):
            step[node] = other[pos] * road.share(origin.piece, origin.offset_m, end)
    parent = np.where(pred >= 0, pred, n).astype(np.int64)
    parent[n] = n
    total = step.copy()
    # pointer jumping: after k rounds every node holds the sum over its 2**k nearest ancestors
    # (the root n carries 0, so adding it is harmless)
    while np.any(parent != n):
        total = total + total[parent]
        parent = parent[parent]
    return total


def matrix_cell(query: QueryGraph, other: np.ndarray, dist: np.ndarray, secondary: np.ndarray, origin: SnapPoint,
                dest: SnapPoint, route_type: str) -> Cell | None:  # fmt: skip
    """The cheaper of reaching `dest` through the tree or, on the start's piece, directly."""
    road = query.road
    candidates = []
    for node, cost, pos, start in query.entries(dest):
        share = road.share(dest.piece, start, dest.offset_m)
        candidates.append((dist[node] + cost, secondary[node] + other[pos] * share))
    if origin.piece == dest.piece:
        direct = query.partial(origin.piece, origin.offset_m, dest.offset_m)
        if direct is not None:
            share = road.share(origin.piece, origin.offset_m, dest.offset_m)
            candidates.append((direct[0], other[direct[1]] * share))
    best: Cell | None = None
    for primary, second in candidates:
        if np.isfinite(primary) and (best is None or primary < best[0]):
            best = (float(primary), float(second))
    if best is None:
        return None
    return best if route_type == "fastest" else (best[1], best[0])
