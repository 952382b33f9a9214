"""ResilientRedis against a real Redis: batched GETs/SETs answer exactly what single commands
would, writes behind land, and an unreachable Redis answers misses without waiting."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from aiohttp import web
from aiohttp.test_utils import TestClient

from common.config import BaseConfig
from common.redis import ResilientRedis, redacted
from common.service import base_app
from launcher.redis_server import free_port

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]


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


def test_the_test_redis_requires_the_password_in_its_url(redis_server: str) -> None:
    """Every test against `redis_server` (tests/conftest.py) runs on an authenticated Redis."""
    parts = urllib.parse.urlsplit(redis_server)
    assert parts.password
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=2) as connection:
        connection.sendall(b"GET anything\r\n")
        assert connection.recv(200).startswith(b"-NOAUTH")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:pw-1@127.0.0.1:6390/0", "redis://***@127.0.0.1:6390/0"),
        ("redis://default:pw-1@redis:6379/0", "redis://***@redis:6379/0"),
        ("redis://:pw@1/2@redis:6379/0", "redis://***@redis:6379/0"),  # unescaped: no piece stays
        ("redis://127.0.0.1:6390/0", "redis://127.0.0.1:6390/0"),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted(url) == shown


async def test_a_wrong_password_is_an_outage_whose_log_health_and_info_hold_no_password(
    redis_server: str, caplog: pytest.LogCaptureFixture, aiohttp_client: ClientFactory
) -> None:
    wrong = redis_server.replace(urllib.parse.urlsplit(redis_server).password or "", "wrong-pw-3f9a")
    config = BaseConfig(service="test", redis_url=wrong, redis_cache_url=wrong)
    assert "wrong-pw-3f9a" not in repr(config)
    client = await aiohttp_client(base_app(config, with_cache=True))
    with caplog.at_level(logging.INFO, logger="common.redis"):
        answer = await client.get("/health")
        body = await answer.text()
    assert answer.status == 200 and '"redis":"down"' in body.replace(" ", "")
    seen = [body, caplog.text, *(str(r.__dict__) for r in caplog.records)]
    assert "redis (state) unreachable" in caplog.text
    assert not [text for text in seen if "wrong-pw-3f9a" in text]
