"""One fleet-routing request from its parsed form to the plan (no aiohttp server code here):
distinct points → one road matrix per vehicle kind (durations and distances, from the route
service) → VROOM and, where it models the whole problem, PyVRP in a solver lane, the better
plan kept → one road geometry per used vehicle → a reason for each
task left out."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np

from common.errors import UpstreamError, Violation
from common.geo import LatLon
from optimize_service.fleet.balance import FIRST_SHARE, ROUNDS, bounded, keeps_the_tasks, longest_s, mean_s, next_bound
from optimize_service.fleet.model import MAX_HORIZON_S, FleetPlan, FleetRequest, RoutePlan, Step, search_after_matrix_s
from optimize_service.fleet.problem import NO_ROAD_M, NO_ROAD_S, FleetProblem, FleetSolution, Locations
from optimize_service.fleet.reasons import check_groups_servable, explain
from optimize_service.fleet.replan import committed_days, rest_of_day, with_committed
from optimize_service.fleet.road_windows import explain_closed, with_road_windows
from optimize_service.fleet.solver import (
    EXPLORATION_LEVEL,
    methods_for,
    portfolio,
    solve_fleet,
    solve_method,
)
from optimize_service.road_windows import RoadWindow, read_road_windows
from optimize_service.routing import RouteClient
from optimize_service.scheduler import Job, Lane, Scheduler

log = logging.getLogger(__name__)

ROUTE_TYPE = "fastest"
POINT_PARAMETER = re.compile(r"^(sources|destinations|waypoints)\[(\d+)\]$")


class Points:
    """The request's distinct points, each with the first field that names it (for errors)."""

    def __init__(self) -> None:
        self.points: list[LatLon] = []
        self.names: list[str] = []
        self._index: dict[LatLon, int] = {}

    def add(self, point: LatLon, name: str) -> int:
        if point not in self._index:
            self._index[point] = len(self.points)
            self.points.append(point)
            self.names.append(name)
        return self._index[point]


def locate(request: FleetRequest) -> tuple[Points, Locations]:
    found = Points()
    starts = tuple(found.add(v.start, f"vehicles[{i}].start") for i, v in enumerate(request.vehicles))
    ends = tuple(
        None if v.end is None else found.add(v.end, f"vehicles[{i}].end") for i, v in enumerate(request.vehicles)
    )
    jobs = tuple(found.add(j.place.location, f"jobs[{i}].location") for i, j in enumerate(request.jobs))
    pickups = tuple(
        found.add(s.pickup.location, f"shipments[{i}].pickup.location") for i, s in enumerate(request.shipments)
    )
    deliveries = tuple(
        found.add(s.delivery.location, f"shipments[{i}].delivery.location") for i, s in enumerate(request.shipments)
    )
    depots = tuple(found.add(d.location, f"depots[{i}].location") for i, d in enumerate(request.depots))
    currents = tuple(None if v.current is None else found.add(v.current.location, f"vehicles[{i}].current.location")
                     for i, v in enumerate(request.vehicles))  # fmt: skip
    return found, Locations(starts, ends, jobs, pickups, deliveries, depots, currents)


async def plan_fleet(request: FleetRequest, routes: RouteClient, scheduler: Scheduler, account: str = "") -> FleetPlan:
    """Raises the route service's errors naming the request's fields, or OptimizerBusy.
    `account`: who asked, so the lane takes turns between accounts ("": nobody's behalf)."""
    points, where = locate(request)
    async with scheduler.admit_work(fleet_time_limit(request), account) as (lane, job):
        profiles = request.profiles  # one matrix per road profile (issue 36, item 7)
        asked = asyncio.get_running_loop().time()
        matrices = await asyncio.gather(*(profile_matrix(routes, points, v, request) for v in profiles.values()))
        request = with_search_time(request, asyncio.get_running_loop().time() - asked)
        durations = {name: m[0] for name, m in zip(profiles, matrices, strict=True)}
        distances = {name: m[1] for name, m in zip(profiles, matrices, strict=True)}
        roads = {point: road for m in reversed(matrices) for point, road in m[2].items()}  # the first kind's
        request = with_road_windows(request, where, roads)
        problem = FleetProblem(request, where, durations, distances, threads=lane.parallel)
        check_groups_servable(problem)
        committed = committed_days(problem)  # a day under way: its committed steps first (issue 36, item 6)
        rest, kept = rest_of_day(problem, committed)
        solution, balance = await (balanced_in(lane, job, rest) if request.balance else unbalanced_in(lane, job, rest))
    explained = [explain_closed(explain(item, rest), rest, roads) for item in solution.unassigned]
    solution = with_committed(replace(solution, unassigned=explained), problem, committed, kept)
    answers = await asyncio.gather(*(route_geometry(routes, points, route, request) for route in solution.routes))
    plans = [plan for plan, _ in answers]
    meta = next((info for _, info in answers if info), {})
    return FleetPlan(
        request=request,
        locations=points.points,
        routes=plans,
        unassigned=solution.unassigned,
        solver={
            "method": solution.method,
            "explorationLevel": EXPLORATION_LEVEL,
            "timeLimit": solution.time_limit_s,
            "cost": solution.cost,
            **balance,
        },
        dataset=str(meta.get("dataset", "")),
        provider=str(meta.get("provider", "")),
    )


def with_search_time(request: FleetRequest, matrix_s: float) -> FleetRequest:
    """A request without `timeLimit` searches for what its matrix leaves of its answer's time
    (`search_after_matrix_s`); one with it as asked."""
    if request.time_limit_s is not None:
        return request
    return replace(request, time_limit_s=round(search_after_matrix_s(request.default_time_limit_s, matrix_s), 3))


def fleet_time_limit(request: FleetRequest) -> float:
    return request.time_limit_s if request.time_limit_s is not None else request.default_time_limit_s


async def unbalanced_in(lane: Lane, job: Job, problem: FleetProblem) -> tuple[FleetSolution, dict[str, Any]]:
    return await solve_in(lane, job, problem), {}


async def balanced_in(lane: Lane, job: Job, problem: FleetProblem) -> tuple[FleetSolution, dict[str, Any]]:
    """The cheapest plan, then plans with every route bounded shorter (`fleet.balance`): the one
    whose longest route is shortest, leaving out no more tasks. The time limit is shared."""
    limit = fleet_time_limit(problem.request)
    first = await solve_in(lane, job, bounded(problem, MAX_HORIZON_S, limit * FIRST_SHARE))
    best, low, rounds = first, mean_s(first, len(problem.request.vehicles)), 0
    round_limit = limit * (1 - FIRST_SHARE) / ROUNDS
    while rounds < ROUNDS and (bound := next_bound(low, longest_s(best))) is not None:
        rounds += 1
        try:
            found = await solve_in(lane, job, bounded(problem, bound, round_limit))
        except Exception:  # a bounded round is a refinement: its failure keeps the plan found
            log.warning("a balanced round failed; the plan found before it is kept", exc_info=True)
            break
        if keeps_the_tasks(found, first) and longest_s(found) < longest_s(best):
            best = found
        else:
            low = bound
    balance = {"objective": {"balance": "duration"}, "longestRoute": longest_s(best),
               "longestRouteCheapest": longest_s(first), "rounds": rounds}  # fmt: skip
    return replace(best, time_limit_s=limit), {"balance": balance}


async def solve_in(lane: Lane, job: Job, problem: FleetProblem) -> FleetSolution:
    """The portfolio (`methods_for`): with two processes in the lane each search in its own,
    at once, VROOM on one thread, round by round (`portfolio`); otherwise all in one process
    one after the other."""
    if len(methods_for(problem.request)) == 1 or lane.parallel < 2:
        return await lane.call(job, solve_fleet, problem)
    rounds = portfolio(problem, work=solve_method)
    calls = next(rounds)
    while True:
        found = await lane.call_each(job, calls)
        try:
            calls = rounds.send(found)
        except StopIteration as done:
            return done.value


def profile(vehicle_index: int, request: FleetRequest) -> dict[str, Any]:
    """What the route service needs to drive as this vehicle: its kind, a truck's dimensions."""
    vehicle = request.vehicles[vehicle_index]
    chosen: dict[str, Any] = {"vehicle": vehicle.kind, "type": ROUTE_TYPE}
    if vehicle.truck:
        chosen["truck"] = dict(vehicle.truck)
    if request.avoid is not None:
        chosen["avoid"] = request.avoid.as_geojson()
    return chosen


async def profile_matrix(
    routes: RouteClient, points: Points, vehicle: int, request: FleetRequest
) -> tuple[np.ndarray, np.ndarray, dict[int, RoadWindow]]:
    """Integer seconds and metres between every two points as this vehicle drives; where no road
    connects them, values no shift can hold (the solver leaves such tasks out). With startTime
    (issue 33) the matrix leaves then, and a point on a road closed at that time has the cells
    of its next opening and its road's windows (optimize_service.road_windows)."""
    body = {
        "sources": [point_body(p) for p in points.points],
        "destinations": [point_body(p) for p in points.points],
        "annotations": ["duration", "distance"],
        **profile(vehicle, request),
    }
    if request.timed:
        body |= {"departureTime": request.start_time.isoformat(), "whenOpen": True}
    answer = await call(routes, "/internal/matrix", body, points.names, f"vehicles[{vehicle}].kind")
    seconds, metres = solver_cells(answer["durations"], answer["distances"])
    return seconds, metres, read_road_windows(answer, request.start_time)


def solver_cells(durations: list[list[float | None]], distances: list[list[float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Whole seconds and metres; no road: NO_ROAD_S/M. Staying at a point takes nothing: a timed
    matrix's cell from a point on a closed road to itself holds the wait for its opening (the
    task's windows carry that), and PyVRP refuses a matrix whose diagonal is not zero (found on
    Munich at 08:00 by bench fleet_balance: every request a 500)."""
    raw_s, raw_m = np.array(durations, dtype=np.float64), np.array(distances, dtype=np.float64)
    no_road = ~np.isfinite(raw_s) | ~np.isfinite(raw_m)
    seconds = np.where(no_road, NO_ROAD_S, np.rint(np.nan_to_num(raw_s))).astype(np.int64)
    metres = np.where(no_road, NO_ROAD_M, np.rint(np.nan_to_num(raw_m))).astype(np.int64)
    np.fill_diagonal(seconds, 0)
    np.fill_diagonal(metres, 0)
    return seconds, metres


async def route_geometry(
    routes: RouteClient, points: Points, route: RoutePlan, request: FleetRequest
) -> tuple[RoutePlan, dict[str, Any]]:
    """The road line through the route's places in order (breaks have none). With startTime
    (issue 33) each leg is routed when it leaves, and the rules by time it met are listed."""
    order: list[int] = []
    departures: list[int] = []  # seconds after startTime
    last: Step | None = None
    for step in route.steps:
        if step.location is None:
            continue
        if order and order[-1] != step.location:
            assert last is not None  # driving time since the last place: the vehicle left then
            departures.append(step.arrival_s - (step.duration_s - last.duration_s))
        if not order or order[-1] != step.location:
            order.append(step.location)
        last = step
    if len(order) < 2:
        here = [points.points[order[0]].lon, points.points[order[0]].lat]
        return RoutePlan(route.vehicle, route.steps, route.cost, [here, here]), {}
    body: dict[str, Any] = {"waypoints": [point_body(points.points[i]) for i in order], **profile(route.vehicle, request)}
    names, field = [points.names[i] for i in order], f"vehicles[{route.vehicle}].kind"
    if request.timed:
        timed = {**body, "legDepartures": [(request.start_time + timedelta(seconds=s)).isoformat() for s in departures]}
        try:
            answer = await call(routes, "/internal/route", timed, names, field)
            return RoutePlan(route.vehicle, route.steps, route.cost, answer["geometry"]["coordinates"],
                             rules_met(answer["legs"])), answer  # fmt: skip
        except UpstreamError as exc:
            # A stop the road route reaches just after its road closes, where the plan's matrix
            # times had it just before: the line without times, the plan unchanged.
            if exc.code != "ROUTE_ERROR_NO_ROUTE":
                raise
    answer = await call(routes, "/internal/route", body, names, field)
    rules = None
    return RoutePlan(route.vehicle, route.steps, route.cost, answer["geometry"]["coordinates"], rules), answer


def rules_met(legs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The legs' rules by time, each way and rule once (the first time it was met)."""
    met: dict[tuple[Any, Any], dict[str, Any]] = {}
    for leg in legs:
        for rule in leg.get("timeRules", []):
            met.setdefault((rule["way"], rule["rule"]), rule)
    return list(met.values())


async def call(routes: RouteClient, path: str, body: dict[str, Any], names: list[str], kind: str) -> Any:
    """The route service's `sources[k]`/`waypoints[k]` renamed to the request's field at point
    k, its `vehicle` (a kind the map has no profile for) to the vehicle's `kind`."""
    try:
        return await routes.client.post_json(path, body)
    except UpstreamError as exc:
        raise rename_points(exc, names, kind) from exc


def rename_points(error: UpstreamError, names: list[str], kind: str) -> UpstreamError:
    def field(violation: Violation) -> Violation:
        if violation.parameter == "vehicle":
            return replace(violation, parameter=kind)
        match = POINT_PARAMETER.match(violation.parameter or "")
        if not match or int(match.group(2)) >= len(names):
            return violation
        return replace(violation, parameter=names[int(match.group(2))])

    return error.renamed(field)


def point_body(point: LatLon) -> dict[str, float]:
    return {"lat": point.lat, "lon": point.lon}
