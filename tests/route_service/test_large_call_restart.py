"""The large-call child process (route_service.calls) killed: the request it had fails with a
503 in our format, the next large call is served by a new child, /health counts the restart.
On Monaco (one profile, seconds to import), every matrix made "large"."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from route_service import calls
from route_service.app import create_app
from route_service.calls import LargeCalls
from route_service.config import RouteConfig
from route_service.importing.importer import ImportResult, Progress, import_maps
from route_service.state import STATE_KEY

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]
PROBLEM = {"Accept": "application/problem+json"}
POINTS = [{"lat": 43.7394, "lon": 7.4276}, {"lat": 43.7347, "lon": 7.4217}, {"lat": 43.7312, "lon": 7.4198}]
MATRIX = {"sources": POINTS, "destinations": POINTS}


@pytest.fixture(scope="module")
def monaco_car(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> ImportResult:
    out = tmp_path_factory.mktemp("monaco-car")
    return import_maps([shared_osm / "monaco.osm.pbf"], out, profiles=["car-fastest"], progress=Progress(emit=lambda _line: None))


@pytest.fixture
async def client(
    aiohttp_client: ClientFactory, monaco_car: ImportResult, redis_server: str, monkeypatch: pytest.MonkeyPatch
) -> Client:
    monkeypatch.setattr(calls, "LARGE_MATRIX_CELLS", 1)  # every matrix goes to the child
    config = RouteConfig.from_env(
        "route_service", map_dir=monaco_car.path.parent, redis_url=redis_server, port=0, large_processes=1
    )
    return await aiohttp_client(create_app(config))


def large_calls(client: Client) -> LargeCalls:
    large = client.app[STATE_KEY].calls.large
    assert large is not None
    return large


def wait_broken(large: LargeCalls) -> None:
    """Until the pool has noticed that its child died (its own thread does, not the loop)."""
    deadline = time.monotonic() + 10
    while not getattr(large.pool.executor, "_broken", False):
        assert time.monotonic() < deadline, "the pool did not notice its dead child"
        time.sleep(0.02)


async def large_call_restarts(client: Client) -> int:
    response = await client.get("/health")
    assert response.status == 200
    restarts: int = (await response.json())["checks"]["largeCalls"]["restarts"]
    return restarts


async def test_the_request_in_a_killed_child_gets_503_and_the_next_one_a_new_child(client: Client) -> None:
    large = large_calls(client)
    child = await large.run(os.getpid)
    assert await large_call_restarts(client) == 0
    os.kill(child, signal.SIGSTOP)  # holds the request in the child until it is killed
    in_flight = asyncio.ensure_future(client.post("/internal/matrix", json=MATRIX, headers=PROBLEM))
    await asyncio.sleep(0.5)
    os.kill(child, signal.SIGKILL)
    response = await asyncio.wait_for(in_flight, timeout=10)
    body = await response.json()
    assert response.status == 503 and response.content_type == "application/problem+json", body
    assert body["type"] == "/problems/general/service-unavailable" and "large-call process ended" in body["detail"]
    assert response.headers["Retry-After"] == "1"

    started = time.monotonic()
    response = await client.post("/internal/matrix", json=MATRIX)
    assert response.status == 200 and len((await response.json())["durations"]) == len(POINTS)
    print(f"next large call served by a new child after {time.monotonic() - started:.2f} s")
    assert await large.run(os.getpid) != child
    assert await large_call_restarts(client) == 1


async def test_a_child_killed_while_idle_costs_no_request(client: Client) -> None:
    large = large_calls(client)
    child = await large.run(os.getpid)
    os.kill(child, signal.SIGKILL)
    wait_broken(large)
    response = await client.post("/internal/matrix", json=MATRIX)
    assert response.status == 200
    assert await large_call_restarts(client) == 1


async def test_a_large_tour_whose_child_is_killed_gets_503_and_the_next_one_an_answer(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tour through many waypoints is routed in the child (route_service.calls): the child's
    death fails it as a large matrix's does, and the next one is answered by a new child."""
    monkeypatch.setattr(calls, "LARGE_ROUTE_WAYPOINTS", 10)
    large = large_calls(client)
    legs = 40
    tour = {"waypoints": [POINTS[i % len(POINTS)] for i in range(legs + 1)], "provider": "osrm"}
    child = await large.run(os.getpid)
    os.kill(child, signal.SIGSTOP)
    in_flight = asyncio.ensure_future(client.post("/internal/route", json=tour, headers=PROBLEM))
    await asyncio.sleep(0.5)
    os.kill(child, signal.SIGKILL)
    response = await asyncio.wait_for(in_flight, timeout=10)
    body = await response.json()
    assert response.status == 503 and "large-call process ended" in body["detail"], body
    response = await client.post("/internal/route", json=tour)
    assert response.status == 200 and len((await response.json())["legs"]) == legs
    assert await large_call_restarts(client) == 1


async def test_the_child_starts_with_the_service_under_preload_and_else_with_the_first_large_call(
    aiohttp_client: ClientFactory, monaco_car: ImportResult, redis_server: str
) -> None:
    """ROUTE_PRELOAD=1 (production) starts the child with the service, so the first large call
    pays no start; 0 (the tests) leaves it to the first large call."""
    for preload, at_start in ((True, 1), (False, 0)):
        config = RouteConfig.from_env("route_service", map_dir=monaco_car.path.parent, redis_url=redis_server,
                                      port=0, large_processes=1, preload=preload)  # fmt: skip
        client = await aiohttp_client(create_app(config))
        large = large_calls(client)
        assert len(large.pool.executor._processes) == at_start, preload  # type: ignore[attr-defined]
        await large.run(os.getpid)
        assert len(large.pool.executor._processes) == 1, preload  # type: ignore[attr-defined]
        await client.close()
