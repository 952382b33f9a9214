"""Redis access that never takes a request down with it.

Every call goes through `ResilientRedis.call`. A connection error is first taken for a
stale pooled connection (Redis restarted since it was opened): the pool's idle connections
are dropped and the call is tried once more on a fresh one, so a restart costs nothing. Only
when that fails too does an outage begin: it is logged once, every call answers its fallback
at once (no request waits for a connect timeout), and a background probe pings Redis every
`probe_interval` seconds; the first answer ends the outage (logged once, with its duration),
so rate limits and revocation checks apply again within about half a second.

The platform runs two Redis roles (docs/decisions.md): "state" (`REDIS_URL`: rate limits,
revocations; never evicted) and "cache" (`REDIS_CACHE_URL`: route and geocoder answers;
least recently used evicted at its memory cap). Each has its own `ResilientRedis`.

GETs and SETs issued in the same event-loop turn go out together (one MGET, one pipeline of
SETs): each redis-py command costs ~50-70 µs of CPU, a batched key ~10-30 µs (measured),
and under load many requests reach their cache lookup in the same turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import redis.asyncio as aioredis
from prometheus_client import Counter, Gauge
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError, OutOfMemoryError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.maint_notifications import MaintNotificationsConfig

from common.errors import ServiceUnavailable

log = logging.getLogger("common.redis")
T = TypeVar("T")

REDIS_AVAILABLE = Gauge("redis_available", "1 while Redis answers this process, 0 during an outage", ["role"])
REDIS_OUTAGES = Counter("redis_outages_total", "Redis outages this process went through", ["role"])

# A refused or reset connection: worth one more try on a fresh connection. A timeout is not
# retried (Redis is slow or unreachable; a second wait would only double the delay).
RECONNECTABLE_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, ConnectionError)
# What makes Redis unusable, as opposed to one command it refused (e.g. OOM at the cap).
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)
COMMAND_ERROR_LOG_SECONDS = 60.0
# Connections one process may hold. redis-py 8 caps its pool at 100 by default and raises beyond
# that: a burst of concurrent requests then failed like an outage. Past this cap a call answers
# its fallback (logged, not an outage).
MAX_CONNECTIONS = 512
# Retry-After of a request refused because the state Redis is full (its keys expire within seconds).
FULL_RETRY_AFTER_SECONDS = 5


def redacted(url: str) -> str:
    """The URL without user and password, for logs, /health and messages: everything between
    `//` and the last `@` (a password written without escaping may hold `@` or `/`; cutting
    too much is safe, leaving a piece of the password is not)."""
    scheme, slashes, rest = url.partition("//")
    at = rest.rfind("@")
    if not slashes or at < 0:
        return url
    return f"{scheme}//***@{rest[at + 1 :]}"


def full(exc: RedisError) -> bool:
    """Redis refused a write at its memory cap (noeviction), for a command or inside a script
    (whose error carries the command's as text)."""
    return isinstance(exc, OutOfMemoryError) or "OOM command not allowed" in str(exc)


class ResilientRedis:
    def __init__(self, url: str, *, role: str = "state", timeout: float = 0.25, probe_interval: float = 0.5) -> None:
        self.url = url
        self.role = role
        self.probe_interval = probe_interval
        self.client: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            health_check_interval=0,
            max_connections=MAX_CONNECTIONS,
            # Retrying (and its back-off) is ours, so it is the same in every redis-py version.
            retry=Retry(NoBackoff(), 0),
            # A bare connect: no CLIENT SETINFO, no maintenance-notification handshake (a cloud
            # feature). Opening 200 connections at once took 0.15 s instead of 0.24-0.31 s
            # (measured), which matters when a burst or a recovery opens many within the timeout.
            driver_info=None,
            maint_notifications_config=MaintNotificationsConfig(enabled=False),
        )
        self._outage_started: float | None = None
        self._probe: asyncio.Task[None] | None = None
        self._command_error_logged_at = -COMMAND_ERROR_LOG_SECONDS
        self._gets: dict[str, list[asyncio.Future[bytes | None]]] = {}
        self._sets: list[tuple[str, bytes, int, asyncio.Future[bool] | None]] = []
        self._flushes: set[asyncio.Task[None]] = set()
        REDIS_AVAILABLE.labels(role).set(1)
        REDIS_OUTAGES.labels(role)  # exported as 0 from the start, not only after a first outage

    @property
    def available(self) -> bool:
        return self._outage_started is None

    @property
    def outage_seconds(self) -> float:
        """How long the current outage has lasted (0 when Redis answers)."""
        return 0.0 if self._outage_started is None else time.monotonic() - self._outage_started

    async def call(
        self, operation: Callable[[aioredis.Redis], Awaitable[T]], fallback: T, *, refuse_when_full: bool = False
    ) -> T:
        """The operation's answer, else `fallback`. `refuse_when_full`: a Redis that refuses the
        write at its memory cap raises a 503 instead (a limit must not fail open because the
        store is full: issue 55), while an unreachable one still answers the fallback."""
        if self._outage_started is not None:
            return fallback
        return await self._attempt(operation, fallback, refuse_when_full)

    async def _attempt(
        self, operation: Callable[[aioredis.Redis], Awaitable[T]], fallback: T, refuse_when_full: bool = False
    ) -> T:
        try:
            return await self._with_one_reconnect(operation)
        except MaxConnectionsError as exc:  # busy, not down
            self._command_failed(exc)
        except OUTAGE_ERRORS as exc:
            self._start_outage(exc)
        except RedisError as exc:
            self._command_failed(exc)
            if refuse_when_full and full(exc):
                raise ServiceUnavailable(
                    "the limits' store is full, so this request cannot be counted: try again shortly",
                    headers={"Retry-After": str(FULL_RETRY_AFTER_SECONDS)},
                ) from exc
        return fallback

    async def _with_one_reconnect(self, operation: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        try:
            return await operation(self.client)
        except MaxConnectionsError:
            raise
        except RECONNECTABLE_ERRORS:
            # Most likely Redis restarted: every idle pooled connection is as stale as this one
            # was. (A command that reached Redis before the reset runs twice; for a rate limit
            # that is one request counted twice, once per restart.)
            await self._drop_idle_connections()
            return await operation(self.client)

    async def _drop_idle_connections(self) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self.client.connection_pool.disconnect(inuse_connections=False)

    def _start_outage(self, exc: BaseException) -> None:
        if self._outage_started is not None:
            return
        self._outage_started = time.monotonic()
        REDIS_AVAILABLE.labels(self.role).set(0)
        REDIS_OUTAGES.labels(self.role).inc()
        log.error(
            "redis (%s) unreachable, bypassing it until it answers again: %s",
            self.role,
            exc,
            extra={"fields": self._log_fields()},
        )
        if self._probe is None or self._probe.done():
            # A context of its own: the request that met the outage must not lend its id to the
            # probe's log line at the end.
            probe = self._probe_until_back()
            self._probe = asyncio.get_running_loop().create_task(probe, context=contextvars.Context())

    def _end_outage(self) -> None:
        if self._outage_started is None:
            return
        seconds = self.outage_seconds
        self._outage_started = None
        REDIS_AVAILABLE.labels(self.role).set(1)
        log.warning(
            "redis (%s) reachable again after %.1f s down",
            self.role,
            seconds,
            extra={"fields": {**self._log_fields(), "outage_seconds": round(seconds, 3)}},
        )

    async def _probe_until_back(self) -> None:
        # In the background, so no request waits on a probe's connect timeout.
        while self._outage_started is not None:
            await asyncio.sleep(self.probe_interval)
            if self._outage_started is not None:  # a health check may have seen it back meanwhile
                with contextlib.suppress(Exception):  # whatever one probe meets, the next one runs
                    await self.ping()

    def _command_failed(self, exc: RedisError) -> None:
        """Redis refused the command (e.g. OOM at its memory cap) or every connection is busy:
        not an outage, the caller takes its fallback. Logged at most once a minute."""
        now = time.monotonic()
        if now - self._command_error_logged_at >= COMMAND_ERROR_LOG_SECONDS:
            self._command_error_logged_at = now
            log.warning("redis (%s) refused a command: %s", self.role, exc, extra={"fields": self._log_fields()})

    def _log_fields(self) -> dict[str, str]:
        return {"redis": redacted(self.url), "redis_role": self.role}

    async def get(self, key: str) -> bytes | None:
        future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        if not self._gets:
            self._start_flush(self._flush_gets)
        self._gets.setdefault(key, []).append(future)
        return await future

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> bool:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queue_set(key, value, ttl_seconds, future)
        return await future

    def set_behind(self, key: str, value: bytes, ttl_seconds: int) -> None:
        """Stores without waiting for Redis (a cache fill must not delay the answer)."""
        self._queue_set(key, value, ttl_seconds, None)

    def _queue_set(self, key: str, value: bytes, ttl: int, future: asyncio.Future[bool] | None) -> None:
        if not self._sets:
            self._start_flush(self._flush_sets)
        self._sets.append((key, value, max(1, ttl), future))

    def _start_flush(self, flush: Callable[[], Coroutine[Any, Any, None]]) -> None:
        # Scheduled, not run: the requests of this loop turn join the batch first.
        task = asyncio.get_running_loop().create_task(flush())
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _flush_gets(self) -> None:
        batch, self._gets = self._gets, {}
        keys = list(batch)

        async def op(r: aioredis.Redis) -> list[Any]:
            return list(await r.mget(keys))

        values: list[Any] = [None] * len(keys)
        try:
            values = await self.call(op, values)
        finally:  # whatever happened, no caller is left waiting: a miss is always a safe answer
            for key, value in zip(keys, values, strict=True):
                found = value if isinstance(value, bytes) or value is None else str(value).encode()
                for future in batch[key]:
                    if not future.done():
                        future.set_result(found)

    async def _flush_sets(self) -> None:
        batch, self._sets = self._sets, []

        async def op(r: aioredis.Redis) -> bool:
            async with r.pipeline(transaction=False) as pipe:
                for key, value, ttl, _ in batch:
                    pipe.set(key, value, ex=ttl)
                return all(await pipe.execute())

        stored = False
        try:
            stored = await self.call(op, False)
        finally:
            for *_, future in batch:
                if future is not None and not future.done():
                    future.set_result(stored)

    async def ping(self) -> bool:
        """Asks Redis now, even during an outage (the health check and the probe use it); the
        answer starts or ends an outage like any other call."""
        answered = bool(await self._attempt(lambda client: client.ping(), False))
        if answered:
            self._end_outage()
        return answered

    async def close(self) -> None:
        await asyncio.gather(*self._flushes, return_exceptions=True)  # the writes behind land first
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
        await self.client.aclose()

    def info(self) -> dict[str, Any]:
        return {
            "url": redacted(self.url),
            "role": self.role,
            "available": self.available,
            "outage_seconds": round(self.outage_seconds, 3),
        }
