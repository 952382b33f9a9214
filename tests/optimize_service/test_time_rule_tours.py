"""Tours and fleets at a time (issue 33) on Heidelberg, against the real route service: a stop
in the old town's delivery zone (motor vehicles Mo-Sa 06:00-11:00) is visited while the zone is
open, or left out as `closed-at-time` with the road, its rule and the next opening."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from aiohttp.test_utils import TestClient

from optimize_service.stops.exact import EXACT_MAX_STOPS
from optimize_service.stops.model import Options
from optimize_service.stops.planner import TIMED_SEARCH_LEAST_SHARE, search_seconds
from optimize_service.stops.solver import default_time_limit
from route_service.importing.importer import ImportResult
from route_service.split_tours import SPLIT_TOUR_LEGS
from route_service.state import STATE_KEY as ROUTE_STATE_KEY
from tests.optimize_service.conftest import ClientFactory, ServerFactory, optimize_client, route_server

Client = TestClient[Any, Any]
RULE = "motor_vehicle:conditional=destination @ (Mo-Sa 06:00-11:00)"
BISMARCKPLATZ = (49.4095, 8.6936)
HAUPTSTRASSE = (49.410531, 8.698113)  # way 84908668, in the old town's delivery zone
OUTSIDE = [(49.4128, 8.7117), (49.4046, 8.6850), (49.4163, 8.6950)]  # Mönchgasse, Weststadt, Neuenheim


def tuesday(hour: str) -> datetime:
    return datetime.fromisoformat(f"2026-12-01T{hour}:00+01:00")


@pytest.fixture
async def client(aiohttp_client: ClientFactory, aiohttp_server: ServerFactory,
                 city_maps: Callable[[str], ImportResult], redis_server: str) -> Client:  # fmt: skip
    server = await route_server(aiohttp_server, city_maps("heidelberg"), redis_server)
    return await optimize_client(aiohttp_client, str(server.make_url("")).rstrip("/"))


async def post(client: Client, url: str, body: Any) -> tuple[int, Any]:
    response = await client.post(url, data=orjson.dumps(body), headers={"Content-Type": "application/json"})
    return response.status, await response.json(content_type=None)


def place(point: tuple[float, float]) -> dict[str, float]:
    return {"lat": point[0], "lon": point[1]}


def fleet(start: datetime, **old_town: Any) -> dict[str, Any]:
    jobs = [{"id": "old-town", "location": place(HAUPTSTRASSE), "serviceTime": 300, **old_town}]
    jobs += [{"id": f"outside-{i}", "location": place(p), "serviceTime": 300} for i, p in enumerate(OUTSIDE)]
    van = {"id": "van", "start": place(BISMARCKPLATZ), "shift": {"end": (start + timedelta(hours=6)).isoformat()}}
    return {"startTime": start.isoformat(), "vehicles": [van], "jobs": jobs}


async def test_a_fleet_whose_shift_starts_at_10_30_serves_the_old_town_before_11(client: Client) -> None:
    status, body = await post(client, "/v1/optimize/routes", fleet(tuesday("10:30")))
    assert status == 200, body
    steps = {step.get("id"): step for step in body["routes"][0]["steps"]}
    assert body["unassigned"] == [] and body["provider"] == "graph"
    assert tuesday("10:30") <= datetime.fromisoformat(steps["old-town"]["arrival"]) <= tuesday("11:00")
    met = {(rule["way"], rule["rule"]): rule for rule in body["routes"][0]["timeRules"]}
    assert met[(84908668, RULE)]["effect"] == "open to car only to reach a place inside (destination)"


async def test_a_shift_starting_after_the_window_leaves_the_old_town_out_with_the_reason(client: Client) -> None:
    status, body = await post(client, "/v1/optimize/routes", fleet(tuesday("11:30")))
    assert status == 200, body
    [item] = body["unassigned"]
    assert item["id"] == "old-town" and item["reason"] == "closed-at-time"
    assert "Hauptstraße (way 84908668)" in item["message"] and RULE in item["message"]
    assert {step.get("id") for step in body["routes"][0]["steps"]} >= {"outside-0", "outside-1", "outside-2"}


async def test_a_job_window_outside_the_zone_s_window_is_closed_at_time(client: Client) -> None:
    body = fleet(tuesday("10:30"), timeWindows=[{"start": tuesday("12:00").isoformat(), "end": tuesday("14:00").isoformat()}])
    status, answer = await post(client, "/v1/optimize/routes", body)
    assert status == 200, answer
    assert [(u["id"], u["reason"]) for u in answer["unassigned"]] == [("old-town", "closed-at-time")]


async def test_without_a_start_time_the_plan_is_time_independent(client: Client) -> None:
    body = fleet(tuesday("11:30"))
    del body["startTime"], body["vehicles"][0]["shift"]
    status, answer = await post(client, "/v1/optimize/routes", body)
    assert status == 200 and answer["unassigned"] == [], answer
    assert answer["provider"] != "graph"


def tour(*points: tuple[float, float]) -> list[dict[str, Any]]:
    return [{"name": f"stop {i}", "coordinate": place(p)} for i, p in enumerate(points)]


async def test_a_tour_visits_a_stop_in_the_pedestrian_zone_in_its_window(client: Client) -> None:
    query = f"?startTime={quote(tuesday('08:00').isoformat())}"
    status, body = await post(client, f"/v1/optimize/stops{query}", tour(BISMARCKPLATZ, HAUPTSTRASSE, OUTSIDE[0]))
    assert status == 200, body
    assert body["unassigned"] == [] and {v["index"] for v in body["stops"]} == {0, 1, 2}
    old_town = next(v for v in body["stops"] if v["index"] == 1)
    assert datetime.fromisoformat(old_town["arrival"]) < tuesday("11:00")
    into = next(leg for leg in body["legs"] if leg["to"] == 1)
    assert (84908668, RULE) in {(rule["way"], rule["rule"]) for rule in into["timeRules"]}
    assert all("timeRules" in leg for leg in body["legs"])


async def test_a_tour_after_the_window_leaves_the_stop_out_with_the_next_opening(client: Client) -> None:
    query = f"?startTime={quote(tuesday('14:00').isoformat())}"
    status, body = await post(client, f"/v1/optimize/stops{query}", tour(BISMARCKPLATZ, HAUPTSTRASSE, OUTSIDE[0]))
    assert status == 200, body
    assert [v["index"] for v in body["stops"]] == [0, 2]
    [item] = body["unassigned"]
    assert item["index"] == 1 and item["reason"] == "closed-at-time"
    assert RULE in item["message"] and "it next opens at 2026-12-02T06:00+01:00" in item["message"]


async def test_a_stop_reached_after_the_zone_closes_is_left_out(client: Client) -> None:
    """Leaving at 10:55 the tour reaches the old town after 11:00 whichever stop comes first
    when every stop takes 10 minutes: the old-town stop is left out, the others visited."""
    stops = tour(BISMARCKPLATZ, *OUTSIDE, HAUPTSTRASSE)
    for stop in stops[1:]:
        stop["serviceTime"] = 600
    stops[0]["serviceTime"] = 600
    query = f"?startTime={quote(tuesday('10:55').isoformat())}"
    status, body = await post(client, f"/v1/optimize/stops{query}", stops)
    assert status == 200, body
    assert [(u["index"], u["reason"]) for u in body["unassigned"]] == [(4, "closed-at-time")]
    assert "when the tour reaches it" in body["unassigned"][0]["message"]


def test_a_tour_at_a_time_searches_less_to_leave_room_for_its_road_tour() -> None:
    """Its legs are routed on our graph after the search, about as long as its matrix took:
    the search gives up twice the matrix's time, down to half its default; a `timeLimit` given
    stands, and a tour without a time searches its default."""
    at_eight = Options(start_time=tuesday("08:00"), timed=True)
    default = default_time_limit(100)
    assert search_seconds(100, at_eight, 0.1) == round(default - 0.2, 3)
    assert search_seconds(100, at_eight, 5.0) == default * TIMED_SEARCH_LEAST_SHARE
    assert search_seconds(100, replace(at_eight, timed=False), 0.1) is None
    assert search_seconds(100, replace(at_eight, time_limit_s=2.0), 5.0) == 2.0


async def test_the_planner_gives_a_tour_at_a_time_the_shorter_search(client: Client) -> None:
    grid = [(49.401 + 0.003 * i, 8.676 + 0.005 * j) for i in range(4) for j in range(5)]
    query = f"?startTime={quote(tuesday('12:00').isoformat())}"
    status, timed = await post(client, f"/v1/optimize/stops{query}", tour(BISMARCKPLATZ, *grid))
    assert status == 200, timed
    status, plain = await post(client, "/v1/optimize/stops", tour(BISMARCKPLATZ, *grid))
    assert status == 200, plain
    assert len(timed["stops"]) > EXACT_MAX_STOPS  # searched, not solved exactly
    assert plain["solver"]["timeLimit"] == default_time_limit(len(plain["stops"]))
    assert timed["solver"]["timeLimit"] < default_time_limit(len(timed["stops"]))


async def test_a_long_tour_at_a_time_is_routed_in_halves_at_the_matrix_s_times(
    aiohttp_client: ClientFactory, aiohttp_server: ServerFactory, city_maps: Callable[[str], ImportResult],
    redis_server: str,
) -> None:  # fmt: skip
    """The optimizer sends the legs' departures its matrix expects, so the route service routes
    a tour of 40+ legs in two halves at once (route_service.split_tours); those times are close
    enough that most legs hold as routed, across the old town's 12:45 and 13:30 changes."""
    server = await route_server(aiohttp_server, city_maps("heidelberg"), redis_server)
    client = await optimize_client(aiohttp_client, str(server.make_url("")).rstrip("/"))
    calls = server.app[ROUTE_STATE_KEY].calls
    grid = [(49.401 + 0.003 * i, 8.676 + 0.004 * j) for i in range(6) for j in range(7)]
    query = f"?startTime={quote(tuesday('12:00').isoformat())}"
    status, body = await post(client, f"/v1/optimize/stops{query}", tour(BISMARCKPLATZ, *grid))
    assert status == 200, body
    legs = len(body["stops"]) - 1
    assert legs >= SPLIT_TOUR_LEGS and calls.split_tours == 1
    assert calls.split_tour_legs_again < legs // 4, (calls.split_tour_legs_again, legs)
