"""`GET /v1/providers`: every capability's providers, gathered from the services that own them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from common.client import ServiceClient
from common.errors import ApiError

# Public capability name -> the service that owns its providers.
CAPABILITIES = {"geocoding": "geo_service", "routing": "route_service"}
PROVIDERS_PATH = "/internal/providers"
PROVIDERS_TIMEOUT_SECONDS = 3.0


async def providers_of(client: ServiceClient | None) -> dict[str, Any]:
    """One service's providers; what is missing is said, never raised: the others still answer."""
    if client is None:
        return {"available": False, "reason": "not deployed"}
    try:
        reply = await client.call("GET", PROVIDERS_PATH, timeout_seconds=PROVIDERS_TIMEOUT_SECONDS)
        if reply.status != 200:
            return {"available": False, "reason": f"the service answered {reply.status}"}
        body: dict[str, Any] = client.parsed(reply)
    except ApiError:
        return {"available": False, "reason": "the service is unreachable"}
    return {"available": True, **body}


async def gather_providers(services: Mapping[str, ServiceClient]) -> dict[str, Any]:
    names = list(CAPABILITIES)
    answers = await asyncio.gather(*(providers_of(services.get(CAPABILITIES[n])) for n in names))
    return dict(zip(names, answers, strict=True))
