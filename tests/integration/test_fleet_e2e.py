"""POST /v1/optimize/routes end to end: the gateway, auth, route and optimize services as real
processes on Monaco (solver processes, not threads), with a real token. The answer is checked
by the independent feasibility checker (optimize_service/fleet/check.py), on a road
matrix asked of the public /v1/matrix."""

from __future__ import annotations

from typing import Any

import numpy as np

from optimize_service.fleet.check import Roads, check_feasible, request_points
from optimize_service.fleet.model import default_time_limit
from tests.integration.conftest import LEGACY, Caller
from tests.optimize_service.test_fleet_app import point, seeded_instance
from tests.optimize_service.test_fleet_portfolio import jobs_only

URL = "/v1/optimize/routes"


async def roads_for(api: Caller, body: dict[str, Any]) -> Roads:
    points = request_points(body)
    status, matrix = await api("POST", "/v1/matrix", {"sources": points, "annotations": ["duration", "distance"]})
    assert status == 200, matrix
    durations = np.array(matrix["durations"], dtype=np.float64)
    distances = np.array(matrix["distances"], dtype=np.float64)
    return Roads(points, durations, distances)


async def hundred_by_five(api: Caller, body: dict[str, Any]) -> dict[str, Any]:
    """100 jobs x 5 vehicles at the default time limit, checked. Its 2 s goal end to end is
    measured by `python -m bench fleet` (bench/RESULTS.md), not asserted on a shared machine."""
    body.pop("timeLimit")  # the default for 100 stops
    status, answer = await api("POST", URL, body)
    assert status == 200, answer
    # the default, less what a slow matrix took of the answer's time (fleet.model.search_after_matrix_s)
    assert default_time_limit(100) / 2 <= answer["solver"]["timeLimit"] <= default_time_limit(100)
    check_feasible(body, answer, await roads_for(api, body))
    result: dict[str, Any] = answer
    return result


async def test_fleet_routes_through_the_gateway_break_no_rule(api: Caller) -> None:
    answer = await hundred_by_five(api, seeded_instance(11, 100, 0, 5))
    assert answer["totals"]["assigned"] >= 50 and answer["solver"]["method"] == "vroom"


async def test_pyvrp_beside_vroom_in_the_solver_processes(api: Caller) -> None:
    """Jobs with one window each: VROOM and PyVRP in two solver processes at once, the better
    plan kept."""
    answer = await hundred_by_five(api, jobs_only(13, 100, 5))
    assert answer["solver"]["method"] in ("vroom", "pyvrp") and answer["totals"]["unassigned"] == 0


async def test_shipments_and_breaks_through_the_gateway(api: Caller) -> None:
    body = seeded_instance(12, 20, 8, 3)
    status, answer = await api("POST", URL, body)
    assert status == 200, answer
    check_feasible(body, answer, await roads_for(api, body))
    served = {step["id"] for route in answer["routes"] for step in route["steps"] if step["type"] == "delivery"}
    assert served, "some shipment is delivered"


async def test_errors_through_the_gateway_in_both_formats(api: Caller) -> None:
    window = {"start": "2026-11-23T10:00:00Z", "end": "2026-11-23T09:00:00Z"}
    bad = {
        "vehicles": [{"id": "v", "start": point(0), "capacity": [1]}, {"id": "v", "kind": "car", "start": point(2), "capacity": [1]}],
        "jobs": [{"id": "j", "location": point(1), "timeWindows": [window]}, {"id": "k", "location": point(3), "demand": [2]}],
    }
    status, problem = await api("POST", URL, bad)
    assert status == 400 and problem["type"] == "/problems/general/invalid-parameter/"
    assert [part.split(": ")[0] for part in problem["detail"].split("; ")] == [
        "jobs[0].timeWindows[0]", "vehicles[1].id", "jobs[1].demand"
    ]  # fmt: skip
    status, legacy = await api("POST", URL, bad, headers=LEGACY)
    assert status == 400 and len(legacy["details"]) == 3
    many = {"vehicles": [{"id": "v", "start": point(0)}], "shipments": [{"id": str(i)} for i in range(251)]}
    status, legacy = await api("POST", URL, many, headers=LEGACY)
    assert status == 413 and legacy["details"][0]["code"] == "OPTIMIZE_ERROR_TOO_MANY_STOPS"
    status, _ = await api("POST", URL, bad, auth=False)
    assert status == 401
