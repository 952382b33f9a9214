"""The gateway forwards `/v1/route` a few at a time, the others waiting in arrival order
(common.client.ArrivalQueue): the latency tail measured in bench/route_http came from every
request reaching the route workers at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from common.client import ArrivalQueue
from common.errors import GatewayTimeout
from gateway.app import create_app
from gateway.config import GatewayConfig, RateLimit
from tests.gateway.keys import TestKey, jwks

REQUESTS = 12
QUEUE_LIMIT = 3


class Upstream:
    """Counts the requests in flight on each path; each waits until all `REQUESTS` arrived (or
    a short while), so a gateway that sends them all at once is seen doing so."""

    def __init__(self, key: TestKey) -> None:
        self.key = key
        self.in_flight = 0
        self.most: dict[str, int] = {}
        self.seen: dict[str, int] = {}
        self.all_in: dict[str, asyncio.Event] = {}

    async def answer(self, request: web.Request) -> web.Response:
        path = request.path
        self.in_flight += 1
        self.seen[path] = self.seen.get(path, 0) + 1
        self.most[path] = max(self.most.get(path, 0), self.in_flight)
        event = self.all_in.setdefault(path, asyncio.Event())
        if self.seen[path] == REQUESTS:
            event.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), 0.2)
        self.in_flight -= 1
        return web.json_response({})

    def app(self) -> web.Application:
        async def keys(request: web.Request) -> web.Response:
            return web.json_response(jwks(self.key))

        app = web.Application()
        app.router.add_get("/.well-known/jwks.json", keys)
        app.router.add_get("/v1/route", self.answer)
        app.router.add_post("/v1/optimize/stops", self.answer)
        return app


@pytest.fixture
async def setup(aiohttp_client: Any, redis_server: str) -> AsyncIterator[tuple[TestClient, Upstream, str]]:
    key = TestKey("k1")
    upstream = Upstream(key)
    server = TestServer(upstream.app())
    await server.start_server()
    base = str(server.make_url("")).rstrip("/")
    config = GatewayConfig(
        service="gateway",
        redis_url=redis_server,
        upstreams={"auth_service": base, "route_service": base, "optimize_service": base},
        jwks_url=base + "/.well-known/jwks.json",
        rate_limits={"standard": RateLimit(1000, 1000), "anonymous": RateLimit(1000, 1000)},
        queued_concurrency=QUEUE_LIMIT,
    )
    client: TestClient = await aiohttp_client(create_app(config))
    yield client, upstream, f"Bearer {key.token(sub='user:1', tier='standard')}"
    await server.close()


async def test_route_requests_reach_the_service_a_few_at_a_time(setup: tuple[TestClient, Upstream, str]) -> None:
    client, upstream, token = setup

    async def one() -> int:
        resp = await client.get("/v1/route?from=49.4%2C8.7&to=49.41%2C8.69", headers={"Authorization": token})
        return resp.status

    assert await asyncio.gather(*(one() for _ in range(REQUESTS))) == [200] * REQUESTS
    assert upstream.most["/v1/route"] == QUEUE_LIMIT


async def test_heavy_routes_are_not_queued_behind_each_other(setup: tuple[TestClient, Upstream, str]) -> None:
    """Only light routes queue: a slow optimization holding a place would stall the routes."""
    client, upstream, token = setup

    async def one() -> int:
        resp = await client.post("/v1/optimize/stops", json={}, headers={"Authorization": token})
        return resp.status

    assert await asyncio.gather(*(one() for _ in range(REQUESTS))) == [200] * REQUESTS
    assert upstream.most["/v1/optimize/stops"] == REQUESTS


async def test_waiters_get_their_place_in_arrival_order() -> None:
    queue = ArrivalQueue(1)
    order: list[int] = []
    release = asyncio.Event()

    async def call(number: int) -> None:
        async with queue.place(5.0, "route service"):
            order.append(number)
            await release.wait()

    first = asyncio.create_task(call(0))
    await asyncio.sleep(0)
    others = []
    for number in range(1, 6):
        others.append(asyncio.create_task(call(number)))
        await asyncio.sleep(0)  # each arrives after the one before
    release.set()
    await asyncio.gather(first, *others)
    assert order == [0, 1, 2, 3, 4, 5]


async def test_a_place_not_given_in_time_is_a_504() -> None:
    queue = ArrivalQueue(1)
    async with queue.place(5.0, "route service"):
        with pytest.raises(GatewayTimeout, match="route service"):
            async with queue.place(0.01, "route service"):
                pass
