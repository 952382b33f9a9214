"""ResilientRedis against a real Redis: batched GETs/SETs answer exactly what single commands
would, writes behind land, and an unreachable Redis answers misses without waiting."""

from __future__ import annotations

import asyncio
import time
import uuid

import redis.asyncio as aioredis

from common.redis import ResilientRedis
from launcher.redis_server import free_port


def fresh_key() -> str:
    return "test:" + uuid.uuid4().hex


async def test_gets_of_one_loop_turn_go_out_as_one_mget(redis_server: str) -> None:
    store = ResilientRedis(redis_server)
    keys = [fresh_key() for _ in range(5)]
    for index, key in enumerate(keys[:3]):
        assert await store.set(key, b"value-%d" % index, 60)
    commands: list[tuple[object, ...]] = []
    original = store.client.execute_command

    async def counting(*args: object, **options: object) -> object:
        commands.append(args)
        return await original(*args, **options)

    store.client.execute_command = counting  # type: ignore[method-assign]
    try:
        # keys[0] twice: both callers get the value from the one lookup.
        got = await asyncio.gather(*(store.get(k) for k in [*keys, keys[0]]))
    finally:
        await store.close()
    assert got == [b"value-0", b"value-1", b"value-2", None, None, b"value-0"]
    assert [c[0] for c in commands] == ["MGET"]


async def test_sets_in_one_turn_are_one_pipeline_and_all_stored(redis_server: str) -> None:
    store = ResilientRedis(redis_server)
    keys = [fresh_key() for _ in range(20)]
    try:
        stored = await asyncio.gather(*(store.set(k, k.encode(), 60) for k in keys))
        assert all(stored)
        assert await asyncio.gather(*(store.get(k) for k in keys)) == [k.encode() for k in keys]
        ttl = await store.client.ttl(keys[0])
        assert 0 < ttl <= 60
    finally:
        await store.close()


async def test_writes_behind_land_before_close_returns(redis_server: str) -> None:
    store = ResilientRedis(redis_server)
    keys = [fresh_key() for _ in range(10)]
    for key in keys:
        store.set_behind(key, b"x", 60)
    await store.close()  # must wait for the pending pipeline
    check = aioredis.Redis.from_url(redis_server)
    try:
        assert await check.mget(keys) == [b"x"] * len(keys)
    finally:
        await check.aclose()


async def test_unreachable_redis_answers_misses_and_is_not_asked_again_per_call() -> None:
    store = ResilientRedis(f"redis://127.0.0.1:{free_port()}/0", probe_interval=30.0)
    try:
        assert await asyncio.gather(store.get("a"), store.get("b")) == [None, None]
        assert await store.set("a", b"1", 60) is False
        started = time.perf_counter()
        assert await store.get("a") is None  # during the outage: only the probe asks Redis
        assert time.perf_counter() - started < 0.01
        assert not store.available
    finally:
        await store.close()
