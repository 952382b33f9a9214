"""A solver process killed mid-request (optimize_service.scheduler lanes on common.pools): that
request gets a 503 in our format, the next one is solved by a new process, /health counts the
restart. Real solver processes (one per lane), real route service on Monaco."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from optimize_service.app import create_app
from optimize_service.config import OptimizeConfig
from optimize_service.scheduler import Lane
from optimize_service.state import STATE_KEY
from tests.optimize_service.test_app import PROBLEM, URL, stops

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]


@pytest.fixture
async def client(aiohttp_client: ClientFactory, monaco_route: TestServer) -> Client:
    config = OptimizeConfig.from_env(
        "optimize_service",
        route_service_url=str(monaco_route.make_url("")),
        solver_processes=1,
        small_processes=1,
        port=0,
    )
    return await aiohttp_client(create_app(config))


async def post_stops(client: Client, count: int) -> tuple[int, dict[str, str], Any]:
    response = await client.post(
        URL, data=orjson.dumps(stops(count)), headers={"Content-Type": "application/json", **PROBLEM}
    )
    return response.status, dict(response.headers), await response.json(content_type=None)


def wait_solving(lane: Lane) -> None:
    """Until the lane has handed a request to its process (the matrix comes first)."""
    deadline = time.monotonic() + 20
    while lane.health()["solving"] == 0:
        assert time.monotonic() < deadline, "the request never reached the solver"
        time.sleep(0.02)


async def test_a_killed_solver_fails_its_request_with_503_and_the_next_is_solved(client: Client) -> None:
    small = client.app[STATE_KEY].optimizer.scheduler.small
    solver = await small.pool.run(os.getpid)
    os.kill(solver, signal.SIGSTOP)  # holds the request in the solver until it is killed
    in_flight = asyncio.ensure_future(post_stops(client, 6))  # exact: the small lane
    await asyncio.to_thread(wait_solving, small)
    await asyncio.sleep(0.2)
    os.kill(solver, signal.SIGKILL)
    status, headers, body = await asyncio.wait_for(in_flight, timeout=20)
    assert status == 503 and headers["Content-Type"].startswith("application/problem+json"), body
    assert body["type"] == "/problems/general/service-unavailable" and "small-lane solver" in body["detail"]
    assert headers["Retry-After"] == "1"

    status, _, body = await post_stops(client, 6)
    assert status == 200 and body["solver"]["method"] == "held-karp", body
    assert await small.pool.run(os.getpid) != solver
    response = await client.get("/health")
    lanes = (await response.json())["checks"]["lanes"]
    assert (lanes["small"]["restarts"], lanes["large"]["restarts"]) == (1, 0)
    assert lanes["small"]["admitted"] == 0  # the failed request left the lane
