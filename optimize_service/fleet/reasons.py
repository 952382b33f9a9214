"""Why a job or shipment was left out (no aiohttp here). VROOM says only that it was; this
looks at each vehicle that could serve the task alone (skills and capacity) on the road matrix:

- `no-route`: no such vehicle has a road to it (and back to its end);
- `time-window`: none can reach it within its time windows and still end within its shift;
- `capacity-or-time`: some could alone, but the routes have no room left (capacity or time
  taken by other tasks, which the solver preferred by priority and cost).
"""

from __future__ import annotations

import numpy as np

from optimize_service.fleet.model import FleetVehicle, Place, Unassigned
from optimize_service.fleet.problem import NO_ROAD_S, FleetProblem

MESSAGES = {
    "no-route": "no vehicle that may serve it has a road to it and back",
    "time-window": "no vehicle can reach it within its time windows and still end within its shift",
    "capacity-or-time": "a vehicle could serve it alone, but no route had capacity or time left for it",
}


OK = "ok"


def explain(item: Unassigned, problem: FleetProblem) -> Unassigned:
    reason = explain_alone(item, problem)
    reason = "capacity-or-time" if reason == OK else reason
    return Unassigned(item.type, item.task, reason, MESSAGES[reason])


def explain_alone(item: Unassigned, problem: FleetProblem) -> str:
    """OK when some vehicle could serve the task alone, else time-window or no-route."""
    reasons = [alone(item, index, problem) for index in candidates(item, problem)]
    return OK if OK in reasons else ("time-window" if "time-window" in reasons else "no-route")


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
    durations = problem.durations_s[vehicle.kind]
    if item.type == "job":
        visits = [(where.jobs[item.task], request.jobs[item.task].place)]
    else:
        shipment = request.shipments[item.task]
        visits = [(where.pickups[item.task], shipment.pickup), (where.deliveries[item.task], shipment.delivery)]
    return drive(vehicle, where.vehicle_starts[vehicle_index], where.vehicle_ends[vehicle_index], visits, durations)


def drive(
    vehicle: FleetVehicle, start: int, end: int | None, visits: list[tuple[int, Place]], durations: np.ndarray
) -> str:
    clock, here = vehicle.shift.start_s, start
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
