"""ResilientRedis through Redis restarts and outages, against real redis-server processes
killed (SIGKILL) and started again on the same port: a restart costs no call its answer, an
outage is logged once at each end, calls never wait during it, and it ends within a second of
Redis accepting connections again."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from prometheus_client import REGISTRY

from common.logging import JsonFormatter, request_id_var
from common.redis import ResilientRedis
from launcher.redis_server import free_port, redis_url, start_redis

pytestmark = pytest.mark.timeout(60)

POOLED_CONNECTIONS = 20


@dataclass
class RestartableRedis:
    port: int
    work_dir: Path
    process: subprocess.Popen[bytes] | None = None
    password: str = "outage-test-password"

    @property
    def url(self) -> str:
        return redis_url(self.port, self.password)

    def start(self) -> None:
        """Returns once the new server accepts connections."""
        self.process = start_redis(self.port, self.work_dir, password=self.password, persist=False)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)

    def restart(self) -> None:
        self.kill()
        self.start()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RestartableRedis]:
    redis = RestartableRedis(free_port(), tmp_path / "redis")
    redis.start()
    try:
        yield redis
    finally:
        redis.kill()


@pytest.fixture
async def store(server: RestartableRedis) -> AsyncIterator[ResilientRedis]:
    # A role of its own per test, so the metrics seen are this test's.
    client = ResilientRedis(server.url, role="test-" + uuid.uuid4().hex[:8])
    try:
        yield client
    finally:
        await client.close()


def outages(store: ResilientRedis) -> float | None:
    return REGISTRY.get_sample_value("redis_outages_total", {"role": store.role})


def available_gauge(store: ResilientRedis) -> float | None:
    return REGISTRY.get_sample_value("redis_available", {"role": store.role})


def redis_lines(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "common.redis" and text in r.getMessage()]


async def fill_pool(store: ResilientRedis) -> None:
    """Leaves POOLED_CONNECTIONS open connections idle in the pool (each call holds its own
    connection for 50 ms, so none is reused)."""

    async def hold_a_connection(client: aioredis.Redis) -> bool:
        await client.blpop(["nothing-" + uuid.uuid4().hex], timeout=0.05)
        return True

    assert all(await asyncio.gather(*(store.call(hold_a_connection, False) for _ in range(POOLED_CONNECTIONS))))
    assert len(store.client.connection_pool._available_connections) == POOLED_CONNECTIONS


async def incr(store: ResilientRedis, key: str) -> int | None:
    async def op(client: aioredis.Redis) -> int:
        return int(await client.incr(key))

    return await store.call(op, None)


async def test_after_a_restart_the_next_calls_succeed_on_fresh_connections_without_an_outage(
    server: RestartableRedis, store: ResilientRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="common.redis")
    await fill_pool(store)
    server.restart()  # every pooled connection now points at the dead server

    # Each of these picks a stale connection first (no traffic reached the pool since the restart).
    answers = await asyncio.gather(*(incr(store, "counter") for _ in range(POOLED_CONNECTIONS)))

    assert sorted(a for a in answers if a is not None) == list(range(1, POOLED_CONNECTIONS + 1))
    assert store.available
    assert outages(store) == 0
    assert available_gauge(store) == 1
    assert redis_lines(caplog, "unreachable") == []


async def test_an_outage_logs_one_down_and_one_up_line_and_calls_skip_redis_until_the_probe_sees_it_back(
    server: RestartableRedis, store: ResilientRedis, caplog: pytest.LogCaptureFixture
) -> None:
    """Counted, not timed: during the outage no call reaches Redis (the operation never runs, so
    none can wait on a connect), and the background probe's "reachable again" ends it."""
    caplog.set_level(logging.INFO, logger="common.redis")
    await fill_pool(store)  # stale connections left over for after the restart, too
    server.kill()
    assert await incr(store, "counter") is None  # the call that meets the outage
    reached = 0

    async def counted(client: aioredis.Redis) -> int:
        nonlocal reached
        reached += 1
        return int(await client.incr("counter"))

    for _ in range(40):  # ~1.2 s of traffic while Redis is down
        answers = await asyncio.gather(*(store.call(counted, None) for _ in range(10)), store.get("some-key"))
        assert answers == [None] * 11
        await asyncio.sleep(0.03)
    assert reached == 0, "calls went to Redis during the outage"
    assert not store.available
    assert available_gauge(store) == 0

    server.start()
    deadline = time.monotonic() + 30  # a guard against a hang, not a speed goal
    while not redis_lines(caplog, "reachable again"):
        assert time.monotonic() < deadline, "the probe never saw Redis back"
        await asyncio.sleep(0.01)
    first = await incr(store, "counter")
    # Traffic goes on after the recovery; the leftover stale connections must not start a new outage.
    answers = await asyncio.gather(*(incr(store, "counter") for _ in range(POOLED_CONNECTIONS)))

    assert first is not None, "the first call after the probe saw Redis back skipped it"
    assert None not in answers
    assert outages(store) == 1
    assert available_gauge(store) == 1
    down, up = redis_lines(caplog, "unreachable"), redis_lines(caplog, "reachable again")
    assert len(down) == 1 and len(up) == 1
    assert down[0].levelno == logging.ERROR
    assert up[0].fields["outage_seconds"] >= 40 * 0.03  # type: ignore[attr-defined]  # it spans the traffic


class JsonLines(logging.Handler):
    """The lines as the services write them, formatted when logged (in the logging task's context)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter("test"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


async def test_the_end_of_an_outage_is_seen_without_any_traffic(
    server: RestartableRedis, store: ResilientRedis
) -> None:
    lines = JsonLines()
    logging.getLogger("common.redis").addHandler(lines)
    try:
        server.kill()
        request_id_var.set("the-request-that-met-the-outage")
        assert await store.get("key") is None
        assert not store.available

        server.start()
        deadline = time.monotonic() + 30  # nobody calls: the background probe finds it (a hang guard)
        while not store.available:
            assert time.monotonic() < deadline, "the probe never saw Redis back"
            await asyncio.sleep(0.01)
    finally:
        logging.getLogger("common.redis").removeHandler(lines)

    assert store.available
    assert store.info()["outage_seconds"] == 0
    down, up = (json.loads(line) for line in lines.lines)
    assert "unreachable" in down["msg"] and down["request_id"] == "the-request-that-met-the-outage"
    assert "reachable again" in up["msg"] and "request_id" not in up  # the probe's, not the request's


async def test_during_an_outage_redis_is_probed_about_twice_a_second_not_per_call() -> None:
    """A listener that accepts and hangs up at once stands in for a broken Redis, and counts the
    connections the client opens: the calls themselves must not reach it."""
    accepted = 0

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        writer.close()

    listener = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    store = ResilientRedis(f"redis://127.0.0.1:{port}/0", role="test-" + uuid.uuid4().hex[:8])
    try:
        assert await store.get("key") is None  # the call that starts the outage: two attempts
        started = time.monotonic()
        while time.monotonic() - started < 2.0:
            await asyncio.gather(*(store.get(f"key-{n}") for n in range(20)))
            await asyncio.sleep(0.005)
    finally:
        await store.close()
        listener.close()
        await listener.wait_closed()

    # 2 for the first call, then about 4 probes in 2 s (each may retry once on a fresh connection).
    assert 2 <= accepted <= 2 + 2 * 5, accepted
    assert outages(store) == 1


async def test_more_concurrent_calls_than_pooled_connections_is_not_an_outage(
    server: RestartableRedis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="common.redis")
    monkeypatch.setattr("common.redis.MAX_CONNECTIONS", 4)
    store = ResilientRedis(server.url, role="test-" + uuid.uuid4().hex[:8])

    async def hold_a_connection(client: aioredis.Redis) -> bool:
        await client.blpop(["nothing-" + uuid.uuid4().hex], timeout=0.05)
        return True

    try:
        answers = await asyncio.gather(*(store.call(hold_a_connection, False) for _ in range(10)))
        assert answers.count(True) == 4  # the others answer their fallback at once
        assert store.available
        assert await incr(store, "counter") == 1
    finally:
        await store.close()
    assert outages(store) == 0
    assert redis_lines(caplog, "unreachable") == []
    assert len(redis_lines(caplog, "refused a command")) == 1
