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

With reloads, job release times, groups or prizes (issue 36; `FleetRequest.pyvrp_rules`) PyVRP
alone plans, so its plan must leave jobs out where none fits: every job is optional then, a
wanted one with a prize above any plan's cost (`wanted_prize`, times one more than its
priority), an optional one with its own prize; a group is PyVRP's mutually exclusive client
group; a vehicle's reload depots and `maxTrips` are its type's reload depots and reloads.

Times are recomputed from PyVRP's order (`schedule`): leave at the vehicle's shift start (a
trip, from its start or a reload, no earlier than its jobs' release times), begin each job at
the earliest moment its window allows. An order PyVRP found feasible stays
feasible so; the result is checked again (`Infeasible` names what broke).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from pyvrp import (
    Activity,
    ActivityType,
    Client,
    ClientGroup,
    Depot,
    Location,
    ProblemData,
    Route,
    Solution,
    SolveParams,
    VehicleType,
)
from pyvrp import solve as pyvrp_solve
from pyvrp.exceptions import PenaltyBoundWarning
from pyvrp.IteratedLocalSearch import IteratedLocalSearchParams
from pyvrp.PenaltyManager import PenaltyParams
from pyvrp.search import NeighbourhoodParams
from pyvrp.stop import MaxRuntime, StoppingCriterion

from common.errors import InvalidParameter
from optimize_service.fleet.model import FleetRequest, FleetVehicle, RoutePlan, Step, Unassigned, route_cost
from optimize_service.fleet.problem import NO_ROAD_S, PYVRP, FleetProblem, FleetSolution
from optimize_service.fleet.reasons import OK, explain_alone

COST_SCALE = 3600  # costs in 1/3600 of VROOM's unit: per_hour x seconds is then whole
# PyVRP's penalties: per unit of excess load (each dimension), of time warp, of excess distance
type Penalties = tuple[list[float], float, float]


class Infeasible(RuntimeError):
    """PyVRP's order does not hold (never expected: its own schedule is checked first)."""


@dataclass(frozen=True)
class Model:
    data: ProblemData
    vehicle_of: list[list[int]]  # per vehicle type: the request's vehicle indexes it stands for
    jobs: list[int]  # per PyVRP client: the request's job (those some vehicle can serve alone)
    free_end: int  # the location index of the open routes' end
    depot_at: dict[int, int]  # location index → PyVRP depot
    penalties: Penalties | None  # where a rules request's search starts its penalties (`starting_penalties`)


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
    prizes = [job.prize * COST_SCALE for job in request.jobs if job.prize]
    unit = cost_unit(list(profiles.values()), [v.costs.fixed * COST_SCALE for v in request.vehicles] + prizes)
    depots, vehicle_types, vehicle_of = fleet_types(problem, list(profiles), size, unit)
    servable = [j for j in range(len(request.jobs)) if explain_alone(Unassigned("job", j, "", ""), problem) == OK]
    wanted = wanted_prize(problem, profiles, unit, len(servable)) if request.pyvrp_rules else None
    groups = servable_groups(request, servable)
    group_of = {j: g for g, members in enumerate(groups) for j in members}
    clients = [client(request, j, where.jobs[j], unit, wanted, group_of.get(j)) for j in servable]
    penalties = starting_penalties(problem, profiles, unit, clients) if request.pyvrp_rules else None
    data = ProblemData(
        locations=[Location(0, 0) for _ in range(size + 1)],  # coordinates are unused
        clients=clients,
        depots=[Depot(location) for location in depots],
        vehicle_types=vehicle_types,
        distance_matrices=[with_free_end(m // unit) for m in profiles.values()],  # type: ignore[misc]
        duration_matrices=[with_free_end(problem.durations_s[k[0]].astype(np.int64)) for k in profiles],  # type: ignore[misc]
        groups=[ClientGroup([servable.index(j) for j in group], required=False) for group in groups],
    )
    return Model(data, vehicle_of, servable, size, {location: d for d, location in enumerate(depots)}, penalties)


def starting_penalties(
    problem: FleetProblem, costs: dict[tuple[str, int, int], np.ndarray], unit: int, clients: list[Client]
) -> Penalties:
    """A unit of excess load or of time warp at the cost of an average leg over the average
    demand or the average leg's seconds (as PyVRP 0.9's `PenaltyManager.init_from`; legs with
    no road left out)."""
    roads = {k: problem.durations_s[k[0]] < NO_ROAD_S for k in costs}
    legs = np.concatenate([(m // unit)[roads[k]] for k, m in costs.items()])
    legs_s = np.concatenate([problem.durations_s[k[0]][roads[k]] for k in costs])
    leg, leg_s = (float(np.mean(legs)), float(np.mean(legs_s))) if legs.size else (1.0, 1.0)
    dimensions = problem.request.dimensions
    demand = np.mean([c.delivery for c in clients], axis=0) if clients else np.zeros(dimensions)
    return [leg / max(float(d), 1.0) for d in demand], leg / max(leg_s, 1.0), 1.0


def client(request: FleetRequest, j: int, location: int, unit: int, wanted: int | None, group: int | None) -> Client:
    """Job j as PyVRP's client; `wanted`: every job optional, at this prize unless it has its own."""
    job = request.jobs[j]
    place = job.place
    rules: dict[str, object] = {}
    if wanted is not None:
        prize = wanted * (1 + job.priority) if job.prize is None else job.prize * COST_SCALE // unit
        rules = {"release_time": job.release_s, "prize": prize, "required": False, "group": group}
    return Client(location=location, delivery=list(job.demand), service_duration=place.service_s,
                  tw_early=place.windows[0].start_s, tw_late=place.windows[0].end_s, **rules)  # type: ignore[arg-type]  # fmt: skip


def servable_groups(request: FleetRequest, servable: list[int]) -> list[list[int]]:
    """Each group's servable jobs, where more than one: PyVRP's mutually exclusive groups, at
    most one served (its members are wanted, so one is whenever one fits)."""
    kept = set(servable)
    found = [[j for j in members if j in kept] for members in request.groups.values()]
    return [members for members in found if len(members) > 1]


def wanted_prize(problem: FleetProblem, costs: dict[tuple[str, int, int], np.ndarray], unit: int, jobs: int) -> int:
    """More than any plan costs (every leg of every route at the dearest leg, every fixed cost):
    so a wanted job is left out only when no plan has room for it."""
    dearest = max(int(m[problem.durations_s[k[0]] < NO_ROAD_S].max(initial=0)) for k, m in costs.items())
    vehicles = problem.request.vehicles
    bound = (jobs + len(vehicles)) * dearest // unit + sum(v.costs.fixed for v in vehicles) * COST_SCALE // unit + 1
    if bound * 101 * max(1, jobs) >= 2**62:  # PyVRP's costs are 64-bit integers
        raise InvalidParameter("the vehicles' costs are too large to plan with reloads, release times, groups or prizes",
                               parameter="vehicles")  # fmt: skip
    return bound


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
        reloads = tuple(depots.setdefault(where.depots[d], len(depots)) for d in vehicle.reload_depots)
        key = (profile_key(vehicle), start, end, vehicle.capacity, vehicle.shift, vehicle.costs.fixed, reloads,
               vehicle.max_trips)  # fmt: skip
        if key not in types:
            types[key] = len(vehicle_types)
            profile = profiles.index(profile_key(vehicle))
            vehicle_types.append(vehicle_type(vehicle, start, end, profile, unit, reloads))
            vehicle_of.append([])
        vehicle_of[types[key]].append(index)
    counted = [t.replace(num_available=len(group)) for t, group in zip(vehicle_types, vehicle_of, strict=True)]
    return list(depots), counted, vehicle_of


def vehicle_type(vehicle: FleetVehicle, start: int, end: int, profile: int, unit: int, reloads: tuple[int, ...]) -> VehicleType:
    trips: dict[str, object] = {}
    if reloads:  # PyVRP counts reloads: one fewer than trips
        trips = {"reload_depots": list(reloads)} | ({} if vehicle.max_trips is None else {"max_reloads": vehicle.max_trips - 1})
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
        **trips,  # type: ignore[arg-type]
    )


# PyVRP's iterated local search accepts a worse plan than the current one if it beats the plan
# of `history_length` iterations ago (late acceptance). Its default, 300, suits long searches;
# ours make few iterations: 200-400 a second at 100 jobs x 5 vehicles with reloads and release
# times, some 1,000-1,500 in the default 4 s. On the fleet_rules bench's instances (5 cities,
# the default limits in CPU seconds, gaps to the better of PyVRP's 60 s with 300 and with 50;
# scratch runs on a shared machine, 2026-11-29), 50 against the default 300: 100 x 5 median
# +1.3 % (max +4.0 %, 20 runs) against +4.8 % (+7.4 %, 25 runs); 200 x 10 +0.9 % (+2.5 %)
# against +1.9 % (+3.0 %), 500 x 20 +0.4 % (+1.9 %) against +5.2 % (+9.8 %), 10 runs each.
# No better at 100 x 5: 20 or 100, fewer neighbours, shorter perturbations, required wanted
# jobs. Only for the requests PyVRP alone plans (issue 36, item 8): plain ones not measured.
RULES_HISTORY_LENGTH = 50

# PyVRP weighs each unit of excess load and time warp by a penalty it starts midway between its
# bounds (50,000) and moves (x1.5 or x0.9, towards 65 % feasible plans) every 500 iterations:
# our searches make 1,000-3,000 in 4 s at 100 x 5, so their penalties stay near 50,000 and every
# plan they look at is feasible (all of them, measured). Started where PyVRP 0.9 started them
# (`starting_penalties`) and moved every 100 iterations, the search crosses infeasible plans too,
# at some 30 % fewer iterations a second. On the fleet_rules bench's instances (5 cities, the
# default limits in CPU seconds, the better of two seeds against PyVRP's 60 s; scratch runs on a
# shared machine, 2026-11-29, the history of 50 alone in the same runs): 100 x 5 +1.3 % (the
# median of the cities' mean gaps; max +1.5 %; single runs median +1.1 %, max +2.4 %, 20 runs)
# against +1.5 % (+2.1 %; +1.3 %, +3.6 %, 30 runs); 200 x 10 -0.9 % (max -0.1 %; single runs
# max +0.4 %) against +1.0 % (+1.4 %; +2.4 %), 10 runs each; 500 x 20 -2.2 % (max -1.5 %) against
# -0.8 % (-0.1 %), 25 x 2 +0.0 % (max +0.2 %) against +0.0 % (+0.9 %), 5 runs each. No clearer
# gain at 100 x 5: that start moved every 50, or three times it; PyVRP's own start moved every
# 50 (+1.7 %, max +1.8 %); one start for every penalty, whatever the map's legs (10: +5.9 %,
# 100: +0.9 %, 1,000: +2.0 %). Only for the requests PyVRP alone plans, as the history above.
RULES_PENALTY_UPDATES = 100

# PyVRP's local search tries each client's `num_neighbours` nearest (its granular neighbourhood,
# 50 by default). With 30 a rules request's searches made about 45 % more iterations per CPU
# second (a helper's count over its runs; single 800-iteration counts vary from 0 to +48 % by
# city, as each search's path differs). On the fleet_rules bench's 100 x 5 instances (5 cities, 4 rounds as built, the default
# limit in CPU seconds, against the cached 60 s references; scratch runs on a shared machine,
# 2026-11-29, paired with 50 in the same runs, load 4-6): per run the max gap over the cities,
# median over runs, +2.08 % against +2.62 % (8 runs; lower in 7), each run's median +0.90 %
# against +1.17 %; an earlier batch (15 runs, load 1-3): +1.99 % against +2.09 % (lower in 9),
# 30 with the shipments' operators left out no clearer (+1.94 %, lower in 5 of 8). Only for
# rules requests, as the history above; before the rounds, 20 was no better.
RULES_NEIGHBOURS = 30


@dataclass
class StartingPenalties(PenaltyParams):
    """PyVRP's penalty settings starting at `start` (`pyvrp.solve` starts at what
    `midpoint_penalties` says)."""

    start: Penalties = field(default_factory=lambda: ([], 0.0, 0.0))

    def midpoint_penalties(self, data: ProblemData) -> Penalties:
        return self.start


def solve_params(request: FleetRequest, model: Model) -> SolveParams:
    if not request.pyvrp_rules or model.penalties is None:
        return SolveParams()
    penalty = StartingPenalties(solutions_between_updates=RULES_PENALTY_UPDATES, start=model.penalties)
    return SolveParams(
        ils=IteratedLocalSearchParams(history_length=RULES_HISTORY_LENGTH),
        penalty=penalty,
        neighbourhood=NeighbourhoodParams(num_neighbours=RULES_NEIGHBOURS),
    )


def solve_pyvrp(
    problem: FleetProblem,
    limit_s: float,
    initial: FleetSolution | None = None,
    stop: StoppingCriterion | None = None,
    seed: int = 0,
    params: SolveParams | None = None,
) -> FleetSolution | None:
    """PyVRP's best in `limit_s` seconds (or until `stop`) as our routes, or None when it
    serves not every job. Two searches at once differ by `seed`. `params`: the search's settings
    (default: ours for the request, `solve_params`)."""
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
            params=params if params is not None else solve_params(problem.request, model),
        )
    best = result.best
    if not best.is_feasible() or not best.is_complete():
        return None
    routes = translate(problem, model, best)
    jobs = problem.request.jobs
    left = left_out(problem.request, routes)
    optional = [j for j in left if jobs[j].prize is not None]
    return FleetSolution(
        routes=sorted(routes, key=lambda r: r.vehicle),
        unassigned=[Unassigned("job", j, "", "") for j in left],
        cost=sum(r.cost for r in routes),
        time_limit_s=limit_s,
        computing_s=round(time.perf_counter() - began, 3),
        method=PYVRP,
        left_priority=sum(jobs[j].priority for j in left if jobs[j].prize is None),
        left_optional=len(optional),
        left_prizes=sum(jobs[j].prize or 0 for j in optional),
    )


def left_out(request: FleetRequest, routes: list[RoutePlan]) -> list[int]:
    """The jobs not served, but for the other jobs of a group one of whose jobs is."""
    served = {step.task for route in routes for step in route.steps if step.type == "job"}
    done = {request.jobs[j].group for j in served if isinstance(j, int)} - {None}
    return [j for j, job in enumerate(request.jobs) if j not in served and job.group not in done]


def initial_solution(problem: FleetProblem, model: Model, solution: FleetSolution) -> Solution | None:
    """A plan as PyVRP's starting point: VROOM's routes (only when they serve every job they can),
    or an earlier search's for a rules request (`fleet.solver.portfolio`'s rounds: its reloads too,
    its jobs left out optional)."""
    request = problem.request
    unservable = set(range(len(request.jobs))) - set(model.jobs)
    if not request.pyvrp_rules and {item.task for item in solution.unassigned} != unservable:
        return None
    type_of = {v: t for t, group in enumerate(model.vehicle_of) for v in group}
    client = {j: c for c, j in enumerate(model.jobs)}
    depots = problem.locations.depots
    routes = []
    for route in solution.routes:
        visits = [Activity(ActivityType.CLIENT, client[step.task]) if step.type == "job"
                  else Activity(ActivityType.DEPOT, model.depot_at[depots[step.task]])
                  for step in route.steps if step.type in ("job", "reload") and step.task is not None]  # fmt: skip
        routes.append(Route(model.data, visits, type_of[route.vehicle]))
    return Solution(model.data, routes)


type Visit = tuple[str, int]  # ("job", job index) or ("reload", depot index)


def translate(problem: FleetProblem, model: Model, best: Solution) -> list[RoutePlan]:
    free = {t: list(group) for t, group in enumerate(model.vehicle_of)}
    plans = []
    for route in best.routes():
        vehicle = free[route.vehicle_type()].pop(0)
        activities = route.schedule()[1:-1]  # PyVRP's start and end depots are ours
        visits = [("job", model.jobs[a.idx]) if a.is_client() else ("reload", reload_depot(problem, model, vehicle, a.idx))
                  for a in activities]  # fmt: skip
        plans.append(schedule(problem, vehicle, visits))
    return plans


def reload_depot(problem: FleetProblem, model: Model, vehicle: int, pyvrp_depot: int) -> int:
    """The request's depot (one the vehicle may reload at) that PyVRP's depot stands for."""
    where = problem.locations
    return next(d for d in problem.request.vehicles[vehicle].reload_depots if model.depot_at[where.depots[d]] == pyvrp_depot)


def trip_loads(request: FleetRequest, visits: list[Visit]) -> list[tuple[int, ...]]:
    """What each trip leaves with: its jobs' demands."""
    loads = [[0] * request.dimensions]
    for kind, index in visits:
        if kind == "reload":
            loads.append([0] * request.dimensions)
        else:
            loads[-1] = [a + b for a, b in zip(loads[-1], request.jobs[index].demand, strict=True)]
    return [tuple(load) for load in loads]


def trip_releases(request: FleetRequest, visits: list[Visit]) -> list[int]:
    """When each trip may leave: its jobs' latest release time."""
    releases = [0]
    for kind, index in visits:
        if kind == "reload":
            releases.append(0)
        else:
            releases[-1] = max(releases[-1], request.jobs[index].release_s)
    return releases


def schedule(problem: FleetProblem, vehicle_index: int, visits: list[Visit]) -> RoutePlan:
    """Our route for this vehicle serving `visits` in order: times, loads, distances and cost."""
    request, where = problem.request, problem.locations
    vehicle = request.vehicles[vehicle_index]
    durations, distances = problem.durations_s[vehicle.profile], problem.distances_m[vehicle.profile]
    loads, releases = trip_loads(request, visits), trip_releases(request, visits)
    start = where.vehicle_starts[vehicle_index]
    leaves = max(vehicle.shift.start_s, releases[0])
    clock, driven_s, driven_m, load = leaves, 0, 0, loads[0]
    steps = [Step("start", None, start, vehicle.shift.start_s, leaves - vehicle.shift.start_s, 0, load, 0, 0)]
    here, trip = start, 0
    for kind, index in visits:
        location = where.jobs[index] if kind == "job" else where.depots[index]
        leg_s, leg_m = int(durations[here, location]), int(distances[here, location])
        arrival = clock + leg_s
        driven_s, driven_m = driven_s + leg_s, driven_m + leg_m
        if kind == "reload":
            trip += 1
            begin, service, load = max(arrival, releases[trip]), 0, loads[trip]
        else:
            place = request.jobs[index].place
            window = place.windows[0]
            begin, service = max(arrival, window.start_s), place.service_s
            if begin > window.end_s:
                raise Infeasible(f"job {index} is reached after its window")
            load = tuple(a - b for a, b in zip(load, request.jobs[index].demand, strict=True))
        steps.append(Step(kind, index, location, arrival, begin - arrival, service, load, driven_m, driven_s))
        clock, here = begin + service, location
    end = where.vehicle_ends[vehicle_index]
    last = here if end is None else end
    leg_s, leg_m = (0, 0) if end is None else (int(durations[here, end]), int(distances[here, end]))
    if clock + leg_s > vehicle.shift.end_s:
        raise Infeasible(f"vehicle {vehicle_index} ends after its shift")
    steps.append(Step("end", None, last, clock + leg_s, 0, 0, load, driven_m + leg_m, driven_s + leg_s))
    return RoutePlan(vehicle_index, tuple(steps), route_cost(vehicle, driven_s + leg_s, driven_m + leg_m))
