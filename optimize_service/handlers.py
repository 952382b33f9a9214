"""HTTP handler of the optimize service: check the media type, read, parse, plan, format."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from common.service import json_response, read_json
from optimize_service.formatter import plan_body
from optimize_service.parsing import parse_request
from optimize_service.planner import plan_tour
from optimize_service.routing import RouteClient
from optimize_service.scheduler import Scheduler


@dataclass
class OptimizeState:
    routes: RouteClient
    scheduler: Scheduler  # which solver processes answer, and when (optimize_service.scheduler)


STATE_KEY: web.AppKey[OptimizeState] = web.AppKey("optimize_state", OptimizeState)


async def optimize_stops(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    body = await read_json(request)
    known = await state.routes.provider_names() if "provider" in request.query else None
    parsed = parse_request(body, request.query, datetime.now(UTC), known)
    plan = await plan_tour(parsed, state.routes, state.scheduler)
    return json_response(plan_body(plan))
