"""Why a job or shipment was left out (no aiohttp here). VROOM says only that it was; this
looks at each vehicle that could serve the task alone (skills and capacity) on the road matrix:

- `no-route`: no such vehicle has a road to it (and back to its end);
- `time-window`: none can reach it within its time windows and still end within its shift;
- `vehicle-limits`: some could in time, but not within its maxDistance or maxStops;
- `capacity-or-time`: some could alone, but the routes have no room left (capacity, time or
  limits taken by other tasks, which the solver preferred by priority and cost);
- `optional`: an optional job (with a prize) some vehicle could serve alone, left out because
  serving it would cost more than its prize, or no route had room for it.

A job with a release time (issue 36, item 2) is served alone by a vehicle leaving no earlier.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from common.errors import ParameterErrors
from optimize_service.fleet.model import FleetVehicle, Place, Unassigned
from optimize_service.fleet.problem import NO_ROAD_S, FleetProblem

MESSAGES = {
    "no-route": "no vehicle that may serve it has a road to it and back",
    "time-window": "no vehicle can reach it within its time windows and still end within its shift",
    "vehicle-limits": "no vehicle that may serve it can do so within its maxDistance and maxStops",
    "capacity-or-time": "a vehicle could serve it alone, but no route had capacity, time or room within its limits left for it",
    "optional": "optional: serving it would cost more than its prize, or no route had room left for it",
}
OK = "ok"
# The first of these some vehicle meets is the reason (ok: one could serve it alone).
ORDER = (OK, "vehicle-limits", "time-window", "no-route")



def explain(item: Unassigned, problem: FleetProblem) -> Unassigned:
    reason = explain_alone(item, problem)
    if reason == OK:
        optional = item.type == "job" and problem.request.jobs[item.task].prize is not None
        reason = "optional" if optional else "capacity-or-time"
    return Unassigned(item.type, item.task, reason, MESSAGES[reason])


def explain_alone(item: Unassigned, problem: FleetProblem) -> str:
    """OK when some vehicle could serve the task alone, else the nearest miss (`ORDER`)."""
    reasons = {alone(item, index, problem) for index in candidates(item, problem)}
    return next((reason for reason in ORDER if reason in reasons), "no-route")


def candidates(item: Unassigned, problem: FleetProblem) -> list[int]:
    request = problem.request
    task = request.jobs[item.task] if item.type == "job" else request.shipments[item.task]
    needed = task.demand if item.type == "job" else task.amount  # type: ignore[union-attr]
    return [
        i
        for i, v in enumerate(request.vehicles)
        if task.skills <= v.skills and all(d <= c for d, c in zip(needed, v.capacity, strict=True))
    ]


def alone(item: Unassigned, vehicle_index: int, problem: FleetProblem) -> str:
    """One of ok, time-window or no-route: this vehicle serving only this task."""
    request, where = problem.request, problem.locations
    vehicle = request.vehicles[vehicle_index]
    durations = problem.durations_s[vehicle.profile]
    if item.type == "job":
        visits = [(where.jobs[item.task], request.jobs[item.task].place)]
    else:
        shipment = request.shipments[item.task]
        visits = [(where.pickups[item.task], shipment.pickup), (where.deliveries[item.task], shipment.delivery)]
    ends = (where.vehicle_starts[vehicle_index], where.vehicle_ends[vehicle_index])
    leaves = max(vehicle.shift.start_s, request.jobs[item.task].release_s if item.type == "job" else 0)
    reason = drive(vehicle, leaves, *ends, visits, durations)
    if reason == OK and not within_limits(vehicle, *ends, [location for location, _ in visits], problem):
        return "vehicle-limits"
    return reason


def within_limits(vehicle: FleetVehicle, start: int, end: int | None, visits: list[int], problem: FleetProblem) -> bool:
    """Whether serving only these visits keeps to the vehicle's maxDistance and maxStops."""
    limits = vehicle.limits
    if limits.stops is not None and len(visits) > limits.stops:
        return False
    if limits.distance_m is None:
        return True
    path = [start, *visits, *([] if end is None else [end])]
    distances = problem.distances_m[vehicle.profile]
    return sum(int(distances[a, b]) for a, b in pairwise(path)) <= limits.distance_m


def drive(
    vehicle: FleetVehicle, leaves: int, start: int, end: int | None, visits: list[tuple[int, Place]], durations: np.ndarray
) -> str:
    clock, here = leaves, start
    for location, place in visits:
        leg = int(durations[here, location])
        if leg >= NO_ROAD_S:
            return "no-route"
        begin = earliest_start(clock + leg, place)
        if begin is None:
            return "time-window"
        clock, here = begin + place.service_s, location
    back = 0 if end is None else int(durations[here, end])
    if back >= NO_ROAD_S:
        return "no-route"
    return "ok" if clock + back <= vehicle.shift.end_s else "time-window"


def earliest_start(arrival: int, place: Place) -> int | None:
    for window in place.windows:
        if arrival <= window.end_s:
            return max(arrival, window.start_s)
    return None


def check_groups_servable(problem: FleetProblem) -> None:
    """Raises one 400 naming every group none of whose jobs any vehicle could serve alone: a
    contradiction (issue 36, item 10), named on its first job's `group`."""
    errors = ParameterErrors()
    for name, members in problem.request.groups.items():
        if all(explain_alone(Unassigned("job", j, "", ""), problem) != OK for j in members):
            errors.add(f"jobs[{members[0]}].group", f"no vehicle can serve any job of the group {name!r}")
    errors.raise_if_any()
