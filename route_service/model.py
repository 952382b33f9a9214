"""Typed route queries and results, shared by every routing provider (no aiohttp here).

Handlers parse HTTP parameters into these objects; a provider from the registry answers
them; `formatter.py` turns results into the JSON body of API.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from common.params import LatLon

VEHICLES = ("car", "truck", "bicycle", "pedestrian")
ROUTE_TYPES = ("fastest", "shortest")
MAX_ALTERNATIVES = 2
MAX_EMERGENCY_RADIUS_M = 5000
# How far a point may lie from the nearest road the vehicle may use, in every provider.
SNAP_RADIUS_M = {"car": 1000.0, "truck": 1000.0, "bicycle": 500.0, "pedestrian": 500.0}


@dataclass(frozen=True)
class RouteQuery:
    origin: LatLon
    destination: LatLon
    vehicle: str = "car"
    route_type: str = "fastest"
    alternatives: int = 0
    emergency_radius_m: int = 0
    steps: bool = True


@dataclass(frozen=True)
class Snapped:
    """Where an input point met the road network."""

    location: LatLon
    distance_m: float
    name: str = ""


@dataclass(frozen=True)
class EmergencySegment:
    """A stretch of a route that uses a relaxation only emergency vehicles may use."""

    start_index: int  # index into Route.geometry
    end_index: int
    distance_m: float
    reason: str  # "oneway_against_direction" | "access_restricted"


@dataclass
class Route:
    distance_m: float
    duration_s: float
    geometry: np.ndarray  # (n, 2) float64 of (lon, lat), GeoJSON order
    legs: list[dict[str, object]] = field(default_factory=list)
    emergency_segments: list[EmergencySegment] = field(default_factory=list)


@dataclass
class RouteResult:
    routes: list[Route]
    origin: Snapped
    destination: Snapped
    alternatives_requested: int = 0
    notes: list[str] = field(default_factory=list)


MATRIX_ANNOTATIONS = ("duration", "distance")
# Rows of cells: a float64 array with NaN where no route exists (OSRM: 8 bytes a cell, written
# to JSON by orjson without a Python float each), or lists with None (the graph provider).
Matrix = np.ndarray | list[list[float | None]]


@dataclass(frozen=True)
class MatrixQuery:
    sources: list[LatLon]
    destinations: list[LatLon]
    vehicle: str = "car"
    route_type: str = "fastest"
    annotations: tuple[str, ...] = MATRIX_ANNOTATIONS  # which tables to compute

    @property
    def cells(self) -> int:
        return len(self.sources) * len(self.destinations)


@dataclass
class MatrixResult:
    durations_s: Matrix  # empty (0 x 0) when not among `annotations`
    distances_m: Matrix
    snapped_sources: list[Snapped]
    snapped_destinations: list[Snapped]
    annotations: tuple[str, ...] = MATRIX_ANNOTATIONS  # the tables computed


NOT_ASKED: np.ndarray = np.empty((0, 0))


@dataclass(frozen=True)
class ProviderInfo:
    name: str
    description: str
    vehicles: tuple[str, ...]
    route_types: tuple[str, ...]
    emergency_routing: bool
    alternatives: bool
    matrix: bool
    default: bool = False


class RouteProvider(Protocol):
    """One routing backend. Methods are synchronous and CPU-bound: handlers run them in
    the service's thread pool. They raise `common.errors` types (PointNotRoutable,
    NoRouteFound, InvalidParameter) for what the caller must correct."""

    name: str

    def info(self) -> ProviderInfo: ...

    def route(self, query: RouteQuery) -> RouteResult: ...

    def matrix(self, query: MatrixQuery) -> MatrixResult: ...


# ---------------------------------------------------------------- lean costs and map matching (detours)


@dataclass(frozen=True)
class Cost:
    """Only the length of a route: what the detour endpoint needs, computed without geometry."""

    distance_m: float
    duration_s: float


@dataclass(frozen=True)
class Matching:
    """One stretch of a track matched to roads: input points first_index..last_index."""

    first_index: int
    last_index: int
    distance_m: float
    duration_s: float
    confidence: float


@dataclass
class MatchResult:
    matchings: list[Matching]  # in track order; gaps between them could not be matched
    matched: list[bool]  # per input point


# ---------------------------------------------------------------- one route through many waypoints (stop tours)


@dataclass(frozen=True)
class WaypointsQuery:
    """A route visiting `waypoints` in the given order (the optimize service's tour geometry)."""

    waypoints: list[LatLon]
    vehicle: str = "car"
    route_type: str = "fastest"


@dataclass
class WaypointsResult:
    route: Route  # legs: one {distance, duration} per consecutive pair of waypoints
    snapped: list[Snapped]


@runtime_checkable
class WaypointRouter(Protocol):
    """A provider that routes through many waypoints in one call (OSRM). Providers without it
    are served leg by leg through `RouteProvider.route` (route_service.waypoints)."""

    def route_waypoints(self, query: WaypointsQuery) -> WaypointsResult: ...
