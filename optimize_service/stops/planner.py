"""One optimization from a parsed request to the plan: road matrix → order → road tour →
schedule. Async because it calls the route service; no aiohttp server code here."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from itertools import pairwise
from typing import Any

import numpy as np

from common.errors import UpstreamError
from optimize_service.road_windows import RoadWindow
from optimize_service.routing import RouteClient
from optimize_service.scheduler import Job, Lane, Scheduler
from optimize_service.stops.exact import EXACT_MAX_STOPS
from optimize_service.stops.model import Leg, OptimizeRequest, Options, Plan, Stop, TourEnds, TourRoute
from optimize_service.stops.reachability import stops_to_visit
from optimize_service.stops.routing import RoadMatrix, road_matrix, road_tour
from optimize_service.stops.schedule import schedule, visit_times
from optimize_service.stops.solver import (
    Tour,
    TourProblem,
    default_time_limit,
    estimate_s,
    needs_search,
    searches,
    shortest,
    solve,
)


async def plan_tour(request: OptimizeRequest, routes: RouteClient, scheduler: Scheduler, account: str = "") -> Plan:
    """`account`: who asked, so the solvers take turns between accounts ("": nobody's behalf)."""
    stops, ends, options = request.stops, request.ends, request.options
    if len(stops) == 1:
        return single_stop_plan(request)
    # The solver's place first: a busy optimizer refuses at once, before any routing.
    estimate, exact = estimate_s(len(stops), options.time_limit_s), len(stops) <= EXACT_MAX_STOPS
    async with scheduler.admit_work(estimate, account, small=exact) as (lane, job):
        asked = time.perf_counter()
        matrix = await road_matrix(routes, stops, options)
        visited = stops_to_visit(matrix.durations_s, stops, ends, options.strict)
        limit_s = search_seconds(len(visited), options, time.perf_counter() - asked)
        closed = closed_at_departure(matrix, stops, visited, options)
        for _ in range(MAX_TIMED_ROUNDS):
            tour = await solve_in(lane, job, tour_problem(matrix.durations_s, visited, ends, limit_s))
            visiting_order = in_order(visited, tour, ends)
            late = closed_on_arrival(matrix, stops, visiting_order, options, ends)
            if not late:
                break
            closed |= late
            visited = [stop for stop in visited if stop not in late]
    if options.timed:
        route, visiting_order = await timed_tour(routes, stops, visiting_order, options, matrix, ends, closed)
        visited = [stop for stop in visited if stop in visiting_order]
    else:
        route = await road_tour(routes, stops, visiting_order, options)
    visits = schedule(stops, visiting_order, route.legs, options.start_time)
    unassigned = sorted(set(range(len(stops))) - set(visited))
    return Plan(request, visits, route, solver_summary(tour), unassigned, closed)


async def solve_in(lane: Lane, job: Job, problem: TourProblem) -> Tour:
    """The best single search, or with two processes or more the portfolio's searches at once
    (`solver.searches`), the shortest tour; an exact tour is solved once."""
    if not needs_search(problem) or lane.parallel < 2:
        return await lane.call(job, solve, problem)
    chosen = searches(len(problem.durations_s))[: lane.parallel]
    # Every search to its end, even when one fails: the lane's processes are busy until then.
    tours = await lane.call_each(job, [(solve, (problem, search)) for search in chosen])
    for tour in tours:
        if isinstance(tour, BaseException):
            raise tour
    return shortest([t for t in tours if isinstance(t, Tour)])


# A tour at a time routes its legs on our graph after the search, about as long as its matrix
# took (both are a search per stop: 0.22 and 0.28 s on Heidelberg's 100 stops in process), and
# the default search times assume both nearly free (`solver.default_time_limit`). So the search
# gives up twice the matrix's time, down to half its default: on the 15 seeded 100-stop
# instances (5 cities x 3 shapes) 0.4 s of search was at most 1.0 % (mean 0.2 %) above the best
# of 0.3-0.8 s, and 0.3 s 1.2 % (docs/decisions.md).
TIMED_ROUTING_PER_MATRIX = 2.0
TIMED_SEARCH_LEAST_SHARE = 0.5


def search_seconds(stops: int, options: Options, matrix_s: float) -> float | None:
    """The solver's search time: the request's `timeLimit`, else the default for the stops
    (None); a tour at a time leaves room for its road tour (TIMED_ROUTING_PER_MATRIX)."""
    if options.time_limit_s is not None or not options.timed:
        return options.time_limit_s
    default = default_time_limit(stops)
    return round(max(default * TIMED_SEARCH_LEAST_SHARE, default - TIMED_ROUTING_PER_MATRIX * matrix_s), 3)


async def timed_tour(routes: RouteClient, stops: list[Stop], visiting_order: list[int], options: Options,
                     matrix: RoadMatrix, ends: TourEnds, closed: dict[int, str]) -> tuple[TourRoute, list[int]]:  # fmt: skip
    """The road tour at startTime, each leg routed when it leaves (issue 33). A stop the road
    tour reaches while its road is closed (its times differ a little from the matrix's) is left
    out and the tour routed again without it (`closed` gets the reasons)."""
    order = list(visiting_order)
    for _ in range(MAX_TIMED_ROUNDS):
        if len(order) < 2:
            here = [stops[order[0]].coordinate.lon, stops[order[0]].coordinate.lat]
            return TourRoute(distance_m=0.0, duration_s=0.0, geometry=[here, here], legs=[]), order
        try:
            route = await road_tour(routes, stops, order, options)
        except UpstreamError as exc:
            index = blamed_stop(exc, ends)
            if index is None:
                raise
            closed[index] = exc.violations[0].message
            order = [stop for stop in order if stop != index]
            continue
        late = closed_on_arrival(matrix, stops, order, options, ends, route.legs)
        if not late:
            return route, order
        closed |= late
        order = [stop for stop in order if stop not in late]
    # still late after the rounds: the order's times as the last route gave them
    return route, order


def blamed_stop(error: UpstreamError, ends: TourEnds) -> int | None:
    """The stop a route error at a time names (`stops[k]`: its road closed when reached),
    unless it is one of the tour's ends."""
    for violation in error.violations:
        match = STOP_PARAMETER.match(violation.parameter or "")
        if error.code == "ROUTE_ERROR_NO_ROUTE" and match and int(match.group(1)) not in (ends.start, ends.end):
            return int(match.group(1))
    return None


STOP_PARAMETER = re.compile(r"^stops\[(\d+)\]$")


# Re-orders after leaving out stops reached while their road is closed (each round leaves out
# at least one; a tour whose later stops all close early needs few).
MAX_TIMED_ROUNDS = 4


def in_order(visited: list[int], tour: Tour, ends: TourEnds) -> list[int]:
    order = [visited[position] for position in tour.order]
    return [*order, ends.start] if ends.round_trip else order


def closed_at_departure(matrix: RoadMatrix, stops: list[Stop], visited: list[int], options: Options) -> dict[int, str]:
    """Stops left out (no cells) because their road is closed at startTime: why, and when it opens."""
    return {
        index: closed_message(road, options, "at startTime")
        for index, road in matrix.roads.items()
        if index not in visited and not road.holds(0)
    }


def closed_on_arrival(matrix: RoadMatrix, stops: list[Stop], visiting_order: list[int], options: Options,
                      ends: TourEnds, legs: list[Leg] | None = None) -> dict[int, str]:  # fmt: skip
    """The visited stops the tour reaches while their road is closed (never the tour's ends),
    by the road tour's legs or else the matrix's durations."""
    if not matrix.roads:
        return {}
    if legs is None:
        legs = matrix_legs(matrix, visiting_order)
    late = {}
    for visit in visit_times(stops, visiting_order, legs, options.start_time):
        road = matrix.roads.get(visit.stop_index)
        at_s = (visit.arrival - options.start_time).total_seconds()
        if road is not None and visit.stop_index not in (ends.start, ends.end) and not road.holds(at_s):
            late[visit.stop_index] = closed_message(road, options, f"when the tour reaches it ({visit.arrival.isoformat(timespec='minutes')})")
    return late


def closed_message(road: RoadWindow, options: Options, when: str) -> str:
    opens = next((start for start, _ in road.windows if start > 0), None)
    after = "" if opens is None else f"; it next opens at {(options.start_time + timedelta(seconds=opens)).isoformat(timespec='minutes')}"
    return f"{road.message(options.vehicle)}: closed {when}{after}"


def matrix_legs(matrix: RoadMatrix, visiting_order: list[int]) -> list[Leg]:
    """The legs of a visiting order by the matrix's durations."""
    return [Leg(0.0, float(matrix.durations_s[a, b])) for a, b in pairwise(visiting_order)]


def tour_problem(durations_s: np.ndarray, visited: list[int], ends: TourEnds, time_limit_s: float | None) -> TourProblem:
    """The problem over the stops visited alone (`visited`: their indexes among all stops)."""
    position = {stop: index for index, stop in enumerate(visited)}
    end = None if ends.end is None else position[ends.end]
    return TourProblem(durations_s[np.ix_(visited, visited)], position[ends.start], end, time_limit_s)


def single_stop_plan(request: OptimizeRequest) -> Plan:
    """Nothing to drive: the stop itself, a zero-length line and no legs."""
    coordinate = request.stops[0].coordinate
    here = [coordinate.lon, coordinate.lat]
    route = TourRoute(distance_m=0.0, duration_s=0.0, geometry=[here, here], legs=[])
    visits = schedule(request.stops, [0], [], request.options.start_time)
    summary = {"method": "trivial", "optimal": True, "matrixDuration": 0.0, "timeLimit": None}
    return Plan(request, visits, route, summary)


def solver_summary(tour: Tour) -> dict[str, Any]:
    return {
        "method": tour.method,
        "optimal": tour.optimal,
        "matrixDuration": round(tour.duration_s, 1),  # what was minimized, on the road matrix
        "timeLimit": tour.time_limit_s,
    }

