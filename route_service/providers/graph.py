"""The `graph` routing provider: Dijkstra on our own road graph (`graph_engine`).

It serves what OSRM's contracted graph cannot: per-query costs, i.e. emergency routing
with `emergencyRoutingRadius > 0`, and it is an independent oracle for the OSRM provider.
Synchronous and CPU-bound: the caller runs it in a thread pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.errors import DatasetNotReady, InvalidParameter, NoRouteFound, PointNotRoutable
from common.params import LatLon
from route_service.graph_build import GRAPH_FILE
from route_service.graph_engine import GraphEngine, PathResult, SnapPoint, Stretch
from route_service.model import (
    MAX_EMERGENCY_RADIUS_M,
    ROUTE_TYPES,
    SNAP_RADIUS_M,
    VEHICLES,
    EmergencySegment,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    Route,
    RouteQuery,
    RouteResult,
    Snapped,
)

GRAPH_DIR = "graph"


class GraphProvider:
    name = "graph"

    def __init__(self, engine: GraphEngine, *, default: bool = False) -> None:
        self.engine = engine
        self.default = default

    @classmethod
    def load(cls, dataset_dir: Path) -> GraphProvider:
        graph_dir = dataset_dir / GRAPH_DIR
        if not (graph_dir / GRAPH_FILE).is_file():
            raise DatasetNotReady(f"the road graph has not been built for this dataset ({GRAPH_DIR}/{GRAPH_FILE})")
        return cls(GraphEngine.load(graph_dir))

    def info(self) -> ProviderInfo:
        return ProviderInfo(
            name=self.name,
            description="Dijkstra on the OpenStreetMap road graph; supports emergency routing",
            vehicles=VEHICLES,
            route_types=ROUTE_TYPES,
            emergency_routing=True,
            alternatives=False,
            matrix=True,
            default=self.default,
        )

    # ------------------------------------------------------------ route

    def route(self, query: RouteQuery) -> RouteResult:
        check_query(query.vehicle, query.route_type, query.emergency_radius_m)
        radius = float(query.emergency_radius_m)
        origin = self._snap(query.origin, query.vehicle, "from", radius)
        dest = self._snap(query.destination, query.vehicle, "to", radius)
        path = self.engine.shortest_path(query.vehicle, query.route_type, origin, dest, radius)
        if path is None:
            raise NoRouteFound(
                f"no {query.vehicle} route connects the start and the destination "
                "(they lie on parts of the road network that are not connected)",
                parameter="to",
            )
        notes = []
        if query.alternatives > 0:
            notes.append(f"the {self.name} provider computes no alternative routes; only the best route is returned")
        return RouteResult(
            routes=[to_route(path, query.steps)],
            origin=to_snapped(origin, self.engine),
            destination=to_snapped(dest, self.engine),
            alternatives_requested=query.alternatives,
            notes=notes,
        )

    def _snap(self, point: LatLon, vehicle: str, parameter: str, radius_m: float = 0.0) -> SnapPoint:
        limit = SNAP_RADIUS_M[vehicle]
        snapped = self.engine.snap(vehicle, point.lat, point.lon, max_distance_m=limit, radius_m=radius_m)
        if snapped is None:
            raise PointNotRoutable(
                f"no road usable by {vehicle} within {limit:.0f} m of {point.lat:.6f},{point.lon:.6f}",
                parameter=parameter,
            )
        return snapped

    # ------------------------------------------------------------ matrix

    def matrix(self, query: MatrixQuery) -> MatrixResult:
        check_query(query.vehicle, query.route_type, 0)
        sources = [self._snap(p, query.vehicle, f"sources[{i}]") for i, p in enumerate(query.sources)]
        dests = [self._snap(p, query.vehicle, f"destinations[{i}]") for i, p in enumerate(query.destinations)]
        durations: list[list[float | None]] = []
        distances: list[list[float | None]] = []
        for source in sources:
            cells = self.engine.one_to_many(query.vehicle, query.route_type, source, dests)
            durations.append([None if c is None else round(c[0], 1) for c in cells])
            distances.append([None if c is None else round(c[1], 1) for c in cells])
        return MatrixResult(
            durations_s=durations,  # both cost the same search: the formatter leaves one out
            distances_m=distances,
            snapped_sources=[to_snapped(s, self.engine) for s in sources],
            snapped_destinations=[to_snapped(d, self.engine) for d in dests],
            annotations=query.annotations,
        )


# ---------------------------------------------------------------- conversion


def check_query(vehicle: str, route_type: str, radius_m: int) -> None:
    """The handlers validate first; this guards direct callers (tests, the detour service)."""
    if vehicle not in VEHICLES:
        raise InvalidParameter(f"must be one of {', '.join(VEHICLES)}, got {vehicle!r}", parameter="vehicle")
    if route_type not in ROUTE_TYPES:
        raise InvalidParameter(f"must be one of {', '.join(ROUTE_TYPES)}, got {route_type!r}", parameter="type")
    if not 0 <= radius_m <= MAX_EMERGENCY_RADIUS_M:
        raise InvalidParameter(
            f"must be between 0 and {MAX_EMERGENCY_RADIUS_M}, got {radius_m}", parameter="emergencyRoutingRadius"
        )


def to_snapped(point: SnapPoint, engine: GraphEngine) -> Snapped:
    return Snapped(LatLon(point.lat, point.lon), round(point.distance_m, 1), engine.piece_name(point.piece))


def to_route(path: PathResult, with_steps: bool = True) -> Route:
    leg: dict[str, object] = {
        "distance": round(path.distance_m, 1),
        "duration": round(path.duration_s, 1),
        "summary": ", ".join(dict.fromkeys(s.name for s in path.stretches if s.name))[:200],
        "steps": steps(path.stretches, path.spans) if with_steps else [],
    }
    return Route(
        distance_m=round(path.distance_m, 1),
        duration_s=round(path.duration_s, 1),
        geometry=np.round(np.asarray(path.geometry, dtype=np.float64).reshape(-1, 2), 7),
        legs=[leg],
        emergency_segments=[
            EmergencySegment(start, end, round(metres, 1), reason) for start, end, metres, reason in path.emergency
        ],
    )


@dataclass
class Step:
    name: str
    distance_m: float
    duration_s: float
    start: int
    end: int

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "distance": round(self.distance_m, 1), "duration": round(self.duration_s, 1),
                "geometryIndex": [self.start, self.end]}  # fmt: skip


def steps(stretches: list[Stretch], spans: list[tuple[int, int]]) -> list[dict[str, object]]:
    """One step per street: consecutive stretches with the same name are merged."""
    out: list[Step] = []
    for stretch, (start, end) in zip(stretches, spans, strict=True):
        if out and out[-1].name == stretch.name:
            out[-1].distance_m += stretch.distance_m
            out[-1].duration_s += stretch.duration_s
            out[-1].end = end
        else:
            out.append(Step(stretch.name, stretch.distance_m, stretch.duration_s, start, end))
    return [step.as_dict() for step in out]
