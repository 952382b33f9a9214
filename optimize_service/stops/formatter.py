"""Plan → the JSON body of POST /v1/optimize/stops (no aiohttp here)."""

from __future__ import annotations

from typing import Any

from common.osm_inputs import ATTRIBUTION
from optimize_service.formats import iso
from optimize_service.road_windows import CLOSED_AT_TIME
from optimize_service.stops.model import Plan, Visit
from optimize_service.stops.reachability import UNREACHABLE, unassigned_message


def visit_body(plan: Plan, visit: Visit, position: int) -> dict[str, Any]:
    stop = plan.request.stops[visit.stop_index]
    return {
        "name": stop.name,
        "coordinate": {"lat": stop.coordinate.lat, "lon": stop.coordinate.lon},
        "start": stop.start,
        "destination": stop.destination,
        "index": visit.stop_index,
        "position": position,
        "arrival": iso(visit.arrival),
        "departure": iso(visit.departure),
        "serviceTime": round((visit.departure - visit.arrival).total_seconds(), 1),
        "distance": round(visit.leg.distance_m, 1) if visit.leg else 0.0,
        "duration": round(visit.leg.duration_s, 1) if visit.leg else 0.0,
    }


def leg_body(plan: Plan, position: int) -> dict[str, Any]:
    before, after = plan.visits[position], plan.visits[position + 1]
    assert after.leg is not None  # every visit after the first has its leg
    return {
        "from": before.stop_index,
        "to": after.stop_index,
        "distance": round(after.leg.distance_m, 1),
        "duration": round(after.leg.duration_s, 1),
        **({} if after.leg.time_rules is None else {"timeRules": after.leg.time_rules}),
    }


def unassigned_body(plan: Plan, index: int) -> dict[str, Any]:
    stop, start = plan.request.stops[index], plan.request.stops[plan.request.ends.start]
    return {
        "index": index,
        "name": stop.name,
        "coordinate": {"lat": stop.coordinate.lat, "lon": stop.coordinate.lon},
        "reason": CLOSED_AT_TIME if index in plan.closed else UNREACHABLE,
        "message": plan.closed.get(index) or unassigned_message(stop, start),
    }


def plan_body(plan: Plan) -> dict[str, Any]:
    request, route = plan.request, plan.route
    options, ends = request.options, request.ends
    first, last = plan.visits[0], plan.visits[-1]
    return {
        "stops": [visit_body(plan, visit, position) for position, visit in enumerate(plan.visits)],
        "legs": [leg_body(plan, position) for position in range(len(plan.visits) - 1)],
        "unassigned": [unassigned_body(plan, index) for index in plan.unassigned],
        "distance": round(route.distance_m, 1),
        "duration": round(route.duration_s, 1),
        "serviceTime": round(sum((v.departure - v.arrival).total_seconds() for v in plan.visits), 1),
        "startTime": iso(first.arrival),
        "endTime": iso(last.departure),
        "roundTrip": ends.round_trip,
        "openTour": ends.open,
        "geometry": {"type": "LineString", "coordinates": route.geometry},
        "vehicle": options.vehicle,
        "type": options.route_type,
        "provider": route.provider or options.provider,
        "solver": plan.solver,
        "dataset": route.dataset,
        "attribution": ATTRIBUTION,
    }
