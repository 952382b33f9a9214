"""POST /v1/optimize/stops end to end: Redis, auth, route and optimize services on an imported
Monaco map and the gateway as real processes, called over HTTP with a real token."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token

URL = "/v1/optimize/stops"
STOPS: list[dict[str, Any]] = [
    {"name": "Casino", "coordinate": {"lat": 43.7394, "lon": 7.4276}},
    {"name": "Stade Louis II", "coordinate": {"lat": 43.7275, "lon": 7.4155}, "start": True},
    {"name": "Port Hercule", "coordinate": {"lat": 43.7347, "lon": 7.4217}, "serviceTime": 600},
    {"name": "Larvotto", "coordinate": {"lat": 43.7450, "lon": 7.4340}},
    {"name": "Palais", "coordinate": {"lat": 43.7312, "lon": 7.4198}},
]


@pytest.fixture(scope="module")
def optimize_stack(full_platform: Stack) -> Stack:
    return full_platform


@pytest.fixture(scope="module")
def token(optimize_stack: Stack) -> str:
    return user_token(optimize_stack)


async def post(
    http: aiohttp.ClientSession, stack: Stack, body: Any, headers: dict[str, str], query: str = ""
) -> tuple[int, Any]:
    async with http.post(f"{stack.base_url}{URL}{query}", json=body, headers=headers) as resp:
        return resp.status, await resp.json(content_type=None)


async def test_optimized_tour_through_the_gateway(
    optimize_stack: Stack, http: aiohttp.ClientSession, token: str
) -> None:
    headers = {"Authorization": f"Bearer {token}", **PROBLEM}
    status, body = await post(http, optimize_stack, STOPS, headers, "?startTime=2025-07-01T23:45:00-08:00")
    assert status == 200, body
    order = [v["index"] for v in body["stops"]]
    assert order[0] == 1 and sorted(order) == [0, 1, 2, 3, 4]
    assert body["solver"]["method"] == "held-karp" and body["solver"]["optimal"]
    assert body["openTour"] and len(body["legs"]) == 4 and body["distance"] > 1000
    assert body["geometry"]["type"] == "LineString" and len(body["geometry"]["coordinates"]) > 10
    arrivals = [datetime.fromisoformat(v["arrival"]) for v in body["stops"]]
    assert arrivals == sorted(arrivals) and all(v["arrival"].endswith("-08:00") for v in body["stops"])
    assert arrivals[-1].day == 2  # past midnight
    assert body["serviceTime"] == 600
    # Round trip from the stadium: the start comes again at the end.
    trip = [{**stop, "destination": stop.get("start", False)} for stop in STOPS]
    status, round_trip = await post(http, optimize_stack, trip, headers)
    assert status == 200 and round_trip["roundTrip"]
    assert [v["index"] for v in round_trip["stops"]][::5] == [1, 1]
    assert round_trip["duration"] > body["duration"] - 1


async def test_errors_through_the_gateway(optimize_stack: Stack, http: aiohttp.ClientSession, token: str) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    far = [*STOPS, {"name": "Oslo", "coordinate": {"lat": 59.91, "lon": 10.75}}]
    status, legacy = await post(http, optimize_stack, far, {**auth, **LEGACY})
    assert status == 413 and legacy["details"][0]["code"] == "OPTIMIZE_ERROR_DIAMETER_TOO_LARGE"
    bad = [
        {"name": "x", "coordinate": {"lat": 100, "lon": "7"}},
        {"name": "y", "coordinate": {"lat": 43.7, "lon": 7.4}, "start": 1},
    ]
    status, problem = await post(http, optimize_stack, bad, {**auth, **PROBLEM}, "?startTime=2025-07-01T08:00:00")
    assert status == 400 and problem["type"] == "/problems/general/invalid-parameter/"
    assert problem["detail"].split("; ") == [
        "stops[0].coordinate.lat: must be between -90 and 90, got 100",
        "stops[0].coordinate.lon: must be a number between -180 and 180, got '7'",
        "stops[1].start: must be true or false, got 1",
        "startTime: needs a UTC offset (e.g. 2025-03-01T08:00:00+01:00 or ...Z), got '2025-07-01T08:00:00'",
    ]
    async with http.post(
        f"{optimize_stack.base_url}{URL}", data="x", headers={**auth, **LEGACY, "Content-Type": "text/plain"}
    ) as resp:
        assert resp.status == 415
    status, _ = await post(http, optimize_stack, STOPS, PROBLEM)
    assert status == 401
