"""The shortest path between two snapped points, with scipy's C Dijkstra.

Per query, the edge weights of one vehicle graph are a cached base vector in which
emergency-only edges are infinite, with a few overrides (`weights.Weights`): for
`radius_m > 0` the emergency edges whose whole geometry lies within `radius_m` of the start or
the destination get a finite weight, and closed pieces an infinite one. The search runs on the
region around the start and the destination (`region`), which proves its answer the best of
the whole graph; when it cannot, Dijkstra runs on the whole graph from a virtual source node
(the snapped start lies inside an edge), first with a distance limit derived from the
straight-line distance, falling back to an unlimited search when the target lies beyond it (a
settled node's distance is exact, so the limit never changes the answer).
"""

from __future__ import annotations

import numpy as np

from route_service.graph_engine.path import PathResult, Stretch, assemble_path
from route_service.graph_engine.prepare import RoadGraph, VehicleGraph
from route_service.graph_engine.query_graph import Crossing, Found, QueryGraph
from route_service.graph_engine.region import local_search
from route_service.graph_engine.snap import SnapPoint
from route_service.graph_engine.weights import Weights

__all__ = ["Crossing", "QueryGraph", "close_pieces", "query_weights", "shortest_path"]

# Initial Dijkstra limit: most road routes are shorter than twice the straight line plus a margin.
LIMIT_DETOUR = 2.0
LIMIT_MARGIN_M = 3000.0
LIMIT_SPEED_MS = 30 / 3.6  # slow average speed, so the time limit is generous too


def shortest_path(road: RoadGraph, vehicle: str, route_type: str, origin: SnapPoint, dest: SnapPoint,
                  radius_m: float = 0.0, *, bounded: bool = True,
                  closed_pieces: np.ndarray | None = None,
                  timed: tuple[np.ndarray, np.ndarray] | None = None) -> PathResult | None:  # fmt: skip
    """The best path between two snapped points; None when none exists. `bounded`: the region
    search first, then the limited search on the whole graph (see the module doc); without it
    the unlimited search on the whole graph, the reference the tests and the benchmark compare
    with. `closed_pieces`: piece ids this query may not use in either direction (avoid areas, a
    truck's size). `timed`: (edge positions, weights) of the rules by time at the query's time
    (graph_engine.timed), under the closures."""
    graph = road.vehicles[vehicle]
    weights = query_weights(road, graph, route_type, origin, dest, radius_m)
    if timed is not None:
        weights = weights.with_values(*timed)
    weights = close_pieces(graph, weights, closed_pieces)
    query = QueryGraph(road, graph, weights)
    found = search(query, origin, dest, route_type, bounded)
    return None if found is None else assemble_path(road, found)


def query_weights(road: RoadGraph, graph: VehicleGraph, route_type: str, origin: SnapPoint, dest: SnapPoint,
                  radius_m: float) -> Weights:  # fmt: skip
    """Edge weights for one query: emergency edges open only inside the radius discs."""
    base = Weights(graph.weights[route_type])
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
    opened = near[inside]
    return base.with_values(graph.emergency_pos[opened], graph.emergency_weights[route_type][opened])


def close_pieces(graph: VehicleGraph, weights: Weights, closed_pieces: np.ndarray | None) -> Weights:
    """`weights` with the edges of `closed_pieces` infinite (overrides; the cached vector stays).
    O(closed pieces), not O(map): each piece has at most one edge per direction."""
    if closed_pieces is None or len(closed_pieces) == 0:
        return weights
    positions = np.concatenate([graph.piece_fwd[closed_pieces], graph.piece_bwd[closed_pieces]])
    positions = positions[positions >= 0]
    return weights.with_values(positions, np.inf)


def search(query: QueryGraph, origin: SnapPoint, dest: SnapPoint, route_type: str,
           bounded: bool) -> list[Stretch] | None:  # fmt: skip
    exits = query.exits(origin)
    entries = query.entries(dest)
    direct = None
    if origin.piece == dest.piece:
        direct = query.partial(origin.piece, origin.offset_m, dest.offset_m)
    direct_cost = np.inf if direct is None else direct[0]
    found = local_search(query, origin, dest, route_type, exits, entries, direct_cost) if bounded else None
    if found is None:
        found = whole_graph_search(query, origin, dest, route_type, exits, entries, bounded)
    if direct is not None and direct[0] <= found.cost:
        return [query.stretch(direct[1], origin.offset_m, dest.offset_m)]
    if found.entry is None:
        return None
    return trace(query, found, exits, origin, dest)


def whole_graph_search(query: QueryGraph, origin: SnapPoint, dest: SnapPoint, route_type: str,
                       exits: list[Crossing], entries: list[Crossing], bounded: bool) -> Found:  # fmt: skip
    """Dijkstra on the whole graph: work proportional to the map, the region search's fallback."""
    limit = search_limit(origin, dest, route_type) if bounded else np.inf
    dist, pred = query.dijkstra(exits, limit, entries)
    best_cost, best_entry = np.inf, None
    for entry in entries:
        cost = dist[entry[0]] + entry[1]
        if cost < best_cost:
            best_cost, best_entry = float(cost), entry
    if best_entry is None:
        return Found(np.inf, None, [])
    nodes = [best_entry[0]]
    while pred[nodes[-1]] != query.road.n_nodes:
        nodes.append(int(pred[nodes[-1]]))
    return Found(best_cost, best_entry, nodes[::-1])


def search_limit(origin: SnapPoint, dest: SnapPoint, route_type: str) -> float:
    crow = float(np.linalg.norm(np.subtract(origin.query_xyz, dest.query_xyz)))
    metres = LIMIT_DETOUR * crow + LIMIT_MARGIN_M + origin.distance_m + dest.distance_m
    return metres if route_type == "shortest" else metres / LIMIT_SPEED_MS


def trace(query: QueryGraph, found: Found, exits: list[Crossing], origin: SnapPoint,
          dest: SnapPoint) -> list[Stretch]:  # fmt: skip
    """The stretches from the start, through the found nodes, to the destination."""
    road, graph, nodes, entry = query.road, query.graph, found.nodes, found.entry
    assert entry is not None
    first = min((e for e in exits if e[0] == nodes[0]), key=lambda e: e[1])
    stretches = [query.stretch(first[2], origin.offset_m, first[3])]
    for pos in query.edges_along(nodes).tolist():
        piece = int(road.a["edge_piece"][graph.edges[pos]])
        if piece < 0:
            continue  # zero-length barrier connector
        full = float(road.piece_length[piece])
        rev = bool(road.a["edge_reverse"][graph.edges[pos]])
        stretches.append(query.stretch(pos, full if rev else 0.0, 0.0 if rev else full))
    stretches.append(query.stretch(entry[2], entry[3], dest.offset_m))
    driven = [s for s in stretches if s.distance_m > 0]
    return driven or stretches[:1]
