"""A day under way (issue 36, item 6), no aiohttp here.

Each vehicle with `current` first drives its committed jobs, in their order, from where it is
and when (`committed_days`: our own schedule, as the solvers would time it). The solver then
plans the rest of the day (`rest_of_day`): every vehicle with `current` starts where and when
its last committed job ends, with what is left on board as its capacity (goods not on board
are not there to deliver: without reloads the trip carries no more), and the committed jobs are
no longer tasks. The plan is the committed steps followed by the solver's (`with_committed`).
Both solvers plan the rest alike, so every rule they keep holds after the committed steps too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from common.errors import ParameterErrors
from optimize_service.fleet.model import RoutePlan, Step, Window, route_cost
from optimize_service.fleet.problem import NO_ROAD_S, FleetProblem, FleetSolution
from optimize_service.fleet.reasons import earliest_start


@dataclass(frozen=True)
class Committed:
    """One vehicle's committed steps and where, when and with what load the rest begins."""

    steps: tuple[Step, ...]  # its start (the current place) and the committed jobs
    location: int
    ready_s: int
    load: tuple[int, ...]


def committed_days(problem: FleetProblem) -> dict[int, Committed]:
    """Vehicle index → its committed steps. Raises one 400 naming every committed job that no
    road reaches, that cannot begin within its windows, or that ends the shift."""
    errors = ParameterErrors()
    found = {}
    for index, vehicle in enumerate(problem.request.vehicles):
        if vehicle.current is not None:
            found[index] = drive_committed(problem, index, errors)
    errors.raise_if_any()
    return found


def drive_committed(problem: FleetProblem, index: int, errors: ParameterErrors) -> Committed:
    request, where = problem.request, problem.locations
    vehicle = request.vehicles[index]
    assert vehicle.current is not None
    durations, distances = problem.durations_s[vehicle.profile], problem.distances_m[vehicle.profile]
    here, clock, load = where.currents[index], vehicle.shift.start_s, vehicle.current.load
    assert here is not None
    steps = [Step("start", None, here, clock, 0, 0, load, 0, 0)]
    driven_s = driven_m = 0
    for k, j in enumerate(vehicle.current.committed):
        name, job, location = f"vehicles[{index}].current.committed[{k}]", request.jobs[j], where.jobs[j]
        leg_s = int(durations[here, location])
        begin = earliest_start(clock + leg_s, job.place) if leg_s < NO_ROAD_S else None
        if begin is None:
            errors.add(name, f"{job.id!r} cannot begin within its time windows from the vehicle's current place and time")
            break
        driven_s, driven_m = driven_s + leg_s, driven_m + int(distances[here, location])
        load = tuple(a - b for a, b in zip(load, job.demand, strict=True))
        steps.append(Step("job", j, location, clock + leg_s, begin - clock - leg_s, job.place.service_s, load, driven_m, driven_s))
        clock, here = begin + job.place.service_s, location
    if clock > vehicle.shift.end_s:
        errors.add(f"vehicles[{index}].current.committed", "the committed jobs end after the vehicle's shift")
    return Committed(tuple(steps), here, clock, load)


def rest_of_day(problem: FleetProblem, committed: dict[int, Committed]) -> tuple[FleetProblem, list[int]]:
    """The problem the solver plans, and the request's index of each of its jobs."""
    if not committed:
        return problem, list(range(len(problem.request.jobs)))
    request, where = problem.request, problem.locations
    done = {step.task for c in committed.values() for step in c.steps if step.type == "job"}
    kept = [j for j in range(len(request.jobs)) if j not in done]
    vehicles = list(request.vehicles)
    starts = list(where.vehicle_starts)
    for index, c in committed.items():
        vehicle = vehicles[index]
        shift = Window(min(c.ready_s, vehicle.shift.end_s), vehicle.shift.end_s)
        vehicles[index] = replace(vehicle, shift=shift, capacity=c.load, current=None)
        starts[index] = c.location
    rest = replace(request, vehicles=tuple(vehicles), jobs=tuple(request.jobs[j] for j in kept))
    locations = replace(where, vehicle_starts=tuple(starts), jobs=tuple(where.jobs[j] for j in kept))
    return replace(problem, request=rest, locations=locations), kept


def with_committed(
    solution: FleetSolution, problem: FleetProblem, committed: dict[int, Committed], kept: list[int]
) -> FleetSolution:
    """The solver's plan of the rest with the request's job indexes, each committed vehicle's
    steps first (its route even when the solver used it no more)."""
    if not committed:
        return solution
    routes = {route.vehicle: renumbered(route, kept) for route in solution.routes}
    for index, c in committed.items():
        rest = routes.get(index)
        if rest is not None or len(c.steps) > 1:
            routes[index] = joined(problem, index, c, rest)
    unassigned = [replace(item, task=kept[item.task]) if item.type == "job" else item for item in solution.unassigned]
    plans = [routes[v] for v in sorted(routes)]
    return replace(solution, routes=plans, unassigned=unassigned, cost=sum(route.cost for route in plans))


def renumbered(route: RoutePlan, kept: list[int]) -> RoutePlan:
    steps = tuple(replace(s, task=kept[s.task]) if s.type == "job" and s.task is not None else s for s in route.steps)
    return replace(route, steps=steps)


def joined(problem: FleetProblem, index: int, c: Committed, rest: RoutePlan | None) -> RoutePlan:
    """The committed steps, then the rest's after its start (driven figures and loads carried on),
    or straight to the vehicle's end."""
    vehicle = problem.request.vehicles[index]
    last = c.steps[-1]
    if rest is None:
        end = problem.locations.vehicle_ends[index]
        to = c.location if end is None else end
        leg_s = int(problem.durations_s[vehicle.profile][c.location, to])
        leg_m = int(problem.distances_m[vehicle.profile][c.location, to])
        tail = [Step("end", None, to, c.ready_s + leg_s, 0, 0, c.load, last.distance_m + leg_m, last.duration_s + leg_s)]
    else:
        extra = tuple(a - b for a, b in zip(c.load, rest.steps[0].load, strict=True))  # on board, not delivered by it
        tail = [replace(s, load=tuple(a + b for a, b in zip(s.load, extra, strict=True)),
                        distance_m=s.distance_m + last.distance_m, duration_s=s.duration_s + last.duration_s)
                for s in rest.steps[1:]]  # fmt: skip
    steps = (*c.steps, *tail)
    return RoutePlan(index, steps, route_cost(vehicle, steps[-1].duration_s, steps[-1].distance_m))
