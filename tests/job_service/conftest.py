"""Job service fixtures: the session's real Redis (emptied for each test), a stand-in for the
owning services (an aiohttp app on a real port that answers the operations, prices each at
7 units when asked for the price only, and counts its calls) and the job service's app on both."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from common.admission import INTERNAL_JOB_HEADER, JOB_PRICE_ONLY
from common.errors import DetourEmptyFile
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from common.middleware import make_middlewares
from common.redis import ResilientRedis
from common.tiers import parse_tier_limits
from job_service.app import create_app
from job_service.config import JobConfig
from job_service.store import JobStore

Client = TestClient[Any, Any]
ClientFactory = Callable[[web.Application], Awaitable[Client]]


@pytest.fixture
def redis_url(redis_server: str) -> str:
    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    client.close()
    return redis_server


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[JobStore]:
    resilient = ResilientRedis(redis_url, timeout=5.0)
    yield JobStore(resilient, result_ttl_seconds=60)
    await resilient.close()


@dataclass
class Upstream:
    """What the stand-in received: every call, and how long the optimizations take."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    priced: list[dict[str, Any]] = field(default_factory=list)  # the submissions' price-only calls
    seconds: float = 0.0
    url: str = ""
    called: asyncio.Event = field(default_factory=asyncio.Event)
    answered: asyncio.Event = field(default_factory=asyncio.Event)  # an optimization's answer sent
    # Set when the stand-in closes: a call still in its sleep answers at once, not holding the
    # close for the server's shutdown timeout (10 s after a test left a 30 s call running).
    closing: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[*make_middlewares("upstream"), self.price_only])
        app.router.add_post("/v1/optimize/stops", self.answer)
        app.router.add_post("/v1/optimize/routes", self.answer)
        app.router.add_post("/v1/detour/file", self.detour)
        return app

    @web.middleware
    async def price_only(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get(INTERNAL_JOB_HEADER) != JOB_PRICE_ONLY:
            return await handler(request)
        self.priced.append({"path": request.path, "bytes": len(await request.read())})
        return web.Response(status=204, headers={"RateLimit-Cost": "7"})

    def seen(self, request: web.Request, body: bytes) -> dict[str, Any]:
        call = {
            "path": request.path,
            "query": dict(request.query),
            "subject": request.headers.get(INTERNAL_SUBJECT_HEADER),
            "tier": request.headers.get(INTERNAL_TIER_HEADER),
            "contentType": request.headers.get("Content-Type"),
            "disposition": request.headers.get("Content-Disposition"),
            "job": request.headers.get(INTERNAL_JOB_HEADER),
            "bytes": len(body),
        }
        self.calls.append(call)
        self.called.set()
        return call

    async def wait_for_call(self, seconds: float = 10) -> None:
        await asyncio.wait_for(self.called.wait(), seconds)

    async def answer(self, request: web.Request) -> web.Response:
        call = self.seen(request, await request.read())
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.closing.wait(), float(request.query.get("seconds", self.seconds)))
            # ?pad=n: n bytes that do not compress, for results of a known size.
            pad = {"pad": secrets.token_hex(int(request.query["pad"]) // 2)} if "pad" in request.query else {}
            return web.json_response({"answered": call, **pad})
        finally:
            self.answered.set()

    async def detour(self, request: web.Request) -> web.Response:
        body = await request.read()
        call = self.seen(request, body)
        if not body:
            raise DetourEmptyFile("the file has no data lines")
        return web.json_response({"lines": body.count(b"\n"), "answered": call})


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    stand_in = Upstream()
    server = TestServer(stand_in.app())
    await server.start_server()
    stand_in.url = str(server.make_url("")).rstrip("/")
    yield stand_in
    stand_in.closing.set()
    await server.close()


def job_config(redis_url: str, upstream_url: str, **overrides: Any) -> JobConfig:
    values: dict[str, Any] = {
        "service": "job_service",
        "redis_url": redis_url,
        "route_service_url": upstream_url,
        "optimize_service_url": upstream_url,
        "concurrency": 1,
        "lease_seconds": 1.0,
        "poll_seconds": 0.05,
        "result_ttl_seconds": 60,
        "job_limits": parse_tier_limits("JOB_LIMITS", "demo=1,standard=2,unlimited=5"),
        **overrides,
    }
    return JobConfig(**values)


@pytest.fixture
async def jobs_client(aiohttp_client: ClientFactory, redis_url: str, upstream: Upstream) -> Client:
    return await aiohttp_client(create_app(job_config(redis_url, upstream.url)))


def caller(subject: str = "user-1", tier: str = "standard") -> dict[str, str]:
    return {INTERNAL_SUBJECT_HEADER: subject, INTERNAL_TIER_HEADER: tier}
