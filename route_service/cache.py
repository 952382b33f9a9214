"""Route answers cached in Redis, keyed by the normalized query, provider and dataset.

A new import changes the dataset hash and therefore every key, so nothing is ever
invalidated by hand. ResilientRedis answers None/False when Redis is down: the service
then computes every answer itself and stays correct.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import orjson

from common.geo import LatLon
from common.redis import ResilientRedis
from route_service.model import RouteQuery

KEY_PREFIX = "route:v2:"


def cache_key(query: RouteQuery, provider: str, dataset: str) -> str:
    """Every field of the query decides the answer (a field added to RouteQuery is in the key
    with nothing to change here), its points to 6 decimals (~0.1 m: closer points are the same
    request for every practical purpose), avoid polygons and truck dimensions in full. orjson
    writes the dataclasses field by field, the same in every process (a set would be refused)."""
    rounded = replace(query, origin=to_micro_degrees(query.origin), destination=to_micro_degrees(query.destination))
    text = orjson.dumps([rounded, provider, dataset], option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS)
    return KEY_PREFIX + hashlib.sha256(text).hexdigest()


def to_micro_degrees(point: LatLon) -> LatLon:
    return LatLon(round(point.lat, 6), round(point.lon, 6))


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
