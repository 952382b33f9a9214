"""Integration tests: the real processes (Redis, services, gateway) on free loopback ports."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from common.config import DEFAULT_PORTS, REPO_ROOT
from launcher.redis_server import free_port
from launcher.stack import Stack
from tests.imports_ahead import ImportsAhead
from tests.postgres_server import PostgresServer

TEST_ENV = {
    "JWT_LEEWAY_SECONDS": "0",
    "REVOCATION_CACHE_SECONDS": "0.5",
    "REVOCATION_SYNC_SECONDS": "1",
    "ARGON2_TIME_COST": "1",
    "ARGON2_MEMORY_KIB": "8192",
    "ARGON2_PARALLELISM": "1",
    "RATE_LIMITS": "anonymous=1000/1000,demo=2/5,standard=1000/1000,unlimited=0/0",
    "LOG_LEVEL": "INFO",
    # /map's background tiles from a port nothing listens on: the page must draw without them.
    "MAP_TILE_URL": "http://127.0.0.1:9/{z}/{x}/{y}.png",
}
LEGACY = {"Accept": "application/json"}
PROBLEM = {"Accept": "application/json, application/problem+json"}


def make_stack(data_dir: Path, services: list[str], **extra_env: str) -> Stack:
    return Stack(
        data_dir=data_dir,
        ports={name: free_port() for name in DEFAULT_PORTS},
        redis_port=free_port(),
        redis_cache_port=free_port(),
        services=services,
        extra_env={**TEST_ENV, **extra_env},
        startup_timeout=60,
    )


def run_console(stack: Stack, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auth_service.console", *args],
        cwd=REPO_ROOT,
        env=stack.env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def console_ok(stack: Stack, *args: str) -> str:
    result = run_console(stack, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis, the auth service and the gateway; the other services are not deployed."""
    stack = make_stack(tmp_path_factory.mktemp("platform"), ["auth_service"])
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def accounts_platform(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """`platform` with its accounts in SQLite (the default) and in PostgreSQL (DATABASE_URL, as
    the manifests deploy it): the accounts' journeys through the gateway run on both."""
    extra: dict[str, str] = {}
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        extra["DATABASE_URL"] = server.new_database()
    stack = make_stack(tmp_path_factory.mktemp(f"platform-{request.param}"), ["auth_service"], **extra)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def full_platform(
    tmp_path_factory: pytest.TempPathFactory, shared_osm: Path, imports_ahead: ImportsAhead
) -> Iterator[Stack]:
    """Every service on real data: Monaco for routing (car fastest and Valhalla's tiles),
    Munich for geocoding. One stack for all end-to-end modules: starting it is the slow part."""
    # Services open their datasets at start, so the imports come first (ahead: `tests.imports_ahead`).
    imported = imports_ahead.result(
        "full-platform", lambda: import_platform_data(shared_osm, imports_ahead.out("full-platform"))
    )
    # The stack writes its accounts, keys and logs beside the data: each worker its own copy
    data_dir = tmp_path_factory.mktemp("full-platform")
    shutil.copytree(imported, data_dir, dirs_exist_ok=True)
    # One solver process per lane (small, large): the machine has few cores and most tests send
    # one request at a time.
    services = ["auth_service", "geo_service", "route_service", "optimize_service", "job_service"]
    # Short job leases: a job interrupted by a killed job service runs again within seconds.
    stack = make_stack(
        data_dir, services, OPTIMIZE_SOLVER_PROCESSES="1", OPTIMIZE_SMALL_PROCESSES="1", JOB_LEASE_SECONDS="3"
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def import_platform_data(shared_osm: Path, data_dir: Path) -> Path:
    """`full_platform`'s datasets imported into `data_dir`: Monaco's car-fastest maps, Munich's
    geocoder index; gives `data_dir`."""
    from geo_service.importing.importer import run_import
    from route_service.importing.importer import Progress, import_maps

    import_maps([shared_osm / "monaco.osm.pbf"], data_dir / "maps", profiles=["car-fastest"],
                progress=Progress(emit=lambda _line: None))  # fmt: skip
    run_import([shared_osm / "munich.osm.pbf"], data_dir / "geo", emit=lambda _line: None)
    return data_dir


def user_token(stack: Stack, tier: str = "unlimited") -> str:
    """A new account of the tier, logged in through the gateway."""
    return stack.login(tier)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def login(http: aiohttp.ClientSession, stack: Stack, user: str, password: str, **extra: Any) -> str:
    async with http.post(
        f"{stack.base_url}/v1/authenticate", json={"user": user, "password": password, **extra}
    ) as resp:
        body = await resp.json()
        assert resp.status == 200, body
        token: str = body["token"]
        return token


Caller = Callable[..., Awaitable[tuple[int, Any]]]


@pytest.fixture(scope="module")
def api_token(full_platform: Stack) -> str:
    return user_token(full_platform)


@pytest.fixture
async def api(full_platform: Stack, api_token: str, http: aiohttp.ClientSession) -> Caller:
    """`await api(method, path, body=None, headers=None, auth=True)` on the full platform:
    (status, JSON body); a dict body goes as JSON, bytes or text as they are."""

    async def call(
        method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, auth: bool = True
    ) -> tuple[int, Any]:
        sent = {**PROBLEM, **(headers or {}), **({"Authorization": f"Bearer {api_token}"} if auth else {})}
        kwargs: dict[str, Any] = {"json": body} if isinstance(body, dict | list) else {"data": body}
        async with http.request(method, full_platform.base_url + path, headers=sent, **kwargs) as resp:
            return resp.status, await resp.json(content_type=None)

    return call
