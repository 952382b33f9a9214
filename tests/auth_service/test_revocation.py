"""Revocations reach Redis: at once from the console, and by the service's re-publishing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from auth_service.accounts import AccountStore, Revocation
from auth_service.app import create_app
from auth_service.config import AuthConfig
from auth_service.revocation import REVOCATION_TTL_SECONDS, publish_now, publish_revocations
from tests.auth_service.helpers import UNREACHABLE_REDIS, ClientFactory, add_user, with_redis


def revoked_time(value: bytes | str | None) -> int:
    assert value is not None, "the revocation is not in Redis"
    return int(value)


async def poll_key(client: aioredis.Redis, key: str, attempts: int) -> bytes | str | None:
    """The key's value once it appears, polling every 0.1 s; None after `attempts` polls."""
    for _ in range(attempts):
        value: bytes | str | None = await client.get(key)
        if value is not None:
            return value
        await asyncio.sleep(0.1)
    return None


@pytest.fixture
async def redis_client(redis_server: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_server)
    yield client
    await client.aclose()


async def test_publish_now_sets_time_and_ttl(
    config: AuthConfig, store: AccountStore, redis_server: str, redis_client: aioredis.Redis
) -> None:
    user = add_user(config, store, "kim@example.com")
    await redis_client.delete(f"revoked:sub:user:{user.id}")
    revocation = store.disable_user("kim@example.com")
    # publish_now runs its own event loop, as the console does.
    assert await asyncio.to_thread(publish_now, redis_server, [revocation])
    key = f"revoked:sub:user:{user.id}"
    assert revoked_time(await redis_client.get(key)) == revocation.revoked_at
    assert REVOCATION_TTL_SECONDS - 5 <= await redis_client.ttl(key) <= REVOCATION_TTL_SECONDS


async def test_api_key_revocation_key_format(
    config: AuthConfig, store: AccountStore, redis_client: aioredis.Redis
) -> None:
    add_user(config, store, "lee@example.com")
    row, key = store.add_api_key("lee@example.com")
    _, revocation = store.revoke_api_key(key[:8])
    await redis_client.delete(f"revoked:akid:{row.id}")
    assert await publish_revocations(redis_client, [revocation]) == 1
    assert revoked_time(await redis_client.get(f"revoked:akid:{row.id}")) == revocation.revoked_at


async def test_expired_revocations_are_not_published(redis_client: aioredis.Redis) -> None:
    stale = Revocation("sub", "user:stale-test", int(time.time()) - REVOCATION_TTL_SECONDS - 1)
    await redis_client.delete(stale.redis_key)
    assert await publish_revocations(redis_client, [stale]) == 0
    assert await redis_client.get(stale.redis_key) is None


def test_publish_now_reports_unreachable_redis() -> None:
    started = time.monotonic()
    assert not publish_now(UNREACHABLE_REDIS, [Revocation("sub", "user:1", int(time.time()))], timeout=0.2)
    assert time.monotonic() - started < 2


async def test_service_republishes_revocations_recorded_while_redis_was_down(
    aiohttp_client: ClientFactory,
    config: AuthConfig,
    store: AccountStore,
    redis_server: str,
    redis_client: aioredis.Redis,
) -> None:
    user = add_user(config, store, "mia@example.com")
    key = f"revoked:sub:user:{user.id}"
    await redis_client.delete(key)
    config.revocation_sync_seconds = 1
    await aiohttp_client(create_app(with_redis(config, redis_server)))
    # Recorded in SQLite only, as when the console could not reach Redis.
    revocation = store.disable_user("mia@example.com")
    # The sync runs every second here; allow a few rounds.
    assert revoked_time(await poll_key(redis_client, key, attempts=50)) == revocation.revoked_at
