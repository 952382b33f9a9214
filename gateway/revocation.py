"""Checks the revocation list the auth service publishes in Redis.

Keys: `revoked:sub:<subject>` and `revoked:akid:<api key id>`, each holding the unix time
of the revocation; a token issued at or before that time is refused. Answers are cached
for a few seconds per subject/key, which bounds how long a revoked token still works.
When Redis is unreachable the last known answers stay in force and unknown ones pass
(tokens are short-lived and signed; availability wins) — see docs/decisions.md.
"""

from __future__ import annotations

import time

from redis.asyncio import Redis

from common.redis import ResilientRedis
from gateway.tokens import Identity


class RevocationChecker:
    def __init__(self, redis: ResilientRedis, cache_seconds: float) -> None:
        self.redis = redis
        self.cache_seconds = cache_seconds
        self._cache: dict[tuple[str, str | None], tuple[float, float]] = {}

    async def revoked_since(self, identity: Identity) -> float:
        """The latest revocation time of the token's subject or API key (0 when none)."""
        cache_key = (identity.subject, identity.api_key_id)
        now = time.monotonic()
        cached = self._cache.get(cache_key)
        if cached is not None and cached[0] > now:
            return cached[1]
        keys = [f"revoked:sub:{identity.subject}"]
        if identity.api_key_id:
            keys.append(f"revoked:akid:{identity.api_key_id}")

        async def fetch(r: Redis) -> list[bytes | str | None] | None:
            return list(await r.mget(keys))

        values = await self.redis.call(fetch, None)
        if values is None:
            # Redis unreachable: keep what we knew, re-ask soon.
            return cached[1] if cached is not None else 0.0
        latest = max((float(v) for v in values if v is not None), default=0.0)
        self._cache[cache_key] = (now + self.cache_seconds, latest)
        if len(self._cache) > 100_000:
            self._cache.clear()
        return latest

    async def is_revoked(self, identity: Identity) -> bool:
        revoked_at = await self.revoked_since(identity)
        return revoked_at > 0 and identity.issued_at <= revoked_at
