"""Typed fleet-routing request and plan of POST /v1/optimize/routes (no aiohttp here).

Times inside are whole seconds after the request's `startTime` (what the solver works in);
the formatter turns them back into date-times with the start time's offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from common.areas import AvoidArea
from common.geo import LatLon
from optimize_service.time_limits import interpolated_seconds

MAX_VEHICLES = 50  # more → 413 ERROR_PAYLOAD_TOO_LARGE
MAX_STOPS = 500  # places to visit, a job one and a shipment two; more → 413 OPTIMIZE_ERROR_TOO_MANY_STOPS
MAX_DIMENSIONS = 5  # capacity dimensions (weight, volume, pallets, …)
MAX_AMOUNT = 1_000_000  # per dimension, of a capacity, a demand or an amount
UNLIMITED_CAPACITY = 1_000_000_000  # a vehicle without `capacity` (never reached: amounts <= MAX_AMOUNT * MAX_STOPS)
MAX_WINDOWS = 10  # time windows per job, pickup or delivery; also breaks per vehicle
MAX_SKILLS = 20
MAX_PRIORITY = 100
MAX_ID_LENGTH = 100
MAX_HORIZON_S = 31 * 86_400  # every time must lie within 31 days after startTime
MAX_DISTANCE_M = 10_000_000  # a route's maxDistance: 10 000 km
MAX_SERVICE_TIME_S = 86_400
MAX_DEPOTS = 50  # the request's named depots (reloads, issue 36 item 1)
MAX_PRIZE = 10_000_000  # an optional job's prize, in the unit of the vehicles' costs
MIN_TIME_LIMIT_S = 0.1
MAX_TIME_LIMIT_S = 30.0


@dataclass(frozen=True)
class Window:
    """[start_s, end_s] in seconds after startTime, start ≤ end."""

    start_s: int
    end_s: int


@dataclass(frozen=True)
class Break:
    id: str
    windows: tuple[Window, ...]
    duration_s: int


@dataclass(frozen=True)
class Costs:
    """Per vehicle: what using it costs (VROOM's units: fixed, per hour driven, per km)."""

    fixed: int = 0
    per_hour: int = 3600
    per_km: int = 0


@dataclass(frozen=True)
class Limits:
    """What one route may hold (issue 36, item 3); None: no limit. The working time (from leaving
    the start to arriving at the end) is also the shift's end, a route leaving at its start."""

    working_s: int | None = None
    distance_m: int | None = None
    stops: int | None = None  # jobs, pickups and deliveries


NO_LIMITS = Limits()


def breaks_over(breaks: Sequence[Break], start_s: int) -> tuple[int, int | None]:
    """When the breaks are over, each taken as early as it can after the ones before it, from
    `start_s`; and the position of the first that cannot begin within its windows (None: all can)."""
    clock = start_s
    for position, taken in enumerate(breaks):
        window = next((w for w in taken.windows if w.end_s >= clock), None)
        if window is None:
            return clock, position
        clock = max(clock, window.start_s) + taken.duration_s
    return clock, None


def working_shift(shift: Window, working_s: int | None) -> Window:
    """The shift a working-time limit leaves: routes leave at the shift's start, so it ends then."""
    return shift if working_s is None else Window(shift.start_s, min(shift.end_s, shift.start_s + working_s))


@dataclass(frozen=True)
class FleetDepot:
    """A named depot vehicles may reload at (issue 36, item 1)."""

    id: str
    location: LatLon


@dataclass(frozen=True)
class Current:
    """Where a vehicle is in a day under way (issue 36, item 6): its place and time, the load on
    board, and the jobs it has committed to (served first, in this order, from that load)."""

    location: LatLon
    time_s: int
    load: tuple[int, ...]
    committed: tuple[int, ...] = ()  # job indexes


@dataclass(frozen=True)
class FleetVehicle:
    id: str
    kind: str  # common.vocabulary.VEHICLES
    start: LatLon
    end: LatLon | None  # None: the route ends at its last task
    capacity: tuple[int, ...]
    shift: Window
    skills: frozenset[str] = frozenset()
    breaks: tuple[Break, ...] = ()
    costs: Costs = Costs()
    limits: Limits = NO_LIMITS
    truck: tuple[tuple[str, float], ...] = ()  # a truck's dimensions (common.vehicles.TRUCK_DIMENSIONS), by name
    reload_depots: tuple[int, ...] = ()  # into the request's depots: where it may reload (issue 36, item 1)
    max_trips: int | None = None  # None: as many as the shift allows
    current: Current | None = None  # a day under way: the rest of it is planned (issue 36, item 6)

    @property
    def profile(self) -> str:
        """The road times and distances it drives on (issue 36, item 7): its kind's, and a
        truck's with its dimensions (a 4 m truck avoids the 3.5 m underpass a van takes)."""
        if not self.truck:
            return self.kind
        return f"{self.kind}({','.join(f'{name}={value:g}' for name, value in self.truck)})"


@dataclass(frozen=True)
class Place:
    """Where a task is done, how long it takes and when it may begin."""

    location: LatLon
    service_s: int
    windows: tuple[Window, ...]  # sorted, disjoint; never empty (default: the whole horizon)


@dataclass(frozen=True)
class FleetJob:
    id: str
    place: Place
    demand: tuple[int, ...]  # delivered from the vehicle's load
    skills: frozenset[str] = frozenset()
    priority: int = 0
    release_s: int = 0  # ready at the depot only then: the vehicle leaves with it no earlier (issue 36, item 2)
    group: str | None = None  # exactly one job of a group is served (issue 36, item 5)
    prize: int | None = None  # optional: served only when its prize pays for serving it; None: wanted

    @property
    def planned_by_pyvrp(self) -> bool:
        """Rules VROOM does not model (`FleetRequest.pyvrp_rules`)."""
        return self.release_s > 0 or self.group is not None or self.prize is not None


@dataclass(frozen=True)
class FleetShipment:
    id: str
    pickup: Place
    delivery: Place
    amount: tuple[int, ...]  # carried from pickup to delivery
    skills: frozenset[str] = frozenset()
    priority: int = 0


@dataclass(frozen=True)
class FleetRequest:
    vehicles: tuple[FleetVehicle, ...]
    jobs: tuple[FleetJob, ...]
    shipments: tuple[FleetShipment, ...]
    start_time: datetime
    dimensions: int
    avoid: AvoidArea | None = None
    time_limit_s: float | None = None  # None: default_time_limit(stops)
    # startTime given: OSM's rules by time apply from then (issue 33); else time-independent
    timed: bool = False
    balance: str | None = None  # `objective.balance`: "duration" keeps the longest route short (issue 36, item 4)
    depots: tuple[FleetDepot, ...] = ()

    @property
    def pyvrp_rules(self) -> bool:
        """Reloads, job release times, groups or prizes: rules only PyVRP's model has (issue 36)."""
        return any(v.reload_depots for v in self.vehicles) or any(j.planned_by_pyvrp for j in self.jobs)

    @property
    def default_time_limit_s(self) -> float:
        """Each search's seconds when the request gives no `timeLimit`."""
        return default_rules_time_limit(self.stops) if self.pyvrp_rules else default_time_limit(self.stops)

    @property
    def groups(self) -> dict[str, list[int]]:
        """Each group's jobs (indexes), in request order."""
        found: dict[str, list[int]] = {}
        for index, job in enumerate(self.jobs):
            if job.group is not None:
                found.setdefault(job.group, []).append(index)
        return found

    @property
    def stops(self) -> int:
        return len(self.jobs) + 2 * len(self.shipments)

    @property
    def kinds(self) -> list[str]:
        """The vehicle kinds used, in the order of the first vehicle of each."""
        return list(dict.fromkeys(vehicle.kind for vehicle in self.vehicles))

    @property
    def profiles(self) -> dict[str, int]:
        """Each road profile used (`FleetVehicle.profile`) → its first vehicle: one matrix each."""
        found: dict[str, int] = {}
        for index, vehicle in enumerate(self.vehicles):
            found.setdefault(vehicle.profile, index)
        return found


# (stops, seconds) between which the default time limit is interpolated; flat beyond the ends.
TIME_LIMIT_POINTS = ((50, 1.0), (100, 1.75), (200, 10.0), (433, MAX_TIME_LIMIT_S))


def default_time_limit(stops: int) -> float:
    """Seconds each search may take (two at once). 100 jobs x 5 vehicles must answer in 2 s end
    to end (issue 17): on the idle machine the request took 1.45-1.47 s around a 1.4 s search
    (`python -m bench fleet`), so 1.75 s at 100 stops ends it at about 90 % of the goal, the rule
    the stop order follows too (optimize_service.stops.solver.default_time_limit); 1 s up to 50.
    Above, PyVRP's plan keeps improving for tens of seconds:
    measured on the seeded instances of `python -m bench fleet` (one core each), at 200 jobs x
    10 vehicles 5 s of search were 1.0-1.5 % above the same search at 40-60 s, 10 s 0.05-0.9 %;
    hence 10 s at 200 stops, growing as fast to the API's 30 s."""
    return interpolated_seconds(TIME_LIMIT_POINTS, stops)


# Requests with reloads, release times, groups or prizes (PyVRP alone, issue 36): 100 jobs x 5
# vehicles must answer in 5 s end to end, so the same curve scaled to end its search well within
# that goal at 100 stops, at most the API's 30 s. A 4.5 s search (90 % of the goal) answered in
# 4.60-5.59 s through the gateway (`python -m bench fleet_rules` on 47e5450): Heidelberg's and
# Munich's timed matrices and legs took up to 1.1 s around it; hence 4.0 s.
RULES_TIME_LIMIT_SCALE = 4.0 / 1.75


def default_rules_time_limit(stops: int) -> float:
    return min(MAX_TIME_LIMIT_S, RULES_TIME_LIMIT_SCALE * default_time_limit(stops))


# Around that search, the matrix and the road lines take what the map's engine costs: with rules
# by time on Heidelberg, 100 x 5, the timed matrix 0.64-1.58 s and the lines 0.27-0.84 s on a busy
# machine, answering in 4.99-5.40 s; on Helsinki, Andorra and Monaco 0.04-0.11 s each. The lines
# took 0.28-1.15x the matrix's time (25 requests of bench fleet_rules' 100 x 5 on the five cities,
# median 0.53). A truck with dimensions (Valhalla's matrix, issue 56): 100 stops answered in
# 3.26-3.42 s, ~1.1 s of it the matrix, against a 3 s goal (bench scale). So a default search
# gets what twice the matrix's time leaves of ANSWER_ALLOWANCE_S, never less than half its
# default; OSRM's matrix of 100 stops (~0.1 s) leaves it whole.
ANSWER_ALLOWANCE_S = 0.75


def search_after_matrix_s(default_s: float, matrix_s: float) -> float:
    """The default search of a request whose matrix took `matrix_s`."""
    return max(default_s / 2, min(default_s, default_s + ANSWER_ALLOWANCE_S - 2 * matrix_s))


@dataclass(frozen=True)
class Step:
    """One step of a route, times in seconds after startTime."""

    type: str  # start | job | pickup | delivery | break | reload | end
    task: int | None  # index into jobs, shipments (pickup, delivery), the vehicle's breaks or the depots (reload)
    location: int | None  # into the plan's locations; None for a break
    arrival_s: int
    waiting_s: int
    service_s: int
    load: tuple[int, ...]
    distance_m: int  # driven since the route's start
    duration_s: int  # driving time since the route's start


def route_cost(vehicle: FleetVehicle, duration_s: int, distance_m: int) -> int:
    """VROOM's cost of a route: fixed + per hour driven + per km."""
    costs = vehicle.costs
    return costs.fixed + round(costs.per_hour * duration_s / 3600 + costs.per_km * distance_m / 1000)


@dataclass(frozen=True)
class RoutePlan:
    vehicle: int  # index into the request's vehicles
    steps: tuple[Step, ...]
    cost: int
    geometry: list[list[float]] = field(default_factory=list)  # [lon, lat] pairs
    time_rules: list[dict[str, Any]] | None = None  # with startTime: the rules by time its legs met

    @property
    def distance_m(self) -> int:
        return self.steps[-1].distance_m

    @property
    def duration_s(self) -> int:
        return self.steps[-1].duration_s


@dataclass(frozen=True)
class Unassigned:
    type: str  # job | shipment
    task: int
    reason: str  # a stable word: fleet.reasons.MESSAGES
    message: str


@dataclass
class FleetPlan:
    request: FleetRequest
    locations: list[LatLon]
    routes: list[RoutePlan]
    unassigned: list[Unassigned]
    solver: dict[str, Any]
    dataset: str = ""
    provider: str = ""
