"""Gateway handlers: the proxy for /v1 paths and the aggregated health (the spec and its page:
`gateway.docs`; who may pass: `gateway.admission`)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from common.admission import LARGE_BODY_BYTES
from common.errors import ApiError, MethodNotAllowed, NotFound
from common.internal_auth import shows_internals
from common.service import CONFIG_KEY, REDIS_KEY, json_response
from gateway.admission import apply_rate_limit, authenticate, refused_client
from gateway.cors import options_response
from gateway.providers import gather_providers
from gateway.proxy import forward
from gateway.routes import LOCAL_SERVICE, USAGE_PATH, PublicRoute, as_job, match_route, needs_token, wants_job
from gateway.services import service_health
from gateway.state import GATEWAY_KEY, GatewayState
from gateway.tokens import Identity


def resolve_route(request: web.Request) -> PublicRoute:
    route = match_route(request.path)
    if route is None:
        raise NotFound(f"no operation at {request.path}; see /v1/openapi.json")
    if request.method not in route.methods:
        raise MethodNotAllowed(request.method, list(route.methods))
    return as_job(route) if wants_job(route, request.query) else route


async def local_answer(state: GatewayState, route: PublicRoute, identity: Identity | None) -> web.Response:
    """The operations the gateway answers itself."""
    if route.path == USAGE_PATH and identity is not None:
        return json_response(await account_usage(state, identity))
    return json_response(await gather_providers(state.services))


async def account_usage(state: GatewayState, identity: Identity) -> dict[str, Any]:
    """The caller's tier, its rate limit (this gateway's RATE_LIMITS), its work-unit budget
    (COST_BUDGETS, charged by the services: common.admission) and recent requests."""
    limit = state.rate_limiter.limit_for(identity.tier)
    rate = None if limit.unlimited else {"requestsPerSecond": limit.rate, "burst": limit.burst}
    return {
        "tier": identity.tier,
        "rateLimit": rate,
        "costBudget": state.admission.budgets.for_tier(identity.tier).as_json(),
        "usage": await state.usage.recent(identity.subject),
    }


def answer_options(request: web.Request) -> web.Response:
    """OPTIONS needs no token: a browser's CORS preflight never carries one."""
    route = match_route(request.path)
    if route is None:
        raise NotFound(f"no operation at {request.path}; see /v1/openapi.json")
    request["route_label"] = route.path
    return options_response(request, route.methods)


async def proxy(request: web.Request) -> web.StreamResponse:
    if request.method == "OPTIONS":
        return answer_options(request)
    state = request.app[GATEWAY_KEY]
    # Without a declared length (chunked) a body counts as large, as at admission.
    declared = request.content_length
    large = request.can_read_body and (declared is None or declared >= LARGE_BODY_BYTES)
    try:
        response = await answer(state, request)
    except ApiError as exc:
        await state.pacer.pace(refused_client(state, request), exc.status, large)
        raise
    await state.pacer.pace(refused_client(state, request), response.status, large)
    return response


async def answer(state: GatewayState, request: web.Request) -> web.StreamResponse:
    identity = await authenticate(state, request) if needs_token(request.path) else None
    if identity is not None:
        request["account"] = identity.subject
    route = resolve_route(request)
    request["route_label"] = route.path
    limit_headers = await apply_rate_limit(state, request, route, identity)
    try:
        if route.service != LOCAL_SERVICE:
            # The limit's headers go with the service's answer, which may be streamed as it comes.
            service = state.services.get(route.service)
            return await forward(request, route, service, identity, state.admission, limit_headers)
        response = await local_answer(state, route, identity)
    except ApiError as exc:
        # The request counted against the limit, so its error says so too.
        exc.headers.update(limit_headers)
        raise
    response.headers.update(limit_headers)
    return response


async def health(request: web.Request) -> web.Response:
    """Anyone gets the status (probes read only the code); the services, Redis and the keys
    only a caller holding the internal credential."""
    state = request.app[GATEWAY_KEY]
    names = sorted(state.services)
    results = await asyncio.gather(*(service_health(state.services[n]) for n in names))
    services = dict(zip(names, results, strict=True))
    redis_up = await request.app[REDIS_KEY].ping()
    ready = all(s["status"] == "up" for s in services.values()) and state.jwks.loaded
    # Redis down degrades (no rate limits, caches or fresh revocations) but still serves.
    body: dict[str, Any] = {
        "service": "gateway",
        "status": ("ok" if redis_up else "degraded") if ready else "unavailable",
    }
    if shows_internals(request, request.app[CONFIG_KEY].internal_token):
        body |= {
            "services": services,
            "redis": "up" if redis_up else "down",
            "signingKeys": len(state.verifier.key_ids),
        }
    return json_response(body, status=200 if ready else 503)
