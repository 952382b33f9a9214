"""Typed stops, options and results of the optimize service (no aiohttp here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from common.areas import AvoidArea
from common.geo import LatLon

MAX_STOPS = 1000  # more → 413 OPTIMIZE_ERROR_TOO_MANY_STOPS
MAX_DIAMETER_M = 1_200_000.0  # the API contract (../shared/API.md): the region may be at most 1200 km wide
MAX_SERVICE_TIME_S = 86_400.0
MIN_TIME_LIMIT_S = 0.05
MAX_TIME_LIMIT_S = 30.0


@dataclass(frozen=True)
class Stop:
    name: str
    coordinate: LatLon
    start: bool = False
    destination: bool = False
    service_time_s: float = 0.0


@dataclass(frozen=True)
class TourEnds:
    """Where the tour begins and ends, as indexes into the stops."""

    start: int
    end: int | None  # None: open tour, ends wherever is best; == start: round trip

    @property
    def round_trip(self) -> bool:
        return self.end == self.start

    @property
    def open(self) -> bool:
        return self.end is None


@dataclass(frozen=True)
class Options:
    start_time: datetime  # always with a UTC offset; arrival times keep it
    vehicle: str = "car"
    route_type: str = "fastest"
    provider: str | None = None  # None: the route service's default
    time_limit_s: float | None = None  # None: chosen from the number of stops
    avoid: AvoidArea | None = None  # roads inside it are not used (the route service: Valhalla's matrices and routes)
    # True: a stop no road joins with the others fails the request (400 naming every one);
    # False (the default): the tour visits the stops the start shares a road network with, and
    # the others are answered as unassigned (optimize_service.stops.reachability).
    strict: bool = False
    # startTime given: OSM's rules by time apply from then (issue 33); else time-independent
    timed: bool = False


@dataclass(frozen=True)
class OptimizeRequest:
    stops: list[Stop]
    ends: TourEnds
    options: Options


@dataclass(frozen=True)
class Leg:
    distance_m: float
    duration_s: float
    time_rules: list[dict[str, Any]] | None = None  # with startTime: the rules by time the leg met


@dataclass(frozen=True)
class TourRoute:
    """The road route through the stops in visiting order (from the route service)."""

    distance_m: float
    duration_s: float
    geometry: list[list[float]]  # [lon, lat] pairs, GeoJSON order
    legs: list[Leg]
    provider: str = ""
    dataset: str = ""


@dataclass(frozen=True)
class Visit:
    """One stop of the answer: arrival after the leg from the previous stop."""

    stop_index: int  # into the request's stops
    arrival: datetime
    departure: datetime
    leg: Leg | None  # None for the first stop


@dataclass
class Plan:
    request: OptimizeRequest
    visits: list[Visit]
    route: TourRoute
    solver: dict[str, Any] = field(default_factory=dict)
    unassigned: list[int] = field(default_factory=list)  # stops left out: no road joins them with the start
    # of those, the ones on a road closed to the vehicle when the tour would reach it (issue 33)
    closed: dict[int, str] = field(default_factory=dict)  # stop index → why
