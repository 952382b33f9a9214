"""POST /v1/optimize/stops end to end: Redis, auth, route and optimize services on an imported
Monaco map and the gateway as real processes, called over HTTP with a real token."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from launcher.stack import Stack
from route_service.importer import Progress, import_maps
from tests.integration.conftest import LEGACY, PROBLEM, console_ok, login, make_stack

PASSWORD = "optimize e2e password"
URL = "/v1/optimize/stops"
STOPS: list[dict[str, Any]] = [
    {"name": "Casino", "coordinate": {"lat": 43.7394, "lon": 7.4276}},
    {"name": "Stade Louis II", "coordinate": {"lat": 43.7275, "lon": 7.4155}, "start": True},
    {"name": "Port Hercule", "coordinate": {"lat": 43.7347, "lon": 7.4217}, "serviceTime": 600},
    {"name": "Larvotto", "coordinate": {"lat": 43.7450, "lon": 7.4340}},
    {"name": "Palais", "coordinate": {"lat": 43.7312, "lon": 7.4198}},
]


@pytest.fixture(scope="module")
def optimize_stack(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("optimize-e2e")
    import_maps([shared_osm / "monaco.osm.pbf"], data_dir / "maps", profiles=["car-fastest"],
                progress=Progress(emit=lambda _line: None))  # fmt: skip
    # One solver process: the machine has few cores and the tests send one request at a time.
    stack = make_stack(data_dir, ["auth_service", "route_service", "optimize_service"], OPTIMIZE_SOLVER_PROCESSES="1")
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture
async def token(optimize_stack: Stack, http: aiohttp.ClientSession) -> str:
    email = f"optimize-{uuid.uuid4().hex[:8]}@example.com"
    console_ok(optimize_stack, "add-user", email, "--password", PASSWORD, "--tier", "unlimited")
    return await login(http, optimize_stack, email, PASSWORD)


async def post(http: aiohttp.ClientSession, stack: Stack, body: Any, headers: dict[str, str], query: str = "") -> tuple[int, Any]:
    async with http.post(f"{stack.base_url}{URL}{query}", json=body, headers=headers) as resp:
        return resp.status, await resp.json(content_type=None)


async def test_optimized_tour_through_the_gateway(optimize_stack: Stack, http: aiohttp.ClientSession, token: str) -> None:
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
    bad = [{"name": "x", "coordinate": {"lat": 100, "lon": "7"}}, {"name": "y", "coordinate": {"lat": 43.7, "lon": 7.4}, "start": 1}]
    status, problem = await post(http, optimize_stack, bad, {**auth, **PROBLEM}, "?startTime=2025-07-01T08:00:00")
    assert status == 400 and problem["type"] == "/problems/general/invalid-parameter/"
    assert problem["detail"].split("; ") == [
        "stops[0].coordinate.lat: must be between -90 and 90, got 100",
        "stops[0].coordinate.lon: must be a number between -180 and 180, got '7'",
        "stops[1].start: must be true or false, got 1",
        "startTime: needs a UTC offset (e.g. 2025-03-01T08:00:00+01:00 or ...Z), got '2025-07-01T08:00:00'",
    ]
    async with http.post(f"{optimize_stack.base_url}{URL}", data="x", headers={**auth, **LEGACY, "Content-Type": "text/plain"}) as resp:
        assert resp.status == 415
    status, _ = await post(http, optimize_stack, STOPS, PROBLEM)
    assert status == 401
