"""Typed route queries and results, shared by every routing provider (no aiohttp here).

Parsing turns HTTP parameters into these queries; a provider's plugin (`providers.base`)
answers them with these results, in plain values (metres, seconds, (lon, lat) arrays);
`formatter.py` alone turns results into the JSON bodies of the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, field
from datetime import datetime
from itertools import product

import numpy as np

from common.areas import AvoidArea
from common.geo import LatLon
from common.vocabulary import ROUTE_TYPES, VEHICLES

MAX_ALTERNATIVES = 2
MAX_EMERGENCY_RADIUS_M = 5000


# ---------------------------------------------------------------- per-request costs


# The request parameters of TruckDimensions' fields, in their order.
TRUCK_PARAMETERS = ("height", "width", "length", "weight", "axleLoad")


@dataclass(frozen=True)
class TruckDimensions:
    """A truck's size (m) and weight (t), checked against the ways' maxheight, maxwidth,
    maxlength, maxweight and maxaxleload. None: not given (the default truck's value applies)."""

    height_m: float | None = None
    width_m: float | None = None
    length_m: float | None = None
    weight_t: float | None = None
    axle_load_t: float | None = None

    def with_defaults(self) -> tuple[float, float, float, float, float]:
        """Height, width, length, weight, axle load: the default truck's where not given, 0
        (never above a limit) for an axle load not given."""
        default = DEFAULT_TRUCK
        return (
            self.height_m or default.height_m or 0.0,
            self.width_m or default.width_m or 0.0,
            self.length_m or default.length_m or 0.0,
            self.weight_t or default.weight_t or 0.0,
            self.axle_load_t or default.axle_load_t or 0.0,
        )


# OSRM's truck profile (route_service/profiles/rs_wrap.lua): a 7.5 t delivery truck. Its axle
# load is not checked unless given (no limit tag of the shared extracts is below a 7.5 t truck's).
DEFAULT_TRUCK = TruckDimensions(height_m=3.5, width_m=2.5, length_m=10.0, weight_t=7.5)


@dataclass(frozen=True)
class RouteTime:
    """When a route is driven (issue 33): leaving at `at`, or arriving by it (`arrival`)."""

    at: datetime
    arrival: bool = False

    @property
    def parameter(self) -> str:
        return "arrivalTime" if self.arrival else "departureTime"


@dataclass(frozen=True)
class Restrictions:
    """What a request adds to the precomputed costs: only providers whose ProviderInfo says
    `restrictions` answer a request with any (and `time_rules` one with a time)."""

    avoid: AvoidArea | None = None
    truck: TruckDimensions | None = None
    time: RouteTime | None = None  # rules by time apply at the time each road is reached

    @property
    def parameter(self) -> str | None:
        """The parameter that makes the request need per-request costs (for error messages)."""
        if self.avoid is not None:
            return "avoid"
        if self.time is not None:
            return self.time.parameter
        if self.truck is None:
            return None
        given = [name for name, value in zip(TRUCK_PARAMETERS, astuple(self.truck), strict=True) if value is not None]
        return given[0] if given else "vehicle"


NO_RESTRICTIONS = Restrictions()


@dataclass(frozen=True)
class Wording:
    """The language (a code of `instructions.INSTRUCTION_LANGUAGES`) and units an answer's
    sentences are written in (issue 35)."""

    language: str = "en"
    units: str = "metric"


ENGLISH = Wording()


@dataclass(frozen=True)
class RouteQuery:
    origin: LatLon
    destination: LatLon
    vehicle: str = "car"
    route_type: str = "fastest"
    alternatives: int = 0
    emergency_radius_m: int = 0
    steps: bool = True
    restrictions: Restrictions = NO_RESTRICTIONS
    wording: Wording = ENGLISH  # the steps' sentences: the formatter's, no provider reads it
    geometry: bool = True  # the routes' lines in the answer (false: distances, durations and steps)


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


# Steps and their parts are made by the dozen for every route: slots, and not frozen (a frozen
# dataclass's __init__ costs three times as much, measured).
@dataclass(slots=True)
class Maneuver:
    """The turn at the start of a step, as OSRM describes it (the formatter writes its sentence)."""

    type: str  # depart, turn, roundabout, arrive, ...
    location: tuple[float, float]  # (lon, lat)
    bearing_before: int
    bearing_after: int
    modifier: str | None = None  # left, slight right, uturn, ...
    exit: int | None = None  # roundabouts: which exit


@dataclass(frozen=True, slots=True)
class Signs:
    """What a driver reads at a maneuver besides the street's name (OSRM's step fields), for
    the sentence (route_service.instructions)."""

    ref: str = ""  # the road's number, "B37;B45"
    destinations: str = ""  # the signs' destinations, "A5: Frankfurt, Karlsruhe"
    exits: str = ""  # exit numbers, "4A;4B"
    rotary_name: str = ""
    lanes: tuple[bool, ...] = ()  # the lanes at the maneuver, left to right: usable or not
    motorway: bool = False  # the road taken is a motorway (its number says it better than a name)
    driving_side: str = ""  # "right", "left"; "" unknown (Valhalla): an off ramp then says its side


NO_SIGNS = Signs()


@dataclass(slots=True)
class Step:
    """One stretch of a leg along one street, with its maneuver and mode."""

    name: str
    distance_m: float
    duration_s: float
    geometry_index: tuple[int, int]  # first and last index into Route.geometry
    mode: str = ""
    maneuver: Maneuver | None = None
    signs: Signs = NO_SIGNS


@dataclass(slots=True)
class Leg:
    """The route between two consecutive input points."""

    distance_m: float
    duration_s: float
    summary: str = ""
    steps: list[Step] = field(default_factory=list)
    time_rules: list[TimeRuleMet] | None = None  # with a leg departure: the rules by time it met


@dataclass
class Route:
    distance_m: float
    duration_s: float
    geometry: np.ndarray  # (n, 2) float64 of (lon, lat), GeoJSON order
    legs: list[Leg] = field(default_factory=list)
    emergency_segments: list[EmergencySegment] = field(default_factory=list)


@dataclass(frozen=True)
class TimeRuleMet:
    """A rule by time that held where a route reached its road (issue 33, item 4)."""

    way_id: int
    road: str
    rule: str  # as OSM writes it: `motor_vehicle:conditional=destination @ (Mo-Sa 06:00-11:00)`
    effect: str  # what it did to the route: "open for reaching a place inside", "closed", "30 km/h"
    at: datetime  # when the route reached the road


@dataclass
class RouteResult:
    routes: list[Route]
    origin: Snapped
    destination: Snapped
    alternatives_requested: int = 0
    notes: list[str] = field(default_factory=list)
    # with a time (Restrictions.time): when the route leaves and arrives, and the rules it met
    departure: datetime | None = None
    arrival: datetime | None = None
    time_rules: list[TimeRuleMet] = field(default_factory=list)


MATRIX_ANNOTATIONS = ("duration", "distance")
# Rows of cells: a float64 array with NaN where no route exists (8 bytes a cell, written to JSON
# by orjson without a Python float each), or lists with None (tests' fakes).
Matrix = np.ndarray | list[list[float | None]]


@dataclass(frozen=True)
class MatrixQuery:
    sources: list[LatLon]
    destinations: list[LatLon]
    vehicle: str = "car"
    route_type: str = "fastest"
    annotations: tuple[str, ...] = MATRIX_ANNOTATIONS  # which tables to compute
    restrictions: Restrictions = NO_RESTRICTIONS
    # with a departure time: a destination on a road closed then gets the cells of its next
    # opening instead of none (the optimizer visits it in its windows; internal only)
    when_open: bool = False

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
    departure: datetime | None = None  # with departureTime (issue 33)
    timed_points: list[TimedPointInfo] = field(default_factory=list)


@dataclass(frozen=True)
class TimedPointInfo:
    """A matrix point on a road whose rules depend on the time (issue 33): when it can be reached."""

    parameter: str  # sources[i] or destinations[j]
    way_id: int
    road: str
    rules: list[str]  # as OSM writes them
    open_at_departure: bool
    windows: list[tuple[datetime, datetime]]  # when the vehicle may reach it, a week ahead


NOT_ASKED: np.ndarray = np.empty((0, 0))


Profile = tuple[str, str]  # (vehicle, route type)
EVERY_PROFILE: frozenset[Profile] = frozenset(product(VEHICLES, ROUTE_TYPES))


@dataclass(frozen=True)
class ProviderInfo:
    """What a provider says about itself (GET /v1/providers, and the registry's checks)."""

    name: str
    description: str
    profiles: frozenset[Profile]  # the vehicle/type pairs its data serves
    emergency_routing: bool = False
    alternatives: bool = False
    restrictions: bool = False  # avoid areas and truck dimensions (per-request costs)
    time_rules: bool = False  # OSM's rules by time, at departureTime or arrivalTime (issue 33)
    one_alternative: frozenset[Profile] = frozenset()  # profiles whose routes find one alternative at most

    def serves(self, vehicle: str, route_type: str) -> bool:
        return (vehicle, route_type) in self.profiles

    def unmet(self, restrictions: Restrictions) -> str | None:
        """The parameter of `restrictions` this provider cannot answer (None: it answers all)."""
        if restrictions.parameter is not None and not self.restrictions:
            return restrictions.parameter
        if restrictions.time is not None and not self.time_rules:
            return restrictions.time.parameter
        return None

    def most_alternatives(self, vehicle: str, route_type: str) -> int:
        if not self.alternatives:
            return 0
        return 1 if (vehicle, route_type) in self.one_alternative else MAX_ALTERNATIVES

    @property
    def vehicles(self) -> tuple[str, ...]:
        return tuple(v for v in VEHICLES if any((v, t) in self.profiles for t in ROUTE_TYPES))

    @property
    def route_types(self) -> tuple[str, ...]:
        return tuple(t for t in ROUTE_TYPES if any((v, t) in self.profiles for v in VEHICLES))


# ---------------------------------------------------------------- lean costs and map matching (detours)


@dataclass(frozen=True)
class CostQuery:
    """The length of the route through `points`, each a stop where turning around is allowed.
    `names[i]` is how errors name `points[i]` (`from`, `via`, `to`)."""

    points: Sequence[LatLon]
    names: Sequence[str]
    vehicle: str = "car"
    route_type: str = "fastest"
    departure: datetime | None = None  # rules by time: the first leg leaves then, each next on arrival


@dataclass(frozen=True)
class Cost:
    """Only the length of a route: what the detour endpoint needs, computed without geometry."""

    distance_m: float
    duration_s: float


@dataclass(frozen=True)
class DetourQuery:
    """One detour line: the route from `origin` to `destination`, and the one through `via`
    (a stop where turning around is allowed)."""

    origin: LatLon
    via: LatLon
    destination: LatLon
    vehicle: str = "car"
    route_type: str = "fastest"


@dataclass(frozen=True)
class DetourCosts:
    direct: Cost
    via: Cost


@dataclass(frozen=True)
class Matching:
    """One stretch of a track matched to roads: input points first_index..last_index."""

    first_index: int
    last_index: int
    distance_m: float
    duration_s: float
    confidence: float
    # (lon, lat) of the roads driven, with `MatchQuery.detail` only
    geometry: np.ndarray | None = field(default=None, compare=False)


@dataclass(frozen=True)
class MatchQuery:
    """A recorded track to match to the roads; `timestamps` (seconds) for all points or none.
    `detail`: each point's place on the road and each matching's geometry too (POST
    /v1/match), not only which points are matched (the detour's lean use)."""

    points: Sequence[LatLon]
    timestamps: Sequence[int] | None = None
    vehicle: str = "car"
    route_type: str = "fastest"
    detail: bool = False
    gps_accuracy_m: float | None = None  # the GPS error to assume; None: the provider's default


@dataclass
class MatchResult:
    matchings: list[Matching]  # in track order; gaps between them could not be matched
    matched: list[bool]  # per input point
    # per input point where it was matched onto the road (None: not matched), with `detail` only
    snapped: list[Snapped | None] = field(default_factory=list)
    # per input point: left out by thinning, answered as the kept point before it (POST /v1/match)
    thinned: list[bool] = field(default_factory=list)
    cpu_s: float = 0.0  # the matching's CPU (POST /v1/match settles its price to it)


# ---------------------------------------------------------------- one route through many waypoints (stop tours)


@dataclass(frozen=True)
class WaypointsQuery:
    """A route visiting `waypoints` in the given order (the optimize service's tour geometry)."""

    waypoints: list[LatLon]
    vehicle: str = "car"
    route_type: str = "fastest"
    restrictions: Restrictions = NO_RESTRICTIONS
    # With a time (issue 33): each leg leaves at its `leg_departures` (a fleet's schedule,
    # waits included), or else the first at restrictions.time plus the first waypoint's service
    # time and each next one on arrival plus its waypoint's (`service_s`, seconds; a stop tour).
    leg_departures: tuple[datetime, ...] = ()
    service_s: tuple[float, ...] = ()


@dataclass
class WaypointsResult:
    route: Route  # legs: one per consecutive pair of waypoints, without steps
    snapped: list[Snapped]


# ---------------------------------------------------------------- isochrones

ISOCHRONE_METRICS = ("time", "distance")  # seconds of driving, or metres along the roads


@dataclass(frozen=True)
class IsochroneQuery:
    point: LatLon
    limits: tuple[float, ...]  # ascending: seconds for "time", metres for "distance"
    metric: str = "time"
    vehicle: str = "car"
    route_type: str = "fastest"
    departure: datetime | None = None  # rules by time as they are then (issue 33)


@dataclass
class IsochroneResult:
    """One area per limit, ascending and nested: GeoJSON-ready (Multi)Polygon coordinates."""

    origin: Snapped
    areas: list[dict[str, object]]  # GeoJSON geometry objects
    # Per limit: every road reachable from the point is reached within it, so the loaded map's
    # roads end before the limit and a larger one gives the same area (empty: not known).
    map_end_reached: list[bool] = field(default_factory=list)
    # Per limit: the area reaches a road the loaded map cuts, so it is cut there too (empty: not known).
    map_edge_reached: list[bool] = field(default_factory=list)
