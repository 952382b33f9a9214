"""One optimization from a parsed request to the plan: road matrix → order → road tour →
schedule. Async because it calls the route service; no aiohttp server code here."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import numpy as np

from optimize_service.routing import RouteClient
from optimize_service.scheduler import SolverRunner
from optimize_service.stops.model import OptimizeRequest, Plan, TourEnds, TourRoute
from optimize_service.stops.reachability import stops_to_visit
from optimize_service.stops.schedule import schedule
from optimize_service.stops.solver import Tour, TourProblem


class Solvers(Protocol):
    """A place for a problem of this size with the solvers (`scheduler.Scheduler`)."""

    def admit(
        self, stops: int, time_limit_s: float | None, account: str = ""
    ) -> AbstractAsyncContextManager[SolverRunner]: ...


async def plan_tour(request: OptimizeRequest, routes: RouteClient, solvers: Solvers, account: str = "") -> Plan:
    """`account`: who asked, so the solvers take turns between accounts ("": nobody's behalf)."""
    stops, ends, options = request.stops, request.ends, request.options
    if len(stops) == 1:
        return single_stop_plan(request)
    # The solver's place first: a busy optimizer refuses at once, before any routing.
    async with solvers.admit(len(stops), options.time_limit_s, account) as run_solver:
        matrix = await routes.matrix(stops, options)
        visited = stops_to_visit(matrix.durations_s, stops, ends, options.strict)
        tour = await run_solver(tour_problem(matrix.durations_s, visited, ends, options.time_limit_s))
    order = [visited[position] for position in tour.order]
    visiting_order = [*order, ends.start] if ends.round_trip else order
    route = await routes.tour(stops, visiting_order, options)
    visits = schedule(stops, visiting_order, route.legs, options.start_time)
    unassigned = sorted(set(range(len(stops))) - set(visited))
    return Plan(request, visits, route, solver_summary(tour), unassigned)


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

