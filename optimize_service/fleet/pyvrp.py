"""The fleet problem solved by PyVRP, and its answer as our routes (imported in solver processes
and by the quality bench, which uses the same model for its PyVRP reference).

PyVRP models a part of what VROOM does; `fleet.solver.pyvrp_fits` says whether a request lies
in it: jobs only (no shipments), one time window each, no breaks, no skills, one priority.
The model then is the same problem as VROOM's:

- one PyVRP location per distinct point (the problem's location indexes), plus a free end for
  open routes (every leg into it costs and takes nothing);
- a vehicle type per group of identical vehicles (kind, start, end, capacity, shift, costs);
- the objective VROOM minimizes: per vehicle, `fixed + per_hour x driving hours + per_km x
  km`, kept in integers by counting in 1/3600 of a cost unit (PyVRP's "distance" matrix per
  cost profile; waiting and service cost nothing, as in VROOM);
- every job some vehicle could serve alone required (`fleet.reasons`: reachable within its
  window and the shift, capacity and skills allowing), the others left out as VROOM leaves
  them: when PyVRP finds no plan that serves all the required ones, its answer is not used
  (VROOM's, which may leave more jobs out, stands).

Times are recomputed from PyVRP's order (`schedule`): leave at the vehicle's shift start,
begin each job at the earliest moment its window allows. An order PyVRP found feasible stays
feasible so; the result is checked again (`Infeasible` names what broke).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from pyvrp import Client, Depot, Location, ProblemData, Route, Solution, VehicleType
from pyvrp import solve as pyvrp_solve
from pyvrp.exceptions import PenaltyBoundWarning
from pyvrp.stop import MaxRuntime, StoppingCriterion

from optimize_service.fleet.model import FleetVehicle, RoutePlan, Step, Unassigned
from optimize_service.fleet.problem import PYVRP, FleetProblem, FleetSolution
from optimize_service.fleet.reasons import OK, explain_alone

COST_SCALE = 3600  # costs in 1/3600 of VROOM's unit: per_hour x seconds is then whole


class Infeasible(RuntimeError):
    """PyVRP's order does not hold (never expected: its own schedule is checked first)."""


@dataclass(frozen=True)
class Model:
    data: ProblemData
    vehicle_of: list[list[int]]  # per vehicle type: the request's vehicle indexes it stands for
    jobs: list[int]  # per PyVRP client: the request's job (those some vehicle can serve alone)
    free_end: int  # the location index of the open routes' end


def leg_costs(problem: FleetProblem, vehicle: FleetVehicle) -> np.ndarray:
    """What each leg costs this vehicle, in 1/COST_SCALE units."""
    costs = vehicle.costs
    durations = problem.durations_s[vehicle.profile].astype(np.int64)
    distances = problem.distances_m[vehicle.profile].astype(np.int64)
    # per_km x metres x 3.6 = per_km x km x 3600; whole when per_km is (VROOM's costs are integers)
    return costs.per_hour * durations + np.rint(costs.per_km * distances * 3.6).astype(np.int64)


def with_free_end(matrix: np.ndarray) -> np.ndarray:
    """One more location: reached from anywhere for nothing, left never (open routes end there)."""
    size = len(matrix)
    grown = np.zeros((size + 1, size + 1), dtype=np.int64)
    grown[:size, :size] = matrix
    grown[size, :] = np.iinfo(np.int32).max
    grown[size, size] = 0
    return grown


def profile_key(vehicle: FleetVehicle) -> tuple[str, int, int]:
    return (vehicle.profile, vehicle.costs.per_hour, vehicle.costs.per_km)


def cost_profiles(problem: FleetProblem) -> dict[tuple[str, int, int], np.ndarray]:
    """One leg-cost matrix per (kind, per_hour, per_km) the fleet has, in request order."""
    found: dict[tuple[str, int, int], np.ndarray] = {}
    for vehicle in problem.request.vehicles:
        if profile_key(vehicle) not in found:
            found[profile_key(vehicle)] = leg_costs(problem, vehicle)
    return found


def cost_unit(costs: list[np.ndarray], fixed: list[int]) -> int:
    """The largest unit every cost is a whole number of. PyVRP's penalties for lateness and
    load start from its costs' scale: at 3600 per driven second (VROOM's default) they hit
    their bound on 500 jobs (PenaltyBoundWarning) and the search was 8 % behind; in seconds
    they do not."""
    unit = int(np.gcd.reduce([int(np.gcd.reduce(matrix, axis=None)) for matrix in costs] + fixed))
    return max(1, unit)


def build_model(problem: FleetProblem) -> Model:
    request, where = problem.request, problem.locations
    size = len(next(iter(problem.durations_s.values())))
    profiles = cost_profiles(problem)
    unit = cost_unit(list(profiles.values()), [v.costs.fixed * COST_SCALE for v in request.vehicles])
    depots, vehicle_types, vehicle_of = fleet_types(problem, list(profiles), size, unit)
    servable = [j for j in range(len(request.jobs)) if explain_alone(Unassigned("job", j, "", ""), problem) == OK]
    clients = [
        Client(
            location=where.jobs[j],
            delivery=list(request.jobs[j].demand),
            service_duration=request.jobs[j].place.service_s,
            tw_early=request.jobs[j].place.windows[0].start_s,
            tw_late=request.jobs[j].place.windows[0].end_s,
        )
        for j in servable
    ]
    data = ProblemData(
        locations=[Location(0, 0) for _ in range(size + 1)],  # coordinates are unused
        clients=clients,
        depots=[Depot(location) for location in depots],
        vehicle_types=vehicle_types,
        distance_matrices=[with_free_end(m // unit) for m in profiles.values()],  # type: ignore[misc]
        duration_matrices=[with_free_end(problem.durations_s[k[0]].astype(np.int64)) for k in profiles],  # type: ignore[misc]
    )
    return Model(data, vehicle_of, servable, size)


def fleet_types(
    problem: FleetProblem, profiles: list[tuple[str, int, int]], size: int, unit: int
) -> tuple[list[int], list[VehicleType], list[list[int]]]:
    """The depots' locations, one vehicle type per group of identical vehicles, and the
    request's vehicles each type stands for."""
    where = problem.locations
    depots: dict[int, int] = {}
    types: dict[tuple[object, ...], int] = {}
    vehicle_types: list[VehicleType] = []
    vehicle_of: list[list[int]] = []
    for index, vehicle in enumerate(problem.request.vehicles):
        start = depots.setdefault(where.vehicle_starts[index], len(depots))
        end_location = where.vehicle_ends[index]
        end = depots.setdefault(size if end_location is None else end_location, len(depots))
        key = (profile_key(vehicle), start, end, vehicle.capacity, vehicle.shift, vehicle.costs.fixed)
        if key not in types:
            types[key] = len(vehicle_types)
            profile = profiles.index(profile_key(vehicle))
            vehicle_types.append(vehicle_type(vehicle, start, end, profile, unit))
            vehicle_of.append([])
        vehicle_of[types[key]].append(index)
    counted = [t.replace(num_available=len(group)) for t, group in zip(vehicle_types, vehicle_of, strict=True)]
    return list(depots), counted, vehicle_of


def vehicle_type(vehicle: FleetVehicle, start: int, end: int, profile: int, unit: int) -> VehicleType:
    return VehicleType(
        num_available=1,
        capacity=list(vehicle.capacity),
        start_depot=start,
        end_depot=end,
        fixed_cost=vehicle.costs.fixed * COST_SCALE // unit,
        tw_early=vehicle.shift.start_s,
        tw_late=vehicle.shift.end_s,
        unit_distance_cost=1,
        unit_duration_cost=0,
        profile=profile,
    )


def solve_pyvrp(
    problem: FleetProblem,
    limit_s: float,
    initial: FleetSolution | None = None,
    stop: StoppingCriterion | None = None,
    seed: int = 0,
) -> FleetSolution | None:
    """PyVRP's best in `limit_s` seconds (or until `stop`) as our routes, or None when it
    serves not every job. Two searches at once differ by `seed`."""
    began = time.perf_counter()
    model = build_model(problem)
    if not model.jobs:
        return None
    start = None if initial is None else initial_solution(problem, model, initial)
    with warnings.catch_warnings():
        # Its penalties at their bound: no plan serves every job (VROOM's plan stands then).
        warnings.simplefilter("ignore", PenaltyBoundWarning)
        result = pyvrp_solve(
            model.data,
            stop=stop or MaxRuntime(limit_s),
            seed=seed,
            collect_stats=False,
            display=False,
            initial_solution=start,
        )
    best = result.best
    if not best.is_feasible() or not best.is_complete():
        return None
    routes = translate(problem, model, best)
    return FleetSolution(
        routes=sorted(routes, key=lambda r: r.vehicle),
        unassigned=[Unassigned("job", j, "", "") for j in left_out(problem, model)],
        cost=sum(r.cost for r in routes),
        time_limit_s=limit_s,
        computing_s=round(time.perf_counter() - began, 3),
        method=PYVRP,
    )


def left_out(problem: FleetProblem, model: Model) -> list[int]:
    """The jobs no vehicle can serve even alone: left out of PyVRP's model, as VROOM leaves them."""
    kept = set(model.jobs)
    return [j for j in range(len(problem.request.jobs)) if j not in kept]


def initial_solution(problem: FleetProblem, model: Model, solution: FleetSolution) -> Solution | None:
    """VROOM's routes as PyVRP's starting point (only when they serve every job they can)."""
    if {item.task for item in solution.unassigned} != set(left_out(problem, model)):
        return None
    type_of = {v: t for t, group in enumerate(model.vehicle_of) for v in group}
    client = {j: c for c, j in enumerate(model.jobs)}
    routes = []
    for route in solution.routes:
        visits = [client[step.task] for step in route.steps if step.type == "job" and step.task is not None]
        routes.append(Route(model.data, visits, type_of[route.vehicle]))
    return Solution(model.data, routes)


def translate(problem: FleetProblem, model: Model, best: Solution) -> list[RoutePlan]:
    free = {t: list(group) for t, group in enumerate(model.vehicle_of)}
    plans = []
    for route in best.routes():
        vehicle = free[route.vehicle_type()].pop(0)
        jobs = [model.jobs[activity.idx] for activity in route.schedule() if activity.is_client()]
        plans.append(schedule(problem, vehicle, jobs))
    return plans


def schedule(problem: FleetProblem, vehicle_index: int, jobs: list[int]) -> RoutePlan:
    """Our route for this vehicle serving `jobs` in order: times, loads, distances and cost."""
    request, where = problem.request, problem.locations
    vehicle = request.vehicles[vehicle_index]
    durations, distances = problem.durations_s[vehicle.profile], problem.distances_m[vehicle.profile]
    load = [
        sum(column) for column in zip([0] * request.dimensions, *(request.jobs[j].demand for j in jobs), strict=True)
    ]
    start = where.vehicle_starts[vehicle_index]
    clock, driven_s, driven_m = vehicle.shift.start_s, 0, 0
    steps = [Step("start", None, start, clock, 0, 0, tuple(load), 0, 0)]
    here = start
    for j in jobs:
        place, location = request.jobs[j].place, where.jobs[j]
        leg_s, leg_m = int(durations[here, location]), int(distances[here, location])
        arrival = clock + leg_s
        window = place.windows[0]
        begin = max(arrival, window.start_s)
        if begin > window.end_s:
            raise Infeasible(f"job {j} is reached after its window")
        driven_s, driven_m = driven_s + leg_s, driven_m + leg_m
        load = [a - b for a, b in zip(load, request.jobs[j].demand, strict=True)]
        steps.append(
            Step("job", j, location, arrival, begin - arrival, place.service_s, tuple(load), driven_m, driven_s)
        )
        clock, here = begin + place.service_s, location
    end = where.vehicle_ends[vehicle_index]
    last = here if end is None else end
    leg_s, leg_m = (0, 0) if end is None else (int(durations[here, end]), int(distances[here, end]))
    if clock + leg_s > vehicle.shift.end_s:
        raise Infeasible(f"vehicle {vehicle_index} ends after its shift")
    steps.append(Step("end", None, last, clock + leg_s, 0, 0, tuple(load), driven_m + leg_m, driven_s + leg_s))
    return RoutePlan(vehicle_index, tuple(steps), route_cost(vehicle, driven_s + leg_s, driven_m + leg_m))


def route_cost(vehicle: FleetVehicle, duration_s: int, distance_m: int) -> int:
    """VROOM's cost of a route: fixed + per hour driven + per km."""
    costs = vehicle.costs
    return costs.fixed + round(costs.per_hour * duration_s / 3600 + costs.per_km * distance_m / 1000)
