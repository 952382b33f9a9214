"""Shortest paths on our own road graph (`graph_format`), pure numpy/scipy.

`GraphEngine` is what the graph provider holds: one dataset's graph, prepared once
(`prepare`), with snapping (`snap`), point-to-point search (`search`, its answer in `path`)
and one-to-many costs (`matrix`). Thread-safe: queries never mutate shared arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from route_service.graph_engine.matrix import Cell, TimedWeights, one_to_many
from route_service.graph_engine.path import PathResult, Stretch
from route_service.graph_engine.prepare import RoadGraph
from route_service.graph_engine.search import shortest_path
from route_service.graph_engine.snap import Snapper, SnapPoint
from route_service.graph_engine.timed import Overrides, TimedRoads
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
                      radius_m: float = 0.0, closed_pieces: np.ndarray | None = None,
                      timed: Overrides | None = None) -> PathResult | None:  # fmt: skip
        """The best path between two snapped points, never through `closed_pieces`, with the
        edge weights of rules by time (`timed`); None when none exists."""
        return shortest_path(self.road, vehicle, route_type, origin, dest, radius_m, bounded=self.use_limit,
                             closed_pieces=closed_pieces, timed=timed)  # fmt: skip

    @property
    def timed(self) -> TimedRoads:
        """The roads with rules by time, read on first use in each process (never pickled:
        their parsed expressions are the opening-hours library's objects)."""
        found = self.__dict__.get("_timed")
        if found is None:
            found = self.__dict__.setdefault("_timed", TimedRoads(self.road))
        return found

    def __getstate__(self) -> dict[str, object]:
        return {key: value for key, value in self.__dict__.items() if key != "_timed"}

    def snap_at(self, vehicle: str, lat: float, lon: float, *, max_distance_m: float,
                opened: np.ndarray, closed: np.ndarray) -> SnapPoint | None:  # fmt: skip
        """Nearest point on a road `vehicle` may use at one time (see `Snapper.snap_at`)."""
        return self.snapper.snap_at(vehicle, lat, lon, max_distance_m=max_distance_m, opened=opened, closed=closed)

    def one_to_many(self, vehicle: str, route_type: str, origin: SnapPoint,
                    dests: list[SnapPoint], closed_pieces: np.ndarray | None = None,
                    timed: TimedWeights | None = None, both: bool = True) -> list[Cell | None]:  # fmt: skip
        """(duration s, distance m) from one start to many destinations (None: unreachable);
        `both` False: the searched metric only (the other 0)."""
        return one_to_many(self.road, vehicle, route_type, origin, dests, closed_pieces, timed, both)
