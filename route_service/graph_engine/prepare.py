"""The graph file's arrays made ready for queries, once per dataset: piece geometry and one
CSR graph per vehicle with cached weight vectors. Read-only afterwards, so queries in any
thread share it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.spatial import cKDTree

from common.vocabulary import VEHICLES
from route_service.graph_engine.data_mask import DataMask
from route_service.graph_engine.tiles import EdgeTiles, edge_tiles, node_tiles, to_xyz
from route_service.graph_format import MODE_YES

# Speed of an emergency vehicle on a relaxed stretch (km/h): careful driving, not the class speed.
EMERGENCY_MAX_KMH = 30.0


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
    # The centres of the emergency edges' pieces (in emergency_pos order), so that a query
    # tests only the ones near its start and destination: testing all of them took 8.8 of a
    # 13.4 ms emergency route on 10 copies of Heidelberg (bench/scale.py).
    emergency_centers: cKDTree | None = None
    # route type -> the most straight-line metres one unit of weight can cover (the top speed in
    # m/s for `fastest`, 1 for `shortest`): a lower bound on the cost of reaching a point
    metres_per_cost: dict[str, float] | None = None
    edge_tiles: EdgeTiles | None = None  # the edges by the tile of their source (region searches)


# Roads that go somewhere: a dead end of one is where the loaded map cuts it (isochrones say so).
MAP_EDGE_HIGHWAYS = frozenset(
    {"motorway", "motorway_link", "trunk", "trunk_link", "primary", "primary_link", "secondary",
     "secondary_link", "tertiary", "tertiary_link"}
)  # fmt: skip


class RoadGraph:
    """One dataset's road graph: the file's arrays (`a`), each piece's geometry and end nodes,
    and the vehicle graphs."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.a = {key: np.asarray(value) for key, value in arrays.items()}
        self.n_nodes = len(self.a["node_lat"])
        # the junctions by tiles: a query's search region is the tiles near its ends
        self.tiles = node_tiles(self.a["node_lat"], self.a["node_lon"])
        self.names = [str(n) for n in self.a["names"]]
        self._init_pieces()
        # pieces with a height, width, length, weight or axle-load limit (graph_format), few
        self.limited_pieces = self.a.get("limited_pieces", np.empty(0, dtype=np.int32)).astype(np.int64)
        self.piece_limits = self.a.get("piece_limits", np.empty((0, 5), dtype=np.float32))
        # per piece: below the ground (graph_format underground_pieces); snapping prefers the surface
        self.underground = np.zeros(self.n_pieces, dtype=bool)
        self.underground[self.a.get("underground_pieces", np.empty(0, dtype=np.int32))] = True
        self.vehicles = {vehicle: self._vehicle_graph(vehicle) for vehicle in VEHICLES}

    @cached_property
    def data_mask(self) -> DataMask:
        """Where the map has data (graph_engine.data_mask), built on the first isochrone."""
        return DataMask.of_points(self.a["geom_lat"], self.a["geom_lon"])

    @cached_property
    def edge_points(self) -> np.ndarray:
        """Geometry points where the loaded map cuts a road: the dead ends of through roads
        (MAP_EDGE_HIGHWAYS) at the data's edge (the shared extracts keep whole ways, so a road
        leaving the area ends at its last node outside). Inside the data a through road may end
        too, at a way left out (a construction site: Rohrbacher Straße in Heidelberg)."""
        classes = np.array([str(h) in MAP_EDGE_HIGHWAYS for h in self.a["highways"]], dtype=bool)
        # every piece has an edge each way out of its ends, a barrier's copies a connector to
        # each other: one edge out of a node is a dead end
        degree = np.bincount(self.a["edge_src"], minlength=self.n_nodes)
        through = classes[self.a["piece_highway"]] if len(classes) else np.zeros(self.n_pieces, dtype=bool)
        ptr = self.a["geom_ptr"]
        first = np.flatnonzero(through & (degree[self.piece_u] == 1))
        last = np.flatnonzero(through & (degree[self.piece_v] == 1))
        ends = np.unique(np.concatenate([ptr[first], ptr[last + 1] - 1]))
        return ends[self.data_mask.near_edge(self.a["geom_lat"][ends], self.a["geom_lon"][ends])]

    def piece_name(self, piece: int) -> str:
        return self.names[int(self.a["piece_name"][piece])]

    def endpoints(self, piece: int) -> tuple[int, int]:
        """Graph nodes at the start and end of a piece."""
        return int(self.piece_u[piece]), int(self.piece_v[piece])

    def share(self, piece: int, start_m: float, end_m: float) -> float:
        """The part of a piece between two offsets, as a fraction of its length."""
        length = float(self.piece_length[piece])
        return abs(end_m - start_m) / length if length > 0 else 0.0

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
        # bounding box of each piece (degrees): the first filter of an avoid area (graph_engine.closures)
        lat, lon = self.a["geom_lat"], self.a["geom_lon"]
        self.piece_box = np.column_stack([np.minimum.reduceat(lon, ptr[:-1]), np.minimum.reduceat(lat, ptr[:-1]),
                                          np.maximum.reduceat(lon, ptr[:-1]), np.maximum.reduceat(lat, ptr[:-1])])  # fmt: skip
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
        emergency_pos = np.flatnonzero(emergency)
        centers = self.piece_center[piece[emergency_pos]] if len(emergency_pos) else None
        return VehicleGraph(
            edges=edges,
            indptr=indptr.astype(np.int32),
            dst=self.a["edge_dst"][edges].astype(np.int32),
            weights={t: np.where(emergency, np.inf, w) for t, w in full.items()},
            emergency_weights={t: w[emergency] for t, w in full.items()},
            emergency_pos=emergency_pos,
            duration_s=duration,
            length_m=length,
            mode=mode,
            piece_fwd=piece_dir[0],
            piece_bwd=piece_dir[1],
            emergency_centers=None if centers is None else cKDTree(centers),
            metres_per_cost={"fastest": top_speed(length, duration), "shortest": 1.0},
            edge_tiles=edge_tiles(self.tiles, indptr, self.a["edge_dst"][edges]),
        )


def top_speed(length: np.ndarray, duration: np.ndarray) -> float:
    """The fastest edge's speed (m/s); edge lengths are never shorter than their chords."""
    moving = duration > 0
    return float(np.max(length[moving] / duration[moving])) if moving.any() else 1.0
