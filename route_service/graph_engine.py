"""Shortest paths on the exported road graph (`graph_build`), pure numpy/scipy.

Per query, the edge weights of one vehicle graph are a copy of a cached base vector in
which emergency-only edges are infinite; for `radius_m > 0` the emergency edges whose
whole geometry lies within `radius_m` of the start or the destination get a finite weight.
scipy's C Dijkstra then runs from a virtual source node appended to the CSR graph (the
snapped start lies inside an edge), first with a distance limit derived from the
straight-line distance, falling back to an unlimited search when the target lies beyond it
(a settled node's distance is exact, so the limit never changes the answer).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, dijkstra
from scipy.spatial import cKDTree

from route_service.graph_build import (
    EARTH_RADIUS_M,
    EMERGENCY_MAX_KMH,
    GRAPH_FILE,
    MODE_EMERGENCY_ACCESS,
    MODE_EMERGENCY_ONEWAY,
    MODE_YES,
    REASONS,
    VEHICLES,
)

ROUTE_TYPES = ("fastest", "shortest")
SAMPLE_SPACING_M = 20.0  # snapping samples along long segments, so the nearest sample is near the nearest segment
SNAP_CANDIDATES = 8
SMALL_COMPONENT_NODES = 100  # junctions; smaller strongly connected parts are not snapped to
# Initial Dijkstra limit: most road routes are shorter than twice the straight line plus a margin.
LIMIT_DETOUR = 2.0
LIMIT_MARGIN_M = 3000.0
LIMIT_SPEED_MS = 30 / 3.6  # slow average speed, so the time limit is generous too


def to_xyz(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Earth-centred coordinates in metres: chord distance equals straight-line distance."""
    phi, lam = np.radians(lat), np.radians(lon)
    cos_phi = np.cos(phi)
    return np.column_stack([cos_phi * np.cos(lam), cos_phi * np.sin(lam), np.sin(phi)]) * EARTH_RADIUS_M


@dataclass(frozen=True)
class SnapPoint:
    """A point on a piece of road: `offset_m` from the piece's first geometry point."""

    piece: int
    offset_m: float
    lat: float
    lon: float
    distance_m: float  # from the query point
    query_xyz: tuple[float, float, float]


@dataclass(frozen=True)
class Stretch:
    """Part of one piece driven from `start_m` to `end_m` (decreasing when against the way)."""

    piece: int
    start_m: float
    end_m: float
    duration_s: float
    mode: int
    name: str

    @property
    def distance_m(self) -> float:
        return abs(self.end_m - self.start_m)


@dataclass
class PathResult:
    distance_m: float
    duration_s: float
    geometry: list[tuple[float, float]]  # (lon, lat)
    stretches: list[Stretch]
    spans: list[tuple[int, int]]  # geometry index range of each stretch
    emergency: list[tuple[int, int, float, str]] = field(default_factory=list)  # start, end, metres, reason


@dataclass
class VehicleGraph:
    """The edges one vehicle may ever use, as a CSR graph with cached weight vectors."""

    edges: np.ndarray  # global edge ids, sorted by source node
    indptr: np.ndarray
    dst: np.ndarray
    weights: dict[str, np.ndarray]  # route type -> base weights (emergency edges infinite)
    emergency_weights: dict[str, np.ndarray]  # route type -> weights of the emergency edges
    emergency_pos: np.ndarray  # positions (into edges) of emergency-only edges
    duration_s: np.ndarray
    length_m: np.ndarray
    mode: np.ndarray
    piece_fwd: np.ndarray  # piece -> position of its edge along the way (-1: none)
    piece_bwd: np.ndarray  # piece -> position of its edge against the way


class GraphEngine:
    """Routing on one dataset's graph arrays. Thread-safe: queries never mutate shared arrays."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.a = {key: np.asarray(value) for key, value in arrays.items()}
        self.n_nodes = len(self.a["node_lat"])
        self.names = [str(n) for n in self.a["names"]]
        self._init_pieces()
        self.vehicles = {vehicle: self._vehicle_graph(vehicle) for vehicle in VEHICLES}
        self._trees: dict[tuple[str, bool], tuple[cKDTree, np.ndarray] | None] = {}
        self._tree_lock = threading.Lock()
        self.use_limit = True  # bounded search first (see module doc); the benchmark compares both

    @classmethod
    def load(cls, graph_dir: Path) -> GraphEngine:
        with np.load(graph_dir / GRAPH_FILE, allow_pickle=False) as data:
            return cls({key: data[key] for key in data.files})

    def piece_name(self, piece: int) -> str:
        return self.names[int(self.a["piece_name"][piece])]

    # ------------------------------------------------------------ preparation

    def _init_pieces(self) -> None:
        ptr = self.a["geom_ptr"]
        self.n_pieces = len(ptr) - 1
        sizes = np.diff(ptr)
        self.geom_xyz = to_xyz(self.a["geom_lat"], self.a["geom_lon"])
        self.point_piece = np.repeat(np.arange(self.n_pieces), sizes)
        self.piece_length = self.a["geom_cum"][ptr[1:] - 1]
        # bounding ball of each piece: the emergency radius test is "ball inside the disc"
        center = np.add.reduceat(self.geom_xyz, ptr[:-1], axis=0) / sizes[:, None]
        spread = np.linalg.norm(self.geom_xyz - center[self.point_piece], axis=1)
        self.piece_center = center
        self.piece_radius = np.maximum.reduceat(spread, ptr[:-1])
        forward = (self.a["edge_piece"] >= 0) & ~self.a["edge_reverse"]
        self.piece_u = np.zeros(self.n_pieces, dtype=np.int64)
        self.piece_v = np.zeros(self.n_pieces, dtype=np.int64)
        self.piece_u[self.a["edge_piece"][forward]] = self.a["edge_src"][forward]
        self.piece_v[self.a["edge_piece"][forward]] = self.a["edge_dst"][forward]

    def _vehicle_graph(self, vehicle: str) -> VehicleGraph:
        mode_all = self.a[f"mode_{vehicle}"]
        edges = np.flatnonzero(mode_all > 0)
        mode = mode_all[edges]
        length = self.a["edge_length"][edges]
        speed = self.a[f"speed_{vehicle}"][edges].astype(np.float64)
        emergency = mode != MODE_YES
        speed = np.where(emergency, np.minimum(speed, EMERGENCY_MAX_KMH), speed)
        duration = length / np.maximum(speed, 1.0) * 3.6
        indptr = np.concatenate([[0], np.cumsum(np.bincount(self.a["edge_src"][edges], minlength=self.n_nodes))])
        full = {"fastest": duration, "shortest": length}
        piece = self.a["edge_piece"][edges]
        reverse = self.a["edge_reverse"][edges]
        piece_dir = [np.full(self.n_pieces, -1, dtype=np.int64) for _ in range(2)]
        for flag, table in ((False, piece_dir[0]), (True, piece_dir[1])):
            mask = (piece >= 0) & (reverse == flag)
            table[piece[mask]] = np.flatnonzero(mask)
        return VehicleGraph(
            edges=edges,
            indptr=indptr.astype(np.int32),
            dst=self.a["edge_dst"][edges].astype(np.int32),
            weights={t: np.where(emergency, np.inf, w) for t, w in full.items()},
            emergency_weights={t: w[emergency] for t, w in full.items()},
            emergency_pos=np.flatnonzero(emergency),
            duration_s=duration,
            length_m=length,
            mode=mode,
            piece_fwd=piece_dir[0],
            piece_bwd=piece_dir[1],
        )

    def _tree(self, vehicle: str, emergency: bool) -> tuple[cKDTree, np.ndarray] | None:
        """KD-tree of samples along the pieces `vehicle` can use normally (or only in emergencies)."""
        key = (vehicle, emergency)
        with self._tree_lock:
            if key not in self._trees:
                self._trees[key] = self._build_tree(vehicle, emergency)
            return self._trees[key]

    def _build_tree(self, vehicle: str, emergency: bool) -> tuple[cKDTree, np.ndarray] | None:
        graph = self.vehicles[vehicle]
        pieces = self.a["edge_piece"][graph.edges]
        normal = np.zeros(self.n_pieces + 1, dtype=bool)
        anyuse = np.zeros(self.n_pieces + 1, dtype=bool)
        normal[pieces[graph.mode == MODE_YES]] = True  # index -1 (barrier connectors) lands in the spare slot
        anyuse[pieces] = True
        main = self._main_nodes(graph)
        u_main, v_main = main[self.piece_u], main[self.piece_v]
        # an emergency-only piece is useful when it touches the main network at one end
        wanted = (anyuse & ~normal)[:-1] & (u_main | v_main) if emergency else normal[:-1] & u_main & v_main
        ptr = self.a["geom_ptr"]
        seg = np.flatnonzero(wanted[self.point_piece])
        seg = seg[seg + 1 < ptr[self.point_piece[seg] + 1]]  # a segment starts at every point but a piece's last
        if len(seg) == 0:
            return None
        seg_len = np.diff(self.a["geom_cum"])[seg]
        count = np.maximum(1, np.ceil(seg_len / SAMPLE_SPACING_M)).astype(np.int64)
        owner = np.repeat(seg, count)
        frac = (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)) / np.repeat(count, count)
        start, end = self.geom_xyz[owner], self.geom_xyz[owner + 1]
        samples = start + (end - start) * frac[:, None]
        return cKDTree(samples), owner

    def _main_nodes(self, graph: VehicleGraph) -> np.ndarray:
        """Nodes in a large strongly connected part of the normal network. Snapping only to
        these keeps a start off a parking aisle or a fragment cut by the extract's boundary
        from which nothing is reachable (OSRM does the same with its small components)."""
        n = self.n_nodes
        usable = np.isfinite(graph.weights["shortest"])
        src = np.repeat(np.arange(n), np.diff(graph.indptr))[usable]
        matrix = csr_matrix((np.ones(len(src)), (src, graph.dst[usable])), shape=(n, n))
        _, labels = connected_components(matrix, directed=True, connection="strong")
        sizes = np.bincount(labels)
        # in a tiny network (a test, a village) "small" is relative to the largest part
        threshold = min(SMALL_COMPONENT_NODES, max(2, int(sizes.max()) // 4))
        return np.asarray(sizes[labels] >= threshold)

    # ------------------------------------------------------------ snapping

    def snap(self, vehicle: str, lat: float, lon: float, *, max_distance_m: float,
             radius_m: float = 0.0) -> SnapPoint | None:  # fmt: skip
        """Nearest point on a road `vehicle` may use; with a radius also on emergency-only roads
        that lie entirely within it. None when nothing lies within `max_distance_m`."""
        point = to_xyz(np.array([lat]), np.array([lon]))[0]
        best = self._snap_tree(vehicle, False, point, max_distance_m, 0.0)
        if radius_m > 0:
            relaxed = self._snap_tree(vehicle, True, point, max_distance_m, radius_m)
            if relaxed is not None and (best is None or relaxed.distance_m < best.distance_m):
                best = relaxed
        return best

    def _snap_tree(self, vehicle: str, emergency: bool, point: np.ndarray, max_distance_m: float,
                   radius_m: float) -> SnapPoint | None:  # fmt: skip
        tree = self._tree(vehicle, emergency)
        if tree is None:
            return None
        kd, owner = tree
        dist, idx = kd.query(point, k=SNAP_CANDIDATES, distance_upper_bound=max_distance_m + SAMPLE_SPACING_M)
        segs = np.unique(owner[idx[np.isfinite(dist)]])
        if emergency:
            pieces = self.point_piece[segs]
            inside = np.linalg.norm(self.piece_center[pieces] - point, axis=1) + self.piece_radius[pieces] <= radius_m
            segs = segs[inside]
        if len(segs) == 0:
            return None
        return self._project(segs, point, max_distance_m)

    def _project(self, segs: np.ndarray, point: np.ndarray, max_distance_m: float) -> SnapPoint | None:
        a, b = self.geom_xyz[segs], self.geom_xyz[segs + 1]
        ab = b - a
        denom = np.maximum((ab * ab).sum(axis=1), 1e-9)
        t = np.clip(((point - a) * ab).sum(axis=1) / denom, 0.0, 1.0)
        dist = np.linalg.norm(a + ab * t[:, None] - point, axis=1)
        i = int(np.argmin(dist))
        if dist[i] > max_distance_m:
            return None
        g, frac = int(segs[i]), float(t[i])
        cum, lat, lon = self.a["geom_cum"], self.a["geom_lat"], self.a["geom_lon"]
        return SnapPoint(
            piece=int(self.point_piece[g]),
            offset_m=float(cum[g] + frac * (cum[g + 1] - cum[g])),
            lat=float(lat[g] + frac * (lat[g + 1] - lat[g])),
            lon=float(lon[g] + frac * (lon[g + 1] - lon[g])),
            distance_m=float(dist[i]),
            query_xyz=(float(point[0]), float(point[1]), float(point[2])),
        )

    # ------------------------------------------------------------ weights

    def query_weights(self, vehicle: str, route_type: str, origin: SnapPoint, dest: SnapPoint,
                      radius_m: float) -> np.ndarray:  # fmt: skip
        """Edge weights for one query: emergency edges open only inside the radius discs."""
        graph = self.vehicles[vehicle]
        base = graph.weights[route_type]
        if radius_m <= 0 or len(graph.emergency_pos) == 0:
            return base
        pieces = self.a["edge_piece"][graph.edges[graph.emergency_pos]]
        center, spread = self.piece_center[pieces], self.piece_radius[pieces]
        inside = np.zeros(len(pieces), dtype=bool)
        for xyz in (origin.query_xyz, dest.query_xyz):
            inside |= np.linalg.norm(center - np.asarray(xyz), axis=1) + spread <= radius_m
        weights = base.copy()
        weights[graph.emergency_pos[inside]] = graph.emergency_weights[route_type][inside]
        return weights

    # ------------------------------------------------------------ search

    def _partial(self, graph: VehicleGraph, weights: np.ndarray, piece: int, start_m: float,
                 end_m: float) -> tuple[float, int] | None:  # fmt: skip
        """Cost and edge position of driving piece `piece` from offset start_m to end_m."""
        length = float(self.piece_length[piece])
        # standing still (a point snapped onto a node) needs no usable direction; prefer any open one
        options = [graph.piece_bwd] if end_m < start_m else [graph.piece_fwd]
        if end_m == start_m:
            options.append(graph.piece_bwd)
        for table in options:
            pos = int(table[piece])
            if pos >= 0 and np.isfinite(weights[pos]):
                return float(weights[pos]) * (abs(end_m - start_m) / length if length > 0 else 0.0), pos
        return None

    def _endpoints(self, piece: int) -> tuple[int, int]:
        """Graph nodes at the start and end of a piece."""
        return int(self.piece_u[piece]), int(self.piece_v[piece])

    def shortest_path(self, vehicle: str, route_type: str, origin: SnapPoint, dest: SnapPoint,
                      radius_m: float = 0.0) -> PathResult | None:  # fmt: skip
        """The best path between two snapped points; None when none exists."""
        graph = self.vehicles[vehicle]
        weights = self.query_weights(vehicle, route_type, origin, dest, radius_m)
        found = self._search(graph, weights, origin, dest, route_type)
        if found is None:
            return None
        return self._assemble(found)

    def _exits(
        self, graph: VehicleGraph, weights: np.ndarray, origin: SnapPoint
    ) -> list[tuple[int, float, int, float]]:
        """(node, cost, edge position, end offset) for leaving the start along its piece."""
        u, v = self._endpoints(origin.piece)
        out = []
        for node, end in ((v, float(self.piece_length[origin.piece])), (u, 0.0)):
            part = self._partial(graph, weights, origin.piece, origin.offset_m, end)
            if part is not None:
                out.append((node, part[0], part[1], end))
        return out

    def _entries(
        self, graph: VehicleGraph, weights: np.ndarray, dest: SnapPoint
    ) -> list[tuple[int, float, int, float]]:
        """(node, cost, edge position, start offset) for reaching the destination along its piece."""
        u, v = self._endpoints(dest.piece)
        out = []
        for node, start in ((u, 0.0), (v, float(self.piece_length[dest.piece]))):
            part = self._partial(graph, weights, dest.piece, start, dest.offset_m)
            if part is not None:
                out.append((node, part[0], part[1], start))
        return out

    def _search(self, graph: VehicleGraph, weights: np.ndarray, origin: SnapPoint, dest: SnapPoint,
                route_type: str) -> list[Stretch] | None:  # fmt: skip
        exits = self._exits(graph, weights, origin)
        entries = self._entries(graph, weights, dest)
        direct = None
        if origin.piece == dest.piece:
            direct = self._partial(graph, weights, origin.piece, origin.offset_m, dest.offset_m)
        limit = self._limit(origin, dest, route_type) if self.use_limit else np.inf
        dist, pred = self._dijkstra(graph, weights, exits, limit, entries)
        best_cost, best_entry = np.inf, None
        for entry in entries:
            cost = dist[entry[0]] + entry[1]
            if cost < best_cost:
                best_cost, best_entry = cost, entry
        if direct is not None and direct[0] <= best_cost:
            return [self._stretch(graph, direct[1], origin.offset_m, dest.offset_m)]
        if best_entry is None:
            return None
        return self._trace(graph, weights, pred, exits, best_entry, origin, dest)

    def _limit(self, origin: SnapPoint, dest: SnapPoint, route_type: str) -> float:
        crow = float(np.linalg.norm(np.subtract(origin.query_xyz, dest.query_xyz)))
        metres = LIMIT_DETOUR * crow + LIMIT_MARGIN_M + origin.distance_m + dest.distance_m
        return metres if route_type == "shortest" else metres / LIMIT_SPEED_MS

    def _dijkstra(self, graph: VehicleGraph, weights: np.ndarray, exits: list[tuple[int, float, int, float]],
                  limit: float, entries: list[tuple[int, float, int, float]]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Distances and predecessors from a virtual source node (index n_nodes) joined to the exits."""
        n = self.n_nodes
        indptr = np.append(graph.indptr, graph.indptr[-1] + len(exits))
        indices = np.append(graph.dst, np.array([e[0] for e in exits], dtype=np.int32))
        data = np.append(weights, [e[1] for e in exits])
        matrix = csr_matrix((data, indices, indptr), shape=(n + 1, n + 1))
        while True:
            dist, pred = dijkstra(matrix, directed=True, indices=n, return_predecessors=True, limit=limit)
            best = min((dist[e[0]] + e[1] for e in entries), default=np.inf)
            # every node closer than `limit` is settled exactly; beyond it a better entry may hide
            if best <= limit or not np.isfinite(limit):
                return dist, pred
            limit = np.inf

    def _trace(self, graph: VehicleGraph, weights: np.ndarray, pred: np.ndarray,
               exits: list[tuple[int, float, int, float]], entry: tuple[int, float, int, float],
               origin: SnapPoint, dest: SnapPoint) -> list[Stretch]:  # fmt: skip
        nodes = [entry[0]]
        while pred[nodes[-1]] != self.n_nodes:
            nodes.append(int(pred[nodes[-1]]))
        nodes.reverse()
        first = min((e for e in exits if e[0] == nodes[0]), key=lambda e: e[1])
        stretches = [self._stretch(graph, first[2], origin.offset_m, first[3])]
        for a, b in itertools.pairwise(nodes):
            pos = self._edge_between(graph, weights, a, b)
            piece = int(self.a["edge_piece"][graph.edges[pos]])
            if piece < 0:
                continue  # zero-length barrier connector
            full = float(self.piece_length[piece])
            rev = bool(self.a["edge_reverse"][graph.edges[pos]])
            stretches.append(self._stretch(graph, pos, full if rev else 0.0, 0.0 if rev else full))
        stretches.append(self._stretch(graph, entry[2], entry[3], dest.offset_m))
        driven = [s for s in stretches if s.distance_m > 0]
        return driven or stretches[:1]

    def _edge_between(self, graph: VehicleGraph, weights: np.ndarray, a: int, b: int) -> int:
        lo, hi = int(graph.indptr[a]), int(graph.indptr[a + 1])
        candidates = lo + np.flatnonzero(graph.dst[lo:hi] == b)
        return int(candidates[np.argmin(weights[candidates])])

    def _stretch(self, graph: VehicleGraph, pos: int, start_m: float, end_m: float) -> Stretch:
        piece = int(self.a["edge_piece"][graph.edges[pos]])
        length = float(self.piece_length[piece])
        share = abs(end_m - start_m) / length if length > 0 else 0.0
        name = self.names[int(self.a["piece_name"][piece])]
        return Stretch(piece, start_m, end_m, float(graph.duration_s[pos]) * share, int(graph.mode[pos]), name)

    # ------------------------------------------------------------ output

    def _piece_points(self, stretch: Stretch) -> list[tuple[float, float]]:
        """(lon, lat) points of a stretch, interpolated at both ends."""
        lo, hi = int(self.a["geom_ptr"][stretch.piece]), int(self.a["geom_ptr"][stretch.piece + 1])
        cum, lat, lon = self.a["geom_cum"][lo:hi], self.a["geom_lat"][lo:hi], self.a["geom_lon"][lo:hi]
        a, b = sorted((stretch.start_m, stretch.end_m))
        inner = np.flatnonzero((cum > a) & (cum < b))
        at = np.concatenate([[a], cum[inner], [b]])
        points = list(zip(np.interp(at, cum, lon).tolist(), np.interp(at, cum, lat).tolist(), strict=True))
        return points[::-1] if stretch.end_m < stretch.start_m else points

    def _assemble(self, stretches: list[Stretch]) -> PathResult:
        geometry: list[tuple[float, float]] = []
        spans: list[tuple[int, int]] = []
        for stretch in stretches:
            points = self._piece_points(stretch)
            if geometry and points and geometry[-1] == points[0]:
                points = points[1:]
            start = max(len(geometry) - 1, 0)
            geometry.extend(points)
            spans.append((start, len(geometry) - 1))
        if len(geometry) == 1:
            geometry.append(geometry[0])  # a LineString needs two positions
            spans = [(0, 1)]
        result = PathResult(
            distance_m=sum(s.distance_m for s in stretches),
            duration_s=sum(s.duration_s for s in stretches),
            geometry=geometry,
            stretches=stretches,
            spans=spans,
        )
        result.emergency = emergency_runs(stretches, spans)
        return result

    # ------------------------------------------------------------ one-to-many (matrix)

    def one_to_many(self, vehicle: str, route_type: str, origin: SnapPoint,
                    dests: list[SnapPoint]) -> list[tuple[float, float] | None]:  # fmt: skip
        """(duration s, distance m) from one start to many destinations (None: unreachable)."""
        graph = self.vehicles[vehicle]
        weights = graph.weights[route_type]
        exits = self._exits(graph, weights, origin)
        dist, pred = self._dijkstra(graph, weights, exits, np.inf, [])
        other = graph.length_m if route_type == "fastest" else graph.duration_s
        secondary = self._tree_sums(graph, weights, other, dist, pred, exits, origin)
        return [self._matrix_cell(graph, weights, other, dist, secondary, origin, d, route_type) for d in dests]

    def _tree_sums(self, graph: VehicleGraph, weights: np.ndarray, other: np.ndarray, dist: np.ndarray,
                   pred: np.ndarray, exits: list[tuple[int, float, int, float]],
                   origin: SnapPoint) -> np.ndarray:  # fmt: skip
        """The secondary metric (distance or duration) along the shortest-path tree, for every node."""
        n = self.n_nodes
        src = np.repeat(np.arange(n), np.diff(graph.indptr))
        tight = (pred[graph.dst] == src) & np.isclose(dist[src] + weights, dist[graph.dst], rtol=1e-9, atol=1e-6)
        step = np.zeros(n + 1)
        order = np.flatnonzero(tight)
        step[graph.dst[order[::-1]]] = other[order[::-1]]  # any tight edge into a node will do
        for node, cost, pos, end in exits:
            if pred[node] == n and np.isclose(cost, dist[node]):
                length = float(self.piece_length[origin.piece])
                share = abs(end - origin.offset_m) / length if length > 0 else 0.0
                step[node] = other[pos] * share
        parent = np.where(pred >= 0, pred, n).astype(np.int64)
        parent[n] = n
        total = step.copy()
        # pointer jumping: after k rounds every node holds the sum over its 2**k nearest ancestors
        # (the root n carries 0, so adding it is harmless)
        while np.any(parent != n):
            total = total + total[parent]
            parent = parent[parent]
        return total

    def _matrix_cell(self, graph: VehicleGraph, weights: np.ndarray, other: np.ndarray, dist: np.ndarray,
                     secondary: np.ndarray, origin: SnapPoint, dest: SnapPoint,
                     route_type: str) -> tuple[float, float] | None:  # fmt: skip
        best: tuple[float, float] | None = None
        candidates = []
        for node, cost, pos, start in self._entries(graph, weights, dest):
            share = self._share(dest.piece, start, dest.offset_m)
            candidates.append((dist[node] + cost, secondary[node] + other[pos] * share))
        if origin.piece == dest.piece:
            direct = self._partial(graph, weights, origin.piece, origin.offset_m, dest.offset_m)
            if direct is not None:
                share = self._share(origin.piece, origin.offset_m, dest.offset_m)
                candidates.append((direct[0], other[direct[1]] * share))
        for primary, second in candidates:
            if np.isfinite(primary) and (best is None or primary < best[0]):
                best = (float(primary), float(second))
        if best is None:
            return None
        return best if route_type == "fastest" else (best[1], best[0])

    def _share(self, piece: int, start_m: float, end_m: float) -> float:
        length = float(self.piece_length[piece])
        return abs(end_m - start_m) / length if length > 0 else 0.0


def emergency_runs(stretches: list[Stretch], spans: list[tuple[int, int]]) -> list[tuple[int, int, float, str]]:
    """Consecutive stretches with the same relaxation, merged: (start index, end index, metres, reason)."""
    runs: list[tuple[int, int, float, str]] = []
    for stretch, (start, end) in zip(stretches, spans, strict=True):
        reason = REASONS.get(stretch.mode)
        if reason is None or stretch.mode not in (MODE_EMERGENCY_ACCESS, MODE_EMERGENCY_ONEWAY):
            continue
        if runs and runs[-1][3] == reason and runs[-1][1] == start:
            prev = runs[-1]
            runs[-1] = (prev[0], end, prev[2] + stretch.distance_m, reason)
        else:
            runs.append((start, end, stretch.distance_m, reason))
    return runs
