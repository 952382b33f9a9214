"""Publishing revocations to Redis, where the gateway checks every token against them.

Keys (read by the gateway):
  revoked:sub:<sub>   = unix time; tokens of that subject with iat <= it are revoked
  revoked:akid:<akid> = unix time; tokens issued via that API key with iat <= it are revoked
The accounts database's `revocations` table is the source of truth; Redis is re-filled from it, so a
revocation made while Redis was down reaches the gateway once Redis is back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from auth_service.accounts import AccountStore, Revocation, now_seconds
from auth_service.config import MAX_TOKEN_SECONDS

# A revocation matters while a token issued before it can still be valid (at most 30 days),
# plus a minute for clock skew.
REVOCATION_TTL_SECONDS = MAX_TOKEN_SECONDS + 60


def remaining_ttl(revocation: Revocation, now: int) -> int:
    return revocation.revoked_at + REVOCATION_TTL_SECONDS - now


async def publish_revocations(client: aioredis.Redis, revocations: Iterable[Revocation], now: int | None = None) -> int:
    """Writes each still-relevant revocation to Redis; returns how many. Raises on Redis errors."""
    now = now if now is not None else now_seconds()
    live = [r for r in revocations if remaining_ttl(r, now) > 0]
    if not live:
        return 0
    async with client.pipeline(transaction=False) as pipe:
        for revocation in live:
            pipe.set(revocation.redis_key, str(revocation.revoked_at), ex=remaining_ttl(revocation, now))
        await pipe.execute()
    return len(live)


def recent_revocations(store: AccountStore, now: int | None = None) -> list[Revocation]:
    now = now if now is not None else now_seconds()
    return store.revocations_since(now - REVOCATION_TTL_SECONDS)


async def _publish_once(redis_url: str, revocations: list[Revocation], socket_timeout: float) -> int:
    client = aioredis.Redis.from_url(redis_url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout)
    try:
        return await publish_revocations(client, revocations)
    finally:
        await client.aclose()


def publish_now(redis_url: str, revocations: list[Revocation], *, timeout: float = 1.0) -> bool:
    """For the console: publishes at once, with a short timeout. False when Redis is unreachable."""
    try:
        asyncio.run(asyncio.wait_for(_publish_once(redis_url, revocations, timeout), timeout * 3))
    except (RedisError, OSError, TimeoutError):
        return False
    return True
