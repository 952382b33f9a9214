"""Isochrones on the road graph: where the roads reachable within a time (or distance) lie.

One bounded Dijkstra from the snapped start gives every junction's cost; a point along a piece
costs the cheaper of arriving from either end (or, on the start's own piece, of driving straight
there). The area is then a grid over the reachable part: a cell belongs to the interval whose
cost its nearest road point has (the road /v1/route would snap it to, within the snapping
radius), so "inside the polygon" means "a route from the start reaches this point's road in
time". The cells of each interval are united (a coverage union of squares), simplified, and
each larger interval's polygon includes the smaller ones (nested by construction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely
from scipy.sparse.csgraph import dijkstra

from common.geo import METRES_PER_DEGREE
from route_service.graph_engine.prepare import RoadGraph, VehicleGraph, to_xyz
from route_service.graph_engine.region import BOUND_SLACK, WHOLE_MAP_SHARE, Ends, build_region, region_tiles
from route_service.graph_engine.search import QueryGraph
from route_service.graph_engine.snap import SampleTree, Snapper, SnapPoint
from route_service.graph_engine.tiles import sorted_lookup, spans
from route_service.graph_engine.weights import Weights

MAX_CELLS = 20_000  # 40 000 took 2.4x the time for a 15-minute Heidelberg area (bench/isochrone.py)
MIN_CELL_M = 40.0
HALF_DIAGONAL = math.sqrt(2) / 2
# Where a point may be snapped to (graph_engine.snap.PARTS_MIN_NODES). Without OSRM's large
# components, points by a forest network of 100-1000 junctions cut off from the centre's part
# were left out although OSRM routes them from the road behind (Heidelberg recall 96.0 %).
SNAPPED_TO = ("all", "main", "osrm-large")


@dataclass(frozen=True)
class Reach:
    """The cost from the start of the geometry points of every piece the search reached
    (`points`, sorted ids; finite beyond the limit along a piece leaving it, inf where the piece
    cannot be driven from its reached end): only those, not an array as long as the map."""

    points: np.ndarray
    cost: np.ndarray

    def exhausted_within(self, limits: list[float]) -> list[bool]:
        """Per limit, whether the search ran out of roads before it: no point reached, however
        far along a piece leaving the reached part, costs that much."""
        finite = self.cost[np.isfinite(self.cost)]
        highest = float(finite.max()) if len(finite) else 0.0
        return [highest < limit for limit in limits]

    def edge_within(self, limits: list[float], edge_points: np.ndarray) -> list[bool]:
        """Per limit, whether the area reaches a point where the loaded map cuts a road."""
        costs = self.cost_of(edge_points) if len(edge_points) else np.empty(0)
        cheapest = float(costs.min()) if len(costs) else np.inf
        return [cheapest <= limit for limit in limits]

    def cost_of(self, points: np.ndarray) -> np.ndarray:
        """The cost of any geometry points; inf for those of pieces the search did not reach."""
        return sorted_lookup(self.points, self.cost, points)


def reach(road: RoadGraph, graph: VehicleGraph, route_type: str, origin: SnapPoint, limit: float,
          timed: tuple[np.ndarray, np.ndarray] | None = None) -> Reach:  # fmt: skip
    """The search from the start within `limit` on the region that holds every path that cheap
    (`reached_nodes`), and the cost of each point of the pieces it reached. `timed`: the edge
    weights of rules by time at the departure (graph_engine.timed)."""
    query_weights = Weights(graph.weights[route_type])
    if timed is not None:
        query_weights = query_weights.with_values(*timed)
    weights = query_weights.dense()
    query = QueryGraph(road, graph, query_weights)
    nodes, node_cost = reached_nodes(query, origin, route_type, limit)
    # the pieces leaving a reached junction (along or against the way), and the start's own
    pos = spans(graph.indptr[nodes], graph.indptr[nodes + 1])
    pieces = np.unique(np.append(road.a["edge_piece"][graph.edges[pos]], origin.piece))
    pieces = pieces[pieces >= 0]
    ptr = road.a["geom_ptr"]
    points = spans(ptr[pieces], ptr[pieces + 1])
    piece = road.point_piece[points]
    length = np.maximum(road.piece_length[piece], 1e-9)
    offset = road.a["geom_cum"][points]
    forward = weight_of(graph.piece_fwd[piece], weights)
    backward = weight_of(graph.piece_bwd[piece], weights)
    from_u = along(sorted_lookup(nodes, node_cost, road.piece_u[piece]), forward, offset / length)
    from_v = along(sorted_lookup(nodes, node_cost, road.piece_v[piece]), backward, (length - offset) / length)
    cost = np.minimum(from_u, from_v)
    # the start's own piece: straight along it from the snapped point, either way it may go
    own = np.flatnonzero(piece == origin.piece)
    ahead = offset[own] >= origin.offset_m
    direct = along(np.zeros(len(own)), np.where(ahead, forward[own], backward[own]),
                   np.abs(offset[own] - origin.offset_m) / length[own])  # fmt: skip
    cost[own] = np.minimum(cost[own], direct)
    return Reach(points, cost)


def reached_nodes(query: QueryGraph, origin: SnapPoint, route_type: str, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """The junctions reached within `limit` (sorted ids) and their costs. Every path that cheap
    stays within `limit` times the vehicle's top speed of the snapped start (region: edges are
    never shorter than their chords), so Dijkstra runs on the tiles of that disc alone: the work
    follows the area, not the map (the whole graph's search made a 5-minute car isochrone 2.0-2.4x
    slower on 10 copies of Heidelberg than on one, bench/scale.py). A disc holding most of the
    map (a town) is searched as the whole graph, which is cheaper then."""
    exits = query.exits(origin)
    if not exits:
        return np.empty(0, dtype=np.int64), np.empty(0)
    assert query.graph.metres_per_cost is not None
    radius_m = limit * query.graph.metres_per_cost[route_type] / BOUND_SLACK
    start = to_xyz(np.array([origin.lat]), np.array([origin.lon]))[0]
    forced = query.road.tiles.node_tile[np.array([e[0] for e in exits], dtype=np.int64)]
    ends = Ends(start, start, 1.0, forced)
    chosen = region_tiles(query, ends, 2 * radius_m)  # the ellipse of a start and end alike: a disc
    tiles = query.road.tiles
    if int(np.sum(tiles.ptr[chosen + 1] - tiles.ptr[chosen])) > WHOLE_MAP_SHARE * query.road.n_nodes:
        node_cost = query.reach(exits, limit)[: query.road.n_nodes]  # the virtual start left out
        nodes = np.flatnonzero(np.isfinite(node_cost))
        return nodes, node_cost[nodes]
    region = build_region(query, chosen, exits, ends)
    k = len(region.nodes)
    dist = dijkstra(region.matrix, directed=True, indices=k, limit=limit)[:k]
    local = np.flatnonzero(np.isfinite(dist))
    nodes = region.nodes[local].astype(np.int64)
    order = np.argsort(nodes)
    return nodes[order], dist[local][order]


def along(start: np.ndarray, weight: np.ndarray, share: np.ndarray) -> np.ndarray:
    """`start` plus `share` of a piece's `weight`; inf where the piece cannot be driven that way
    (never NaN: an infinite weight times a zero share is not a cost)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(weight), start + weight * share, np.inf)


def weight_of(positions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weight of each edge position; inf where there is no edge (-1)."""
    found = np.full(len(positions), np.inf)
    usable = positions >= 0
    found[usable] = weights[positions[usable]]
    return found


def polygons(road: RoadGraph, snapper: Snapper, vehicle: str, reached: Reach, limits: list[float],
             snap_radius_m: float) -> list[shapely.Geometry]:  # fmt: skip
    """One (Multi)Polygon per limit, ascending and nested; empty where nothing is reached."""
    inside = reached.points[reached.cost <= max(limits)]
    if not len(inside):
        return [shapely.MultiPolygon() for _ in limits]
    lat, lon = road.a["geom_lat"][inside], road.a["geom_lon"][inside]
    # the grid reaches the snapping radius beyond the roads: a point that far from the last
    # reached road still routes from it
    pad_lat = snap_radius_m / METRES_PER_DEGREE
    pad_lon = pad_lat / math.cos(math.radians(float(lat.mean())))
    cell_m = cell_size(lat, lon, pad_lat, pad_lon)
    dlat = cell_m / METRES_PER_DEGREE
    dlon = dlat / math.cos(math.radians(float(lat.mean())))
    rows = np.arange(lat.min() - pad_lat, lat.max() + pad_lat + dlat, dlat)
    cols = np.arange(lon.min() - pad_lon, lon.max() + pad_lon + dlon, dlon)
    grid_lat, grid_lon = np.meshgrid(rows, cols, indexing="ij")
    centre_lat, centre_lon = grid_lat.ravel() + dlat / 2, grid_lon.ravel() + dlon / 2
    # a cell is inside when any of it may be: its centre's nearest road within the radius plus
    # half the cell's diagonal (the 15-minute areas missed 2-4 % of the points OSRM reaches
    # that lie in the last cell width of the snapping radius; bench/isochrone.py)
    cost = cell_costs(road, snapper, vehicle, reached, centre_lat, centre_lon, snap_radius_m + cell_m * HALF_DIAGONAL)
    # Never past the loaded data: over the sea or beyond the extract's edge (graph_engine.data_mask).
    cost[~road.data_mask.contains(centre_lat, centre_lon)] = np.inf
    shapes: list[shapely.Geometry] = []
    for limit in limits:
        chosen = cost <= limit
        boxes = shapely.box(grid_lon.ravel()[chosen], grid_lat.ravel()[chosen],
                            grid_lon.ravel()[chosen] + dlon, grid_lat.ravel()[chosen] + dlat)  # fmt: skip
        shape = shapely.coverage_union_all(boxes) if len(boxes) else shapely.MultiPolygon()
        shape = shapely.simplify(shape, min(dlat, dlon) / 2, preserve_topology=True)
        if shapes:
            shape = shapely.union(shape, shapes[-1])  # nested, whatever the simplification did
        shapes.append(shape)
    return shapes


def cell_size(lat: np.ndarray, lon: np.ndarray, pad_lat: float, pad_lon: float) -> float:
    """Metres per cell: at least MIN_CELL_M, coarse enough for at most MAX_CELLS cells."""
    height = (float(lat.max() - lat.min()) + 2 * pad_lat) * METRES_PER_DEGREE
    width = (float(lon.max() - lon.min()) + 2 * pad_lon) * METRES_PER_DEGREE * math.cos(math.radians(float(lat.mean())))
    return max(MIN_CELL_M, math.sqrt(height * width / MAX_CELLS))


def cell_costs(road: RoadGraph, snapper: Snapper, vehicle: str, reached: Reach, lat: np.ndarray, lon: np.ndarray,
               snap_radius_m: float) -> np.ndarray:  # fmt: skip
    """Each point's cost as a route from it would see it: that of its nearest road point, or of
    its nearest point on the main network or on OSRM's large components when that is cheaper
    (OSRM snaps both its nearest and its nearest large one and routes from the one that works,
    so a point by a cut-off piece routes from the main road behind it); inf beyond the radius."""
    xyz = to_xyz(lat, lon)
    costs = [
        nearest_cost(road, snapper.tree(vehicle, False, parts), reached, xyz, snap_radius_m) for parts in SNAPPED_TO
    ]
    return np.minimum.reduce(costs)


def nearest_cost(road: RoadGraph, tree: SampleTree | None, reached: Reach, xyz: np.ndarray, radius_m: float
                 ) -> np.ndarray:  # fmt: skip
    """The cost of each point's nearest road point in `tree` (inf: none within the radius)."""
    cost = np.full(len(xyz), np.inf)
    if tree is None:
        return cost
    kd, owner = tree
    dist, index = kd.query(xyz, k=1, distance_upper_bound=radius_m)
    found = np.isfinite(dist)
    g = owner[index[found]]
    a, b = road.geom_xyz[g], road.geom_xyz[g + 1]
    ab = b - a
    t = np.clip(((xyz[found] - a) * ab).sum(axis=1) / np.maximum((ab * ab).sum(axis=1), 1e-9), 0.0, 1.0)
    # between the segment's two geometry points (the known one where the other is not)
    first, second = reached.cost_of(g), reached.cost_of(g + 1)
    known = np.isfinite(first) & np.isfinite(second)
    with np.errstate(invalid="ignore"):
        cost[found] = np.where(known, first + (second - first) * t, np.minimum(first, second))
    return cost
