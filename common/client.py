"""Service-to-service HTTP: one pooled session, request-id propagation, typed errors.

Every JSON call one of our processes makes to another goes through `ServiceClient`: it sends
the internal credential and the request id, asks for errors in the internal format, and turns
what comes back into typed `ApiError`s (504 too slow, 503 unreachable, 502 a broken answer, the
service's own error carried through).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import aiohttp.abc
import orjson
from multidict import CIMultiDict

from common.errors import (
    ApiError,
    BadGateway,
    GatewayTimeout,
    InternalCredentialRequired,
    ServiceUnavailable,
)
from common.internal_auth import internal_headers
from common.logging import request_id_var
from common.problems import INTERNAL_ERRORS_HEADER, read_internal_body

log = logging.getLogger("common.client")

# Seconds a service name's addresses stay cached. aiohttp hands out a cached name's addresses
# in turn (its DNS cache rotates them), so new connections spread over the replicas of a
# scaled service (`docker compose up --scale route_service=3`: one name, one address each);
# a short time lets a replica added or removed be seen within seconds, not 5 minutes.
UPSTREAM_DNS_TTL_SECONDS = 10


def upstream_connector(limit: int, resolver: aiohttp.abc.AbstractResolver | None = None) -> aiohttp.TCPConnector:
    """The connection pool for calls to our services: `limit` connections at once."""
    return aiohttp.TCPConnector(limit=limit, ttl_dns_cache=UPSTREAM_DNS_TTL_SECONDS, resolver=resolver)


class ArrivalQueue:
    """At most `limit` calls in flight at once; the others wait their turn in arrival order.

    Why: a service's workers share its port (SO_REUSEPORT) and each keep-alive connection stays
    on the worker the kernel gave it, so with every request sent at once a worker holds however
    many happen to land on it, and serves them in no fair order (its loop interleaves their Redis
    round trips and computations). Measured on `/v1/route`, 32 clients, 2 route workers: p99 2.1
    to 2.5x p50 (medians of alternating rounds), single rounds up to 4.6x, worst when the
    connections split 11/21. Held back here, in a FIFO queue, the work reaches a worker when one
    of its calls ends: p99 1.6-1.7x p50 with 8 places (bench/route_http.py's variants). Only for
    light, short calls: a slow one holding a place would make the others wait behind it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._places = asyncio.Semaphore(limit)  # FIFO: waiters are woken in arrival order

    @contextlib.asynccontextmanager
    async def place(self, timeout_seconds: float, service: str) -> AsyncIterator[None]:
        """Waits for a place (504 past `timeout_seconds`, as a call that slow would be), holds it
        while the body runs."""
        try:
            async with asyncio.timeout(timeout_seconds):
                await self._places.acquire()
        except TimeoutError as exc:
            raise GatewayTimeout(f"the {service} did not answer in time") from exc
        try:
            yield
        finally:
            self._places.release()


@dataclass(frozen=True)
class Reply:
    """A service's answer, whatever its status."""

    status: int
    body: bytes
    # Case-insensitive, as HTTP headers are (Content-Type, Retry-After).
    headers: Mapping[str, str] = field(default_factory=CIMultiDict)


class ServiceClient:
    """Calls one of our services and turns its errors back into typed `ApiError`s."""

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        timeout: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        internal_token: str = "",
        queue_limit: int = 0,
    ) -> None:
        """`queue_limit`: calls `queued()` lets through at once (0: no limit)."""
        self.name = name
        self.internal_token = internal_token
        self.base_url = base_url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session
        self._owns_session = session is None
        self.queue = ArrivalQueue(queue_limit) if queue_limit > 0 else None

    def queued(self, queued: bool, timeout_seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        """A place in the client's arrival queue for a `queued` (light) call; else nothing to wait for."""
        if not queued or self.queue is None:
            return contextlib.nullcontext()
        return self.queue.place(timeout_seconds, self.name)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=upstream_connector(256),
                json_serialize=lambda obj: orjson.dumps(obj).decode(),
            )
        return self._session

    def headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/json",
            INTERNAL_ERRORS_HEADER: "full",
            **internal_headers(self.internal_token),
        }
        request_id = request_id_var.get()
        if request_id:
            headers["X-Request-ID"] = request_id
        return headers

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json: Any = None,
        timeout_seconds: float | None = None,
        body: bytes | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """One request, answered with any status. Raises only when there is no answer: 504 past
        the timeout (the client's own unless `timeout_seconds` is given), 503 when the service
        cannot be reached, 502 when its answer cannot be read. `body` sends bytes as they are
        (their Content-Type among `extra_headers`): a stored request replayed (job_service)."""
        data = orjson.dumps(json) if json is not None else body
        headers = self.headers()
        if json is not None:
            headers["Content-Type"] = "application/json"
        headers.update(extra_headers or {})
        limit = self.timeout if timeout_seconds is None else aiohttp.ClientTimeout(total=timeout_seconds)
        try:
            async with self.session.request(
                method, self.base_url + path, params=params, data=data, headers=headers, timeout=limit
            ) as resp:
                return Reply(resp.status, await resp.read(), CIMultiDict(resp.headers))
        except TimeoutError as exc:
            raise GatewayTimeout(f"the {self.name} did not answer in time") from exc
        except aiohttp.ClientConnectionError as exc:
            raise ServiceUnavailable(f"the {self.name} is unavailable") from exc
        except aiohttp.ClientError as exc:
            raise BadGateway(f"the {self.name}'s answer could not be read") from exc

    def parsed(self, reply: Reply) -> Any:
        """The answer's JSON (None for an empty body); 502 when it is not JSON."""
        try:
            return orjson.loads(reply.body) if reply.body else None
        except orjson.JSONDecodeError as exc:
            raise BadGateway(f"the {self.name} answered something that is not JSON") from exc

    async def request_json(
        self, method: str, path: str, *, params: dict[str, str] | None = None, json: Any = None
    ) -> Any:
        """The answer's JSON; the service's error as a typed `ApiError`."""
        reply = await self.call(method, path, params=params, json=json)
        parsed = self.parsed(reply)
        if reply.status >= 400:
            raise self.upstream_error(reply.status, parsed)
        return parsed

    def upstream_error(self, status: int, parsed: Any) -> ApiError:
        if not isinstance(parsed, dict) or "violations" not in parsed:
            return BadGateway(f"the {self.name} failed with status {status}")
        if parsed.get("code") == InternalCredentialRequired.code:
            # Our configuration is wrong (the secrets differ), not the caller's request: a 502
            # for them, never a 401 that would send them to check their own token.
            log.error("the %s refused our internal credential: is INTERNAL_TOKEN the same everywhere?", self.name)
            return BadGateway(f"the {self.name} refused the call")
        return read_internal_body(parsed)

    async def get_json(self, path: str, params: dict[str, str] | None = None) -> Any:
        return await self.request_json("GET", path, params=params)

    async def post_json(self, path: str, json: Any) -> Any:
        return await self.request_json("POST", path, json=json)

    async def close(self) -> None:
        if self._session is not None and self._owns_session:
            await self._session.close()
