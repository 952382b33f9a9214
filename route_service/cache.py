"""Route answers cached in Redis, keyed by the normalized query, provider and dataset.

A new import changes the dataset hash and therefore every key, so nothing is ever
invalidated by hand. ResilientRedis answers None/False when Redis is down: the service
then computes every answer itself and stays correct.
"""

from __future__ import annotations

import hashlib

from common.redis import ResilientRedis
from route_service.model import RouteQuery

KEY_PREFIX = "route:v1:"


def cache_key(query: RouteQuery, provider: str, dataset: str) -> str:
    # 6 decimals (~0.1 m): closer points are the same request for every practical purpose.
    parts = (
        f"{query.origin.lat:.6f},{query.origin.lon:.6f}",
        f"{query.destination.lat:.6f},{query.destination.lon:.6f}",
        query.vehicle,
        query.route_type,
        str(query.alternatives),
        str(query.emergency_radius_m),
        str(query.steps),
        repr(query.restrictions),  # avoid polygons and truck dimensions, in full: hashed below
        query.wording.language,
        query.wording.units,
        provider,
        dataset,
    )
    return KEY_PREFIX + hashlib.sha256("|".join(parts).encode()).hexdigest()


class RouteCache:
    def __init__(self, redis: ResilientRedis, ttl_seconds: int) -> None:
        self.redis = redis
        self.ttl_seconds = ttl_seconds

    async def get(self, key: str) -> bytes | None:
        if self.ttl_seconds <= 0:
            return None
        return await self.redis.get(key)

    def put(self, key: str, body: bytes) -> None:
        """Written behind the answer: the client never waits for the cache fill."""
        if self.ttl_seconds > 0:
            self.redis.set_behind(key, body, self.ttl_seconds)
