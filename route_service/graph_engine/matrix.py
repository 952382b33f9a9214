"""One-to-many costs (a matrix row): one unlimited Dijkstra from the start, then both metrics
for every destination. The search minimises one metric (duration for `fastest`, distance for
`shortest`); the other is summed along the shortest-path tree."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from route_service.graph_engine.prepare import RoadGraph
from route_service.graph_engine.search import Crossing, QueryGraph, close_pieces
from route_service.graph_engine.snap import SnapPoint
from route_service.graph_engine.weights import Weights

Cell = tuple[float, float]  # (duration s, distance m)


@dataclass(frozen=True)
class TimedWeights:
    """A matrix's rules by time: overrides (edge positions, weights) of the searched metric,
    and of the durations (the same as `searched` for `fastest`)."""

    searched: tuple[np.ndarray, np.ndarray]
    durations: tuple[np.ndarray, np.ndarray]


def one_to_many(road: RoadGraph, vehicle: str, route_type: str, origin: SnapPoint,
                dests: list[SnapPoint], closed_pieces: np.ndarray | None = None,
                timed: TimedWeights | None = None, both: bool = True) -> list[Cell | None]:  # fmt: skip
    """(duration s, distance m) from one start to many destinations (None: unreachable),
    never through `closed_pieces`. `timed`: the rules by time at the matrix's departure, as
    overrides of the searched weights and of the durations (graph_engine.timed.matrix_overrides).
    `both` False: only the searched metric is wanted, the other is answered as 0 (summing it
    along the tree was a third of a row's time, bench/RESULTS.md `time_rules`)."""
    graph = road.vehicles[vehicle]
    weights = Weights(graph.weights[route_type])
    other = graph.length_m if route_type == "fastest" else graph.duration_s
    if timed is not None:
        weights = weights.with_values(*timed.searched)
        if route_type == "shortest":  # the durations summed along the tree are the rules' too
            other = Weights(other).with_values(*timed.durations).dense()
    query = QueryGraph(road, graph, close_pieces(graph, weights, closed_pieces))
    exits = query.exits(origin)
    dist, pred = query.dijkstra(exits, np.inf, [])
    if not both:
        other = np.zeros(len(other))
        secondary = np.zeros(road.n_nodes + 1)
    else:
        secondary = tree_sums(query, other, dist, pred, exits, origin)
    return matrix_cells(query, other, dist, secondary, origin, dests, route_type)


def matrix_cells(query: QueryGraph, other: np.ndarray, dist: np.ndarray, secondary: np.ndarray, origin: SnapPoint,
                 dests: list[SnapPoint], route_type: str) -> list[Cell | None]:  # fmt: skip
    """Every destination's cell at once: the cheaper of entering its piece from either end
    (array operations; a Python call per destination was half a row's time, 100 x 100 on
    Heidelberg), and for a destination on the start's own piece the direct way too."""
    if not dests:
        return []
    road, graph = query.road, query.graph
    piece = np.array([d.piece for d in dests], dtype=np.int64)
    offset = np.array([d.offset_m for d in dests], dtype=np.float64)
    length = road.piece_length[piece]
    safe = np.where(length > 0, length, 1.0)
    u_part, v_part = np.where(length > 0, offset / safe, 0.0), np.where(length > 0, (length - offset) / safe, 0.0)
    fwd, bwd = graph.piece_fwd[piece].astype(np.int64), graph.piece_bwd[piece].astype(np.int64)
    costs = query.weights.take(np.maximum(fwd, 0)), query.weights.take(np.maximum(bwd, 0))
    best_primary = np.full(len(dests), np.inf)
    best_other = np.zeros(len(dests))
    # from the piece's start along it (forward), then from its end against it (backward)
    for node, part, pos, cost, at_node in ((road.piece_u[piece], u_part, fwd, costs[0], offset <= 0),
                                           (road.piece_v[piece], v_part, bwd, costs[1], offset >= length)):  # fmt: skip
        usable = (pos >= 0) & np.isfinite(cost)
        # standing at the node: nothing of the piece is driven, any direction will do
        usable = np.where(at_node, (fwd >= 0) | (bwd >= 0), usable)
        with np.errstate(invalid="ignore"):  # a closed direction's inf x 0 at a node: not used
            primary = np.where(usable, dist[node] + np.where(at_node, 0.0, cost * part), np.inf)
        second = secondary[node] + np.where(at_node | (pos < 0), 0.0, other[np.maximum(pos, 0)] * part)
        better = np.isfinite(primary) & (primary < best_primary)
        best_primary = np.where(better, primary, best_primary)
        best_other = np.where(better, second, best_other)
    cells: list[Cell | None] = []
    for index, dest in enumerate(dests):
        best: Cell | None = None if not np.isfinite(best_primary[index]) else \
            (float(best_primary[index]), float(best_other[index]))  # fmt: skip
        if dest.piece == origin.piece:
            best = direct_cell(query, other, origin, dest, best)
        cells.append(best if best is None or route_type == "fastest" else (best[1], best[0]))
    return cells


def direct_cell(query: QueryGraph, other: np.ndarray, origin: SnapPoint, dest: SnapPoint,
                best: Cell | None) -> Cell | None:  # fmt: skip
    direct = query.partial(origin.piece, origin.offset_m, dest.offset_m)
    if direct is None:
        return best
    cell = (direct[0], float(other[direct[1]] * query.road.share(origin.piece, origin.offset_m, dest.offset_m)))
    return cell if np.isfinite(cell[0]) and (best is None or cell[0] < best[0]) else best


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
