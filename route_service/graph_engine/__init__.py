"""Shortest paths on our own road graph (`graph_format`), pure numpy/scipy.

`GraphEngine` is what the graph provider holds: one dataset's graph, prepared once
(`prepare`), with snapping (`snap`), point-to-point search (`search`, its answer in `path`)
and one-to-many costs (`matrix`). Thread-safe: queries never mutate shared arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from route_service.graph_engine.matrix import Cell, one_to_many
from route_service.graph_engine.path import PathResult, Stretch
from route_service.graph_engine.prepare import RoadGraph
from route_service.graph_engine.search import shortest_path
from route_service.graph_engine.snap import Snapper, SnapPoint
from route_service.graph_format import read_graph

__all__ = ["GraphEngine", "PathResult", "SnapPoint", "Stretch"]


class GraphEngine:
    """Routing on one dataset's graph arrays."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.road = RoadGraph(arrays)
        self.snapper = Snapper(self.road)
        self.use_limit = True  # bounded search first (see `search`); the benchmark compares both

    @classmethod
    def load(cls, graph_dir: Path) -> GraphEngine:
        return cls(read_graph(graph_dir))

    def piece_name(self, piece: int) -> str:
        return self.road.piece_name(piece)

    def snap(self, vehicle: str, lat: float, lon: float, *, max_distance_m: float,
             radius_m: float = 0.0) -> SnapPoint | None:  # fmt: skip
        """Nearest point on a road `vehicle` may use (see `Snapper.snap`)."""
        return self.snapper.snap(vehicle, lat, lon, max_distance_m=max_distance_m, radius_m=radius_m)

    def surface_instead(self, vehicle: str, lat: float, lon: float, *, max_distance_m: float) -> SnapPoint | None:
        """The surface road a point means where its nearest road lies below the ground (see
        `Snapper.surface_instead`)."""
        return self.snapper.surface_instead(vehicle, lat, lon, max_distance_m=max_distance_m)

    def shortest_path(self, vehicle: str, route_type: str, origin: SnapPoint, dest: SnapPoint,
                      radius_m: float = 0.0, closed_pieces: np.ndarray | None = None) -> PathResult | None:  # fmt: skip
        """The best path between two snapped points, never through `closed_pieces`; None when none exists."""
        return shortest_path(self.road, vehicle, route_type, origin, dest, radius_m, bounded=self.use_limit,
                             closed_pieces=closed_pieces)  # fmt: skip

    def one_to_many(self, vehicle: str, route_type: str, origin: SnapPoint,
                    dests: list[SnapPoint], closed_pieces: np.ndarray | None = None) -> list[Cell | None]:  # fmt: skip
        """(duration s, distance m) from one start to many destinations (None: unreachable)."""
        return one_to_many(self.road, vehicle, route_type, origin, dests, closed_pieces)
