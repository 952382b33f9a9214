"""The fleet problem as VROOM's input (pyvroom); imported only in solver processes."""

from __future__ import annotations

import numpy as np
import vroom

from optimize_service.fleet.model import FleetRequest, FleetVehicle, Limits, Place, Window
from optimize_service.fleet.problem import FleetProblem


def vroom_input(problem: FleetProblem) -> vroom.Input:
    request, where = problem.request, problem.locations
    problem_input = vroom.Input()
    for profile in request.profiles:
        problem_input.set_durations_matrix(profile, problem.durations_s[profile].astype(np.uint32))
        problem_input.set_distances_matrix(profile, problem.distances_m[profile].astype(np.uint32))
    skill_ids = {skill: i for i, skill in enumerate(sorted(all_skills(request)))}
    for index, vehicle in enumerate(request.vehicles):
        problem_input.add_vehicle(
            vroom_vehicle(index, vehicle, where.vehicle_starts[index], where.vehicle_ends[index], skill_ids)
        )
    add_jobs(problem_input, problem, skill_ids)
    add_shipments(problem_input, problem, skill_ids)
    return problem_input


def add_jobs(problem_input: vroom.Input, problem: FleetProblem, skill_ids: dict[str, int]) -> None:
    for index, job in enumerate(problem.request.jobs):
        problem_input.add_job(
            vroom.Job(
                index,
                location=problem.locations.jobs[index],
                default_service=job.place.service_s,
                delivery=vroom.Amount(list(job.demand)),
                skills={skill_ids[s] for s in job.skills},
                priority=job.priority,
                time_windows=time_windows(job.place.windows),
            )
        )


def add_shipments(problem_input: vroom.Input, problem: FleetProblem, skill_ids: dict[str, int]) -> None:
    """Shipment s picks up as J + 2s and delivers as J + 2s + 1 (J jobs): ids apart from the jobs'."""
    first, where = len(problem.request.jobs), problem.locations
    for index, shipment in enumerate(problem.request.shipments):
        problem_input.add_shipment(
            shipment_step(first + 2 * index, where.pickups[index], shipment.pickup),
            shipment_step(first + 2 * index + 1, where.deliveries[index], shipment.delivery),
            amount=vroom.Amount(list(shipment.amount)),
            skills={skill_ids[s] for s in shipment.skills},
            priority=shipment.priority,
        )


def all_skills(request: FleetRequest) -> set[str]:
    groups = (request.vehicles, request.jobs, request.shipments)
    return {skill for group in groups for item in group for skill in item.skills}


def vroom_vehicle(
    index: int, vehicle: FleetVehicle, start: int, end: int | None, skill_ids: dict[str, int]
) -> vroom.Vehicle:
    costs = vehicle.costs
    return vroom.Vehicle(
        index,
        start=start,
        end=end,
        profile=vehicle.profile,
        capacity=vroom.Amount(list(vehicle.capacity)),
        skills={skill_ids[s] for s in vehicle.skills},
        time_window=vroom.TimeWindow(vehicle.shift.start_s, vehicle.shift.end_s),
        breaks=[
            vroom.Break(k, time_windows=time_windows(b.windows), service=b.duration_s)
            for k, b in enumerate(vehicle.breaks)
        ],
        costs=vroom.VehicleCosts(fixed=costs.fixed, per_hour=costs.per_hour, per_km=costs.per_km),
        **vroom_limits(vehicle.limits),
    )


def vroom_limits(limits: Limits) -> dict[str, int]:
    """maxStops and maxDistance as VROOM's own (maxWorkingTime is the shift's end already)."""
    given = {"max_tasks": limits.stops, "max_distance": limits.distance_m}
    return {name: value for name, value in given.items() if value is not None}


def shipment_step(ident: int, location: int, place: Place) -> vroom.ShipmentStep:
    return vroom.ShipmentStep(
        ident, location=location, default_service=place.service_s, time_windows=time_windows(place.windows)
    )


def time_windows(windows: tuple[Window, ...]) -> list[vroom.TimeWindow]:
    return [vroom.TimeWindow(w.start_s, w.end_s) for w in windows]
