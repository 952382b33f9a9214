"""Service-to-service HTTP: one pooled session, request-id propagation, typed errors."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import orjson

from common.errors import (
    INTERNAL_ERRORS_HEADER,
    ApiError,
    BadGateway,
    GatewayTimeout,
    InternalCredentialRequired,
    ServiceUnavailable,
    UpstreamError,
)
from common.internal_auth import internal_headers
from common.logging import request_id_var

log = logging.getLogger("common.client")


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
    ) -> None:
        self.name = name
        self.internal_token = internal_token
        self.base_url = base_url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session
        self._owns_session = session is None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=256, ttl_dns_cache=300),
                json_serialize=lambda obj: orjson.dumps(obj).decode(),
            )
        return self._session

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", INTERNAL_ERRORS_HEADER: "full", **internal_headers(self.internal_token)}
        request_id = request_id_var.get()
        if request_id:
            headers["X-Request-ID"] = request_id
        return headers

    async def request_json(
        self, method: str, path: str, *, params: dict[str, str] | None = None, json: Any = None
    ) -> Any:
        url = self.base_url + path
        data = orjson.dumps(json) if json is not None else None
        headers = self.headers()
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with self.session.request(
                method, url, params=params, data=data, headers=headers, timeout=self.timeout
            ) as resp:
                body = await resp.read()
                status = resp.status
        except TimeoutError as exc:
            raise GatewayTimeout(f"the {self.name} did not answer in time") from exc
        except aiohttp.ClientConnectionError as exc:
            raise ServiceUnavailable(f"the {self.name} is unavailable") from exc
        try:
            parsed = orjson.loads(body) if body else None
        except orjson.JSONDecodeError as exc:
            raise BadGateway(f"the {self.name} answered something that is not JSON") from exc
        if status >= 400:
            raise self.upstream_error(status, parsed)
        return parsed

    def upstream_error(self, status: int, parsed: Any) -> ApiError:
        if not isinstance(parsed, dict) or "violations" not in parsed:
            return BadGateway(f"the {self.name} failed with status {status}")
        if parsed.get("code") == InternalCredentialRequired.code:
            # Our configuration is wrong (the secrets differ), not the caller's request: a 502
            # for them, never a 401 that would send them to check their own token.
            log.error("the %s refused our internal credential: is INTERNAL_TOKEN the same everywhere?", self.name)
            return BadGateway(f"the {self.name} refused the call")
        return UpstreamError.from_internal_body(parsed)

    async def get_json(self, path: str, params: dict[str, str] | None = None) -> Any:
        return await self.request_json("GET", path, params=params)

    async def post_json(self, path: str, json: Any) -> Any:
        return await self.request_json("POST", path, json=json)

    async def close(self) -> None:
        if self._session is not None and self._owns_session:
            await self._session.close()
