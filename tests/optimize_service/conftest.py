"""Optimize service fixtures: the real route service in-process on small imported maps.

Monaco (car profiles only, a few seconds) is imported once per session; the tiny synthetic
map of two unconnected streets gives stops that no road connects. No mock of the route
service: the optimize app calls a real one over HTTP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from optimize_service.app import create_app
from optimize_service.config import OptimizeConfig
from route_service.app import create_app as create_route_app
from route_service.config import RouteConfig
from route_service.importing.importer import ImportResult, Progress, import_maps
from tests.route_service.osm_samples import TinyMap, write_tiny_map

ServerFactory = Callable[[web.Application], Awaitable[TestServer]]
ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
CAR_PROFILES = ["car-fastest", "car-shortest"]


def import_quietly(pbf: Path, out: Path, profiles: list[str]) -> ImportResult:
    return import_maps([pbf], out, profiles=profiles, progress=Progress(emit=lambda _line: None))


@pytest.fixture(scope="session")
def monaco_maps(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> ImportResult:
    return import_quietly(shared_osm / "monaco.osm.pbf", tmp_path_factory.mktemp("monaco-maps"), CAR_PROFILES)


@pytest.fixture(scope="session")
def tiny_islands(tmp_path_factory: pytest.TempPathFactory) -> tuple[TinyMap, ImportResult]:
    tiny = write_tiny_map(tmp_path_factory.mktemp("tiny-osm"))
    return tiny, import_quietly(tiny.pbf, tmp_path_factory.mktemp("tiny-maps"), ["car-fastest"])


async def route_server(aiohttp_server: ServerFactory, maps: ImportResult, redis_url: str) -> TestServer:
    config = RouteConfig.from_env("route_service", map_dir=maps.path.parent, redis_url=redis_url, port=0)
    return await aiohttp_server(create_route_app(config))


async def optimize_client(
    aiohttp_client: ClientFactory, route_url: str, redis_url: str | None = None, **settings: Any
) -> TestClient[Any, Any]:
    """`redis_url`: the state Redis of the accounts' budgets (common.admission); calls made
    without the gateway's caller headers are never charged."""
    # Solver in a thread: spawning worker processes per test would dominate the runtime.
    extra = {"redis_url": redis_url} if redis_url else {}
    config = OptimizeConfig.from_env(
        "optimize_service", route_service_url=route_url, solver_processes=0, port=0, **extra, **settings
    )
    return await aiohttp_client(create_app(config))


@pytest.fixture
async def monaco_route(aiohttp_server: ServerFactory, monaco_maps: ImportResult, redis_server: str) -> TestServer:
    return await route_server(aiohttp_server, monaco_maps, redis_server)


@pytest.fixture
async def client(aiohttp_client: ClientFactory, monaco_route: TestServer, redis_server: str) -> TestClient[Any, Any]:
    return await optimize_client(aiohttp_client, str(monaco_route.make_url("")), redis_server)


@pytest.fixture
async def islands_client(
    aiohttp_client: ClientFactory,
    aiohttp_server: ServerFactory,
    tiny_islands: tuple[TinyMap, ImportResult],
    redis_server: str,
) -> TestClient[Any, Any]:
    server = await route_server(aiohttp_server, tiny_islands[1], redis_server)
    return await optimize_client(aiohttp_client, str(server.make_url("")), redis_server)
