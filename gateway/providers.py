"""`GET /v1/providers`: every capability's providers, gathered from the services that own them."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from common.internal_auth import internal_headers

# Public capability name -> the service that owns its providers.
CAPABILITIES = {"geocoding": "geo_service", "routing": "route_service"}
PROVIDERS_PATH = "/internal/providers"


async def _fetch(session: aiohttp.ClientSession, url: str | None, headers: dict[str, str]) -> dict[str, Any]:
    if not url:
        return {"available": False, "reason": "not deployed"}
    try:
        async with session.get(url + PROVIDERS_PATH, headers=headers, timeout=aiohttp.ClientTimeout(total=3)) as resp:
            if resp.status != 200:
                return {"available": False, "reason": f"the service answered {resp.status}"}
            body: dict[str, Any] = orjson.loads(await resp.read())
    except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError):
        return {"available": False, "reason": "the service is unreachable"}
    return {"available": True, **body}


async def gather_providers(
    session: aiohttp.ClientSession, upstreams: dict[str, str], request_id: str, internal_token: str = ""
) -> dict[str, Any]:
    names = list(CAPABILITIES)
    headers = {"X-Request-ID": request_id, **internal_headers(internal_token)}
    answers = await asyncio.gather(*(_fetch(session, upstreams.get(CAPABILITIES[n]), headers) for n in names))
    return dict(zip(names, answers, strict=True))
