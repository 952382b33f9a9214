"""FleetPlan → the JSON body of POST /v1/optimize/routes (no aiohttp here)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from common.osm_inputs import ATTRIBUTION
from optimize_service.fleet.model import FleetPlan, RoutePlan, Step, Unassigned
from optimize_service.formats import iso


def at(plan: FleetPlan, seconds: int) -> str:
    start: datetime = plan.request.start_time
    return iso(start + timedelta(seconds=seconds))


def step_id(plan: FleetPlan, route: RoutePlan, step: Step) -> str | None:
    request = plan.request
    if step.task is None:
        return None
    if step.type == "job":
        return request.jobs[step.task].id
    if step.type in ("pickup", "delivery"):
        return request.shipments[step.task].id
    if step.type == "reload":
        return request.depots[step.task].id
    return request.vehicles[route.vehicle].breaks[step.task].id


def step_body(plan: FleetPlan, route: RoutePlan, step: Step) -> dict[str, Any]:
    point = None if step.location is None else plan.locations[step.location]
    start = step.arrival_s + step.waiting_s
    return {
        "type": step.type,
        "id": step_id(plan, route, step),
        "location": None if point is None else {"lat": point.lat, "lon": point.lon},
        "arrival": at(plan, step.arrival_s),
        "waiting": step.waiting_s,
        "serviceTime": step.service_s,
        "departure": at(plan, start + step.service_s),
        "load": list(step.load),
        "distance": step.distance_m,
        "duration": step.duration_s,
    }


def route_body(plan: FleetPlan, route: RoutePlan) -> dict[str, Any]:
    vehicle = plan.request.vehicles[route.vehicle]
    first, last = route.steps[0], route.steps[-1]
    return {
        "vehicle": vehicle.id,
        "kind": vehicle.kind,
        "steps": [step_body(plan, route, step) for step in route.steps],
        "distance": route.distance_m,
        "duration": route.duration_s,
        "serviceTime": sum(step.service_s for step in route.steps),
        "waitingTime": sum(step.waiting_s for step in route.steps),
        "startTime": at(plan, first.arrival_s),
        "endTime": at(plan, last.arrival_s + last.waiting_s + last.service_s),
        "cost": route.cost,
        "trips": trips_body(plan, route),
        "geometry": {"type": "LineString", "coordinates": route.geometry},
        **({} if route.time_rules is None else {"timeRules": route.time_rules}),
    }


def trips_body(plan: FleetPlan, route: RoutePlan) -> list[dict[str, Any]]:
    """Each trip (issue 36, item 1): where it leaves from (the start, or the depot of a reload),
    when, with what load, and how many tasks it serves before the next reload or the end."""
    trips: list[dict[str, Any]] = []
    for step in route.steps:
        if step.type in ("start", "reload"):
            leaves = step.arrival_s + step.waiting_s + step.service_s
            depot = None if step.type == "start" else step_id(plan, route, step)
            trips.append({"depot": depot, "departure": at(plan, leaves), "load": list(step.load), "tasks": 0})
        elif step.type in ("job", "pickup", "delivery"):
            trips[-1]["tasks"] += 1
    return trips


def unassigned_body(plan: FleetPlan, item: Unassigned) -> dict[str, Any]:
    request = plan.request
    task = request.jobs[item.task] if item.type == "job" else request.shipments[item.task]
    return {"id": task.id, "type": item.type, "reason": item.reason, "message": item.message}


def fleet_body(plan: FleetPlan) -> dict[str, Any]:
    routes = [route_body(plan, route) for route in plan.routes]
    return {
        "routes": routes,
        "unassigned": [unassigned_body(plan, item) for item in plan.unassigned],
        "totals": {
            "distance": sum(r["distance"] for r in routes),
            "duration": sum(r["duration"] for r in routes),
            "serviceTime": sum(r["serviceTime"] for r in routes),
            "waitingTime": sum(r["waitingTime"] for r in routes),
            "cost": sum(r["cost"] for r in routes),
            "vehiclesUsed": len(routes),
            # Served: a group's other jobs are neither assigned nor unassigned (issue 36, item 5).
            "assigned": sum(step.type in ("job", "delivery") for route in plan.routes for step in route.steps),
            "unassigned": len(plan.unassigned),
        },
        "startTime": iso(plan.request.start_time),
        "solver": plan.solver,
        "provider": plan.provider,
        "dataset": plan.dataset,
        "attribution": ATTRIBUTION,
    }
