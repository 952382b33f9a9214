"""Snapping: the nearest point on a road a vehicle may use, found in a KD-tree of samples
along the road pieces (one tree per vehicle and kind of use, built on first use)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from route_service.graph_engine.prepare import RoadGraph, VehicleGraph, to_xyz
from route_service.graph_format import MODE_YES

SAMPLE_SPACING_M = 20.0  # snapping samples along long segments, so the nearest sample is near the nearest segment
SNAP_CANDIDATES = 8
# A point has no height: when its nearest road is a tunnel (or another way below the ground) and
# a surface road lies at most this much farther, the point means the surface road. The README's
# truck example, 7.5 m from a service tunnel 3 levels down and 11.6 m from Yliopistonkatu above
# it, ended in the tunnel (issue 32); 25 m is a GPS fix's and a geocoded address's usual error.
SURFACE_PREFERENCE_M = 25.0
SMALL_COMPONENT_NODES = 100  # junctions; smaller strongly connected parts are not snapped to
# OSRM's "large" component (osrm-extract's --small-component-size): where OSRM snaps a point
# whose nearest road lies on a smaller part. Isochrones mirror /v1/route's default provider.
OSRM_LARGE_COMPONENT_NODES = 1000
# Which parts of the network a tree samples: the main network (ours, for snapping), every part,
# or OSRM's large components.
PARTS_MIN_NODES = {"main": SMALL_COMPONENT_NODES, "all": 0, "osrm-large": OSRM_LARGE_COMPONENT_NODES}

SampleTree = tuple[cKDTree, np.ndarray]  # the tree and, per sample, the geometry point starting its segment


@dataclass(frozen=True)
class SnapPoint:
    """A point on a piece of road: `offset_m` from the piece's first geometry point."""

    piece: int
    offset_m: float
    lat: float
    lon: float
    distance_m: float  # from the query point
    query_xyz: tuple[float, float, float]


class Snapper:
    """Snaps points to one road graph. Thread-safe: the trees are built under a lock."""

    def __init__(self, road: RoadGraph) -> None:
        self.road = road
        self._trees: dict[tuple[str, bool, str], SampleTree | None] = {}
        self._tree_lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        """Pickled with its trees (graph_engine.shared), not its lock."""
        return {"road": self.road, "_trees": self._trees}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._tree_lock = threading.Lock()

    def snap(self, vehicle: str, lat: float, lon: float, *, max_distance_m: float,
             radius_m: float = 0.0) -> SnapPoint | None:  # fmt: skip
        """Nearest point on a road `vehicle` may use; with a radius also on emergency-only roads
        that lie entirely within it. None when nothing lies within `max_distance_m`."""
        point = to_xyz(np.array([lat]), np.array([lon]))[0]
        best, _ = self._snap_tree(vehicle, False, point, max_distance_m, 0.0)
        if radius_m > 0:
            relaxed, _ = self._snap_tree(vehicle, True, point, max_distance_m, radius_m)
            if relaxed is not None and (best is None or self._nearer(relaxed, best)):
                best = relaxed
        return best

    def snap_at(self, vehicle: str, lat: float, lon: float, *, max_distance_m: float,
                opened: np.ndarray, closed: np.ndarray) -> SnapPoint | None:  # fmt: skip
        """Nearest point on a road `vehicle` may use at one time: the normal network without
        the `closed` pieces, with the `opened` ones (rules by time: graph_engine.timed)."""
        point = to_xyz(np.array([lat]), np.array([lon]))[0]
        segs = np.empty(0, dtype=np.int64)
        tree = self.tree(vehicle, False)
        if tree is not None:
            kd, owner = tree
            # more candidates than a plain snap: some may be closed at this time
            dist, idx = kd.query(point, k=4 * SNAP_CANDIDATES, distance_upper_bound=max_distance_m + SAMPLE_SPACING_M)
            segs = np.unique(owner[idx[np.isfinite(dist)]])
            segs = segs[~np.isin(self.road.point_piece[segs], closed)]
        if len(opened):  # only those whose bounding ball comes within reach
            road = self.road
            near = np.linalg.norm(road.piece_center[opened] - point, axis=1) - road.piece_radius[opened] <= max_distance_m
            ptr = road.a["geom_ptr"]
            extra = [np.arange(ptr[p], ptr[p + 1] - 1) for p in opened[near].tolist()]
            segs = np.concatenate([segs, *extra]).astype(np.int64)
        best = self._project(segs, point, max_distance_m) if len(segs) else None
        return self._surface_over(best, segs, point, max_distance_m)

    def surface_instead(self, vehicle: str, lat: float, lon: float, *, max_distance_m: float) -> SnapPoint | None:
        """The surface road a point means when its nearest road is below the ground (None when
        the nearest road is meant): what other engines are handed instead (providers.surface)."""
        point = to_xyz(np.array([lat]), np.array([lon]))[0]
        chosen, nearest = self._snap_tree(vehicle, False, point, max_distance_m, 0.0)
        return chosen if chosen is not nearest else None

    def _nearer(self, a: SnapPoint, b: SnapPoint) -> bool:
        """Whether `a` is the better snap: by distance, a road below the ground counted
        SURFACE_PREFERENCE_M farther."""
        underground = self.road.underground
        return bool(
            a.distance_m + SURFACE_PREFERENCE_M * underground[a.piece]
            < b.distance_m + SURFACE_PREFERENCE_M * underground[b.piece]
        )

    def tree(self, vehicle: str, emergency: bool, parts: str = "main") -> SampleTree | None:
        """KD-tree of samples along the pieces `vehicle` can use normally (or only in
        emergencies), of the `parts` of PARTS_MIN_NODES: the main network (snapping), every
        part (isochrones: a point by a cut-off piece belongs to that piece, which routes do not
        leave) or OSRM's large components (isochrones: where OSRM snaps such a point instead)."""
        key = (vehicle, emergency, parts)
        with self._tree_lock:
            if key not in self._trees:
                self._trees[key] = self._build_tree(vehicle, emergency, PARTS_MIN_NODES[parts])
            return self._trees[key]

    def _build_tree(self, vehicle: str, emergency: bool, min_nodes: int) -> SampleTree | None:
        road = self.road
        graph = road.vehicles[vehicle]
        pieces = road.a["edge_piece"][graph.edges]
        normal = np.zeros(road.n_pieces + 1, dtype=bool)
        anyuse = np.zeros(road.n_pieces + 1, dtype=bool)
        normal[pieces[graph.mode == MODE_YES]] = True  # index -1 (barrier connectors) lands in the spare slot
        anyuse[pieces] = True
        main = main_nodes(road.n_nodes, graph, min_nodes) if min_nodes else np.ones(road.n_nodes, dtype=bool)
        u_main, v_main = main[road.piece_u], main[road.piece_v]
        # an emergency-only piece is useful when it touches the main network at one end
        wanted = (anyuse & ~normal)[:-1] & (u_main | v_main) if emergency else normal[:-1] & u_main & v_main
        ptr = road.a["geom_ptr"]
        seg = np.flatnonzero(wanted[road.point_piece])
        seg = seg[seg + 1 < ptr[road.point_piece[seg] + 1]]  # a segment starts at every point but a piece's last
        if len(seg) == 0:
            return None
        seg_len = np.diff(road.a["geom_cum"])[seg]
        count = np.maximum(1, np.ceil(seg_len / SAMPLE_SPACING_M)).astype(np.int64)
        owner = np.repeat(seg, count)
        frac = (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)) / np.repeat(count, count)
        start, end = road.geom_xyz[owner], road.geom_xyz[owner + 1]
        samples = start + (end - start) * frac[:, None]
        return cKDTree(samples), owner

    def _snap_tree(self, vehicle: str, emergency: bool, point: np.ndarray, max_distance_m: float,
                   radius_m: float) -> tuple[SnapPoint | None, SnapPoint | None]:  # fmt: skip
        """The snap chosen (a surface road over a nearer one below the ground) and the nearest."""
        tree = self.tree(vehicle, emergency)
        if tree is None:
            return None, None
        kd, owner = tree
        dist, idx = kd.query(point, k=SNAP_CANDIDATES, distance_upper_bound=max_distance_m + SAMPLE_SPACING_M)
        segs = self._admitted(np.unique(owner[idx[np.isfinite(dist)]]), point, emergency, radius_m)
        best = self._project(segs, point, max_distance_m) if len(segs) else None
        if best is None or not self.road.underground[best.piece]:
            return best, best
        # the nearest road is below the ground: the candidates within reach of a surface road
        reach = min(best.distance_m + SURFACE_PREFERENCE_M, max_distance_m)
        near = self._admitted(np.unique(owner[kd.query_ball_point(point, reach + SAMPLE_SPACING_M)]), point,
                              emergency, radius_m)  # fmt: skip
        return self._surface_over(best, near, point, max_distance_m), best

    def _surface_over(self, best: SnapPoint | None, segs: np.ndarray, point: np.ndarray,
                      max_distance_m: float) -> SnapPoint | None:  # fmt: skip
        """`best`, or where it lies below the ground the nearest surface road among `segs` at
        most SURFACE_PREFERENCE_M farther (the point means that one)."""
        if best is None or not self.road.underground[best.piece]:
            return best
        surface = segs[~self.road.underground[self.road.point_piece[segs]]]
        reach = min(best.distance_m + SURFACE_PREFERENCE_M, max_distance_m)
        return (self._project(surface, point, reach) if len(surface) else None) or best

    def _admitted(self, segs: np.ndarray, point: np.ndarray, emergency: bool, radius_m: float) -> np.ndarray:
        """The segments a snap may use: in emergencies only those of pieces entirely within
        the radius."""
        if not emergency:
            return segs
        road = self.road
        pieces = road.point_piece[segs]
        inside = np.linalg.norm(road.piece_center[pieces] - point, axis=1) + road.piece_radius[pieces] <= radius_m
        return segs[inside]

    def _project(self, segs: np.ndarray, point: np.ndarray, max_distance_m: float) -> SnapPoint | None:
        road = self.road
        a, b = road.geom_xyz[segs], road.geom_xyz[segs + 1]
        ab = b - a
        denom = np.maximum((ab * ab).sum(axis=1), 1e-9)
        t = np.clip(((point - a) * ab).sum(axis=1) / denom, 0.0, 1.0)
        dist = np.linalg.norm(a + ab * t[:, None] - point, axis=1)
        i = int(np.argmin(dist))
        if dist[i] > max_distance_m:
            return None
        g, frac = int(segs[i]), float(t[i])
        cum, lat, lon = road.a["geom_cum"], road.a["geom_lat"], road.a["geom_lon"]
        return SnapPoint(
            piece=int(road.point_piece[g]),
            offset_m=float(cum[g] + frac * (cum[g + 1] - cum[g])),
            lat=float(lat[g] + frac * (lat[g + 1] - lat[g])),
            lon=float(lon[g] + frac * (lon[g + 1] - lon[g])),
            distance_m=float(dist[i]),
            query_xyz=(float(point[0]), float(point[1]), float(point[2])),
        )


def main_nodes(n_nodes: int, graph: VehicleGraph, min_nodes: int = SMALL_COMPONENT_NODES) -> np.ndarray:
    """Nodes in a large strongly connected part of the normal network. Snapping only to
    these keeps a start off a parking aisle or a fragment cut by the extract's boundary
    from which nothing is reachable (OSRM does the same with its small components)."""
    n = n_nodes
    usable = np.isfinite(graph.weights["shortest"])
    src = np.repeat(np.arange(n), np.diff(graph.indptr))[usable]
    matrix = csr_matrix((np.ones(len(src)), (src, graph.dst[usable])), shape=(n, n))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    sizes = np.bincount(labels)
    # in a tiny network (a test, a village) "small" is relative to the largest part
    threshold = min(min_nodes, max(2, int(sizes.max()) // 4))
    return np.asarray(sizes[labels] >= threshold)
