"""HTTP handler of the optimize service: read the body, solve, answer. Errors are raised, never
formatted."""

from __future__ import annotations

from datetime import UTC, datetime

from aiohttp import web

from common.service import json_response, read_json
from optimize_service.fleet_formatter import fleet_body
from optimize_service.fleet_parsing import parse_fleet_request
from optimize_service.fleet_planner import plan_fleet
from optimize_service.formatter import plan_body
from optimize_service.optimizer import Optimizer

OPTIMIZER_KEY: web.AppKey[Optimizer] = web.AppKey("optimizer", Optimizer)


async def optimize_stops(request: web.Request) -> web.Response:
    plan = await request.app[OPTIMIZER_KEY].solve(await read_json(request), request.query)
    return json_response(plan_body(plan))


async def optimize_routes(request: web.Request) -> web.Response:
    optimizer = request.app[OPTIMIZER_KEY]
    fleet = parse_fleet_request(await read_json(request), datetime.now(UTC))
    plan = await plan_fleet(fleet, optimizer.routes, optimizer.scheduler)
    return json_response(fleet_body(plan))
