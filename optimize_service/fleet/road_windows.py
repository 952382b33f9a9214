"""A fleet's tasks on roads whose rules depend on the time (issue 33): each such task's windows
are cut to its road's (optimize_service.road_windows), and a task left out for that is
answered with the road and its rules. No aiohttp here."""

from __future__ import annotations

from dataclasses import replace

from optimize_service.fleet.model import MAX_HORIZON_S, FleetRequest, Place, Unassigned, Window
from optimize_service.fleet.problem import FleetProblem, Locations
from optimize_service.road_windows import CLOSED_AT_TIME, RoadWindow, intersect

# A task whose windows hold none of its road's: a window no shift reaches (the solver leaves it out).
NEVER = Window(MAX_HORIZON_S + 1, MAX_HORIZON_S + 1)


def with_road_windows(request: FleetRequest, where: Locations, roads: dict[int, RoadWindow]) -> FleetRequest:
    """The request with every task's windows cut to those of the road it lies on."""
    if not roads:
        return request
    jobs = tuple(replace(job, place=cut(job.place, roads.get(point)))
                 for job, point in zip(request.jobs, where.jobs, strict=True))  # fmt: skip
    shipments = tuple(
        replace(item, pickup=cut(item.pickup, roads.get(pickup)), delivery=cut(item.delivery, roads.get(delivery)))
        for item, pickup, delivery in zip(request.shipments, where.pickups, where.deliveries, strict=True)
    )
    return replace(request, jobs=jobs, shipments=shipments)


def cut(place: Place, road: RoadWindow | None) -> Place:
    if road is None:
        return place
    spans = intersect([(w.start_s, w.end_s) for w in place.windows], road)
    return replace(place, windows=tuple(Window(a, b) for a, b in spans) or (NEVER,))


def explain_closed(item: Unassigned, problem: FleetProblem, roads: dict[int, RoadWindow]) -> Unassigned:
    """A task left out for time whose place lies on a road with rules by time: that is why."""
    if item.reason not in ("time-window", "no-route"):
        return item
    where = problem.locations
    points = [where.jobs[item.task]] if item.type == "job" else [where.pickups[item.task], where.deliveries[item.task]]
    road = next((roads[p] for p in points if p in roads), None)
    if road is None:
        return item
    kinds = ", ".join(problem.request.kinds)
    message = f"{road.message(kinds)}: no vehicle reaches it while it is open, within its time windows and shift"
    return replace(item, reason=CLOSED_AT_TIME, message=message)
