"""The two Redis roles (docs/decisions.md): the state Redis (REDIS_URL: rate limits, revocations)
runs capped with noeviction, the cache Redis (REDIS_CACHE_URL: route and geocoder answers)
capped with allkeys-lru. Against real redis-server processes: the launcher starts both as
declared, compose declares the same, a flood evicts answers but never a limit or a revocation,
and each service puts its caches on the cache Redis and its state on the state Redis."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient

from auth_service.accounts import Revocation
from auth_service.revocation import publish_revocations
from common.config import REPO_ROOT, BaseConfig
from common.redis import ResilientRedis
from common.service import CACHE_REDIS_KEY, REDIS_KEY, base_app
from gateway.config import RateLimit
from gateway.ratelimit import RateLimiter
from launcher.redis_server import CACHE_REDIS, STATE_REDIS, free_port, redis_url, start_redis
from launcher.stack import Stack

pytestmark = pytest.mark.timeout(60)

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
MIB = 1024 * 1024
VALUE = b"x" * (16 * 1024)  # a route answer is 2-50 KiB


@pytest.fixture
def stack_redis(tmp_path: Path) -> Iterator[Stack]:
    """Both Redis roles started the way `make up` starts them."""
    stack = Stack(data_dir=tmp_path, redis_port=free_port(), redis_cache_port=free_port(), services=[])
    stack.start_redis()
    try:
        yield stack
    finally:
        stack.stop()


async def config_of(url: str) -> dict[str, str]:
    client = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        found = {**await client.config_get("maxmemory"), **await client.config_get("maxmemory-policy")}
        return {str(name): str(value) for name, value in found.items()}
    finally:
        await client.aclose()


async def test_make_up_starts_a_capped_state_redis_and_a_capped_lru_cache_redis(stack_redis: Stack) -> None:
    env = stack_redis.env()

    assert await config_of(env["REDIS_URL"]) == {"maxmemory": str(256 * MIB), "maxmemory-policy": "noeviction"}
    assert await config_of(env["REDIS_CACHE_URL"]) == {"maxmemory": str(128 * MIB), "maxmemory-policy": "allkeys-lru"}
    assert env["REDIS_CACHE_URL"] != env["REDIS_URL"]


def test_compose_runs_the_same_two_roles_and_hands_both_urls_to_the_services() -> None:
    compose: dict[str, Any] = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    for name, role in (("redis", STATE_REDIS), ("redis_cache", CACHE_REDIS)):
        command = " ".join(services[name]["command"])
        assert f"--maxmemory {role.maxmemory} --maxmemory-policy {role.policy}" in command, name
        assert services[name]["restart"] == "unless-stopped"
        assert "healthcheck" in services[name]
    env = services["gateway"]["environment"]
    assert env["REDIS_URL"].endswith("@redis:6379/0")
    assert env["REDIS_CACHE_URL"].endswith("@redis_cache:6379/0")
    for cached in ("geo_service", "route_service"):
        assert services[cached]["depends_on"]["redis_cache"] == {"condition": "service_healthy"}


@pytest.fixture
def small_redis(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Both roles with their policies but an 8 MiB cap, so a flood takes a moment, not minutes."""
    urls, processes = {}, []
    for role in (STATE_REDIS, CACHE_REDIS):
        port = free_port()
        small = dataclasses.replace(role, maxmemory="8mb")
        password = uuid.uuid4().hex
        processes.append(start_redis(port, tmp_path / role.name, password=password, persist=False, role=small))
        urls[role.name] = redis_url(port, password)
    try:
        yield urls
    finally:
        for process in processes:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
async def stores(small_redis: dict[str, str]) -> AsyncIterator[dict[str, ResilientRedis]]:
    opened = {role: ResilientRedis(url, role=role) for role, url in small_redis.items()}
    try:
        yield opened
    finally:
        await asyncio.gather(*(store.close() for store in opened.values()))


async def flood(store: ResilientRedis, prefix: str, total_bytes: int) -> list[bool]:
    """Writes `total_bytes` of 16 KiB answers in batches of 64 (one pipeline each)."""
    stored: list[bool] = []
    for start in range(0, total_bytes // len(VALUE), 64):
        keys = [f"{prefix}{n}" for n in range(start, start + 64)]
        stored += await asyncio.gather(*(store.set(key, VALUE, 3600) for key in keys))
    return stored


async def surviving(store: ResilientRedis, prefix: str, numbers: range) -> int:
    values = await store.client.mget([f"{prefix}{n}" for n in numbers])
    return sum(value is not None for value in values)


async def key_count(store: ResilientRedis, pattern: str) -> int:
    return len([key async for key in store.client.scan_iter(pattern, count=1000)])


async def stats(store: ResilientRedis) -> dict[str, Any]:
    return dict(await store.client.info("stats")) | dict(await store.client.info("memory"))


async def test_a_cache_flood_evicts_answers_and_the_state_redis_keeps_every_limit_and_revocation(
    stores: dict[str, ResilientRedis], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="common.redis")
    state, cache = stores["state"], stores["cache"]
    # One request per 100 s: the keys live ~100 s, so none expires during the test.
    limiter = RateLimiter(state, {"standard": RateLimit(rate=0.01, burst=100)})
    accounts = [f"sub:{uuid.uuid4().hex}" for _ in range(200)]
    for account in accounts:
        assert await limiter.check(account, "standard") is not None
    revoked = [Revocation("sub", uuid.uuid4().hex, 1_700_000_000) for _ in range(200)]
    assert await state.call(lambda client: publish_revocations(client, revoked, now=1_700_000_000), 0) == 200

    # Four times the cache's cap in route answers: the oldest make room, every write succeeds.
    stored = await flood(cache, "route:v1:", 32 * MIB)
    cache_stats = await stats(cache)
    assert all(stored)
    assert cache_stats["evicted_keys"] > 0
    assert cache_stats["used_memory"] <= 8 * MIB
    # LRU as Redis approximates it (sampling keys): of the oldest quarter ~12 % survive, of the
    # newest ~47 % (measured), against 25 % each if it evicted at random. A full run on a busy
    # machine had 82 against 236 (2.9 x): at random the two would be within some 10 % of each
    # other, so twice as many is the bound.
    quarter = len(stored) // 4
    oldest = await surviving(cache, "route:v1:", range(quarter))
    newest = await surviving(cache, "route:v1:", range(len(stored) - quarter, len(stored)))
    assert oldest < quarter // 4 < newest
    assert newest > 2 * oldest

    # The same flood sent to the state Redis (a misrouted cache): refused at the cap, nothing evicted.
    refused = await flood(state, "misrouted:", 32 * MIB)
    state_stats = await stats(state)
    assert not all(refused)
    assert state_stats["evicted_keys"] == 0
    assert await key_count(state, "ratelimit:*") == len(accounts)
    assert await key_count(state, "revoked:sub:*") == len(revoked)
    # A full state Redis is not an outage: it answers, the writes it refuses take their fallback,
    # and that is logged once, not per write.
    assert state.available
    assert len([r for r in caplog.records if "refused a command" in r.getMessage()]) == 1
    assert not [r for r in caplog.records if "unreachable" in r.getMessage()]


async def test_caches_use_the_cache_redis_and_state_stays_on_the_state_redis(
    aiohttp_client: ClientFactory, small_redis: dict[str, str]
) -> None:
    config = BaseConfig(service="test", redis_url=small_redis["state"], redis_cache_url=small_redis["cache"])
    client = await aiohttp_client(base_app(config, with_cache=True))
    app: web.Application = client.app
    health = await (await client.get("/health")).json()

    assert (app[REDIS_KEY].url, app[REDIS_KEY].role) == (small_redis["state"], "state")
    assert (app[CACHE_REDIS_KEY].url, app[CACHE_REDIS_KEY].role) == (small_redis["cache"], "cache")
    assert health["checks"]["redis"] == "up" and health["checks"]["redis_cache"] == "up"


async def test_without_a_cache_url_caches_share_the_state_redis(
    aiohttp_client: ClientFactory, small_redis: dict[str, str]
) -> None:
    config = BaseConfig(service="test", redis_url=small_redis["state"])
    client = await aiohttp_client(base_app(config, with_cache=True))
    health = await (await client.get("/health")).json()

    assert client.app[CACHE_REDIS_KEY] is client.app[REDIS_KEY]
    assert "redis_cache" not in health["checks"]


async def test_the_route_and_geo_services_put_their_answers_on_the_cache_redis(
    aiohttp_client: ClientFactory, small_redis: dict[str, str], tmp_path: Path
) -> None:
    from geo_service.app import create_app as create_geo_app
    from geo_service.config import GeoConfig
    from route_service.app import create_app as create_route_app
    from route_service.config import RouteConfig
    from route_service.handlers import STATE_KEY

    urls = {"redis_url": small_redis["state"], "redis_cache_url": small_redis["cache"], "port": 0}
    # No datasets: only the wiring is looked at.
    route = await aiohttp_client(
        create_route_app(RouteConfig.from_env("route_service", map_dir=tmp_path / "maps", preload=False, **urls))
    )
    geo = await aiohttp_client(create_geo_app(GeoConfig.from_env("geo_service", index_dir_override=tmp_path, **urls)))

    assert route.app[STATE_KEY].cache.redis is route.app[CACHE_REDIS_KEY]
    assert route.app[CACHE_REDIS_KEY].url == small_redis["cache"]
    assert geo.app[CACHE_REDIS_KEY].url == small_redis["cache"]
    for client in (route, geo):
        assert (await (await client.get("/health")).json())["checks"]["redis_cache"] == "up"
