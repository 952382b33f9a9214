"""The services behind the gateway: one `ServiceClient` each, and how healthy each one is."""

from __future__ import annotations

from typing import Any

import aiohttp

from common.client import ServiceClient
from common.errors import ApiError
from gateway.config import GatewayConfig

# How each service is named in the errors a client reads ("the routing service is unavailable").
SERVICE_LABELS = {
    "auth_service": "authentication service",
    "geo_service": "geocoding service",
    "route_service": "routing service",
    "optimize_service": "optimization service",
    "job_service": "job service",
}
# The gateway's health answers within a few seconds even when a service hangs.
HEALTH_TIMEOUT_SECONDS = 2.0


def label(service: str) -> str:
    return SERVICE_LABELS.get(service, service)


def service_clients(config: GatewayConfig, session: aiohttp.ClientSession) -> dict[str, ServiceClient]:
    """The deployed services (those with a URL), sharing the gateway's connection pool."""
    return {
        name: ServiceClient(
            label(name),
            url,
            timeout=config.upstream_timeout_seconds,
            session=session,
            internal_token=config.internal_token,
            queue_limit=config.queued_concurrency,
        )
        for name, url in config.upstreams.items()
    }


async def service_health(client: ServiceClient) -> dict[str, Any]:
    try:
        reply = await client.call("GET", "/health", timeout_seconds=HEALTH_TIMEOUT_SECONDS)
    except ApiError:
        return {"status": "down"}
    return {"status": "up" if reply.status == 200 else "unready", "httpStatus": reply.status}
