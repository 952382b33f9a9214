"""Tours and fleets at a time (issues 33 and 56) on Heidelberg, against the real route service: a
truck's stop on Ludwig-Guttmann-Straße (`hgv:conditional=no @ (19:00-6:00)`) is visited while
the street is open, or left out as `closed-at-time` with the road, its rule and the next opening."""

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
from tests.optimize_service.conftest import ClientFactory, ServerFactory, optimize_client, route_server

Client = TestClient[Any, Any]
RULE = "hgv:conditional=no @ (19:00-6:00)"
BISMARCKPLATZ = (49.4095, 8.6936)
GUTTMANN = (49.413805, 8.653752)  # way 24968886, closed to trucks at night
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


def fleet(start: datetime, **banned: Any) -> dict[str, Any]:
    jobs = [{"id": "night-ban", "location": place(GUTTMANN), "serviceTime": 300, **banned}]
    jobs += [{"id": f"outside-{i}", "location": place(p), "serviceTime": 300} for i, p in enumerate(OUTSIDE)]
    truck = {"id": "truck", "kind": "truck", "start": place(BISMARCKPLATZ),
             "shift": {"end": (start + timedelta(hours=6)).isoformat()}}  # fmt: skip
    return {"startTime": start.isoformat(), "vehicles": [truck], "jobs": jobs}


async def test_a_truck_whose_shift_starts_at_18_15_serves_the_ban_street_before_19(client: Client) -> None:
    status, body = await post(client, "/v1/optimize/routes", fleet(tuesday("18:15")))
    assert status == 200, body
    steps = {step.get("id"): step for step in body["routes"][0]["steps"]}
    assert body["unassigned"] == [] and body["provider"] == "valhalla"
    assert tuesday("18:15") <= datetime.fromisoformat(steps["night-ban"]["arrival"]) <= tuesday("19:00")
    assert "timeRules" in body["routes"][0]


async def test_a_shift_starting_after_the_ban_begins_leaves_the_street_out_with_the_reason(client: Client) -> None:
    status, body = await post(client, "/v1/optimize/routes", fleet(tuesday("19:30")))
    assert status == 200, body
    [item] = body["unassigned"]
    assert item["id"] == "night-ban" and item["reason"] == "closed-at-time"
    assert "Ludwig-Guttmann-Straße (way 24968886)" in item["message"] and RULE in item["message"]
    assert {step.get("id") for step in body["routes"][0]["steps"]} >= {"outside-0", "outside-1", "outside-2"}


async def test_a_job_window_inside_the_ban_is_closed_at_time(client: Client) -> None:
    body = fleet(tuesday("18:15"), timeWindows=[{"start": tuesday("20:00").isoformat(), "end": tuesday("22:00").isoformat()}])
    status, answer = await post(client, "/v1/optimize/routes", body)
    assert status == 200, answer
    assert [(u["id"], u["reason"]) for u in answer["unassigned"]] == [("night-ban", "closed-at-time")]


async def test_without_a_start_time_the_plan_is_time_independent(client: Client) -> None:
    body = fleet(tuesday("19:30"))
    del body["startTime"], body["vehicles"][0]["shift"]
    status, answer = await post(client, "/v1/optimize/routes", body)
    assert status == 200 and answer["unassigned"] == [], answer
    assert "timeRules" not in answer["routes"][0]


def tour(*points: tuple[float, float]) -> list[dict[str, Any]]:
    return [{"name": f"stop {i}", "coordinate": place(p)} for i, p in enumerate(points)]


def at(hour: str) -> str:
    return f"?vehicle=truck&startTime={quote(tuesday(hour).isoformat())}"


async def test_a_tour_visits_a_stop_on_the_ban_street_while_it_is_open(client: Client) -> None:
    status, body = await post(client, f"/v1/optimize/stops{at('10:00')}", tour(BISMARCKPLATZ, GUTTMANN, OUTSIDE[0]))
    assert status == 200, body
    assert body["unassigned"] == [] and {v["index"] for v in body["stops"]} == {0, 1, 2}
    banned = next(v for v in body["stops"] if v["index"] == 1)
    assert datetime.fromisoformat(banned["arrival"]) < tuesday("19:00")
    assert all("timeRules" in leg for leg in body["legs"])


async def test_a_tour_during_the_ban_leaves_the_stop_out_with_the_next_opening(client: Client) -> None:
    status, body = await post(client, f"/v1/optimize/stops{at('20:00')}", tour(BISMARCKPLATZ, GUTTMANN, OUTSIDE[0]))
    assert status == 200, body
    assert [v["index"] for v in body["stops"]] == [0, 2]
    [item] = body["unassigned"]
    assert item["index"] == 1 and item["reason"] == "closed-at-time"
    assert RULE in item["message"] and "it next opens at 2026-12-02T06:00+01:00" in item["message"]


async def test_a_stop_reached_after_the_ban_begins_is_left_out(client: Client) -> None:
    """Leaving at 18:50 the tour reaches the ban street after 19:00 whichever stop comes first
    when every stop takes 10 minutes: that stop is left out, the others visited."""
    stops = tour(BISMARCKPLATZ, *OUTSIDE, GUTTMANN)
    for stop in stops:
        stop["serviceTime"] = 600
    status, body = await post(client, f"/v1/optimize/stops{at('18:50')}", stops)
    assert status == 200, body
    assert [(u["index"], u["reason"]) for u in body["unassigned"]] == [(4, "closed-at-time")]
    assert "when the tour reaches it" in body["unassigned"][0]["message"]


def test_a_tour_at_a_time_searches_less_to_leave_room_for_its_road_tour() -> None:
    """Its legs are routed at their times after the search, about as long as its matrix took:
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
