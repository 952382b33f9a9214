"""HTTP handlers of the optimize service: parse → price → admit → solve → answer. Errors are
raised, never formatted.

The price (optimize_service.costs) is charged to the caller's account before any routing or
solving (common.admission): 413 when one request costs more than its tier allows, 429 when the
account's budget or its heavy slots are spent; the answer carries the `RateLimit-Cost` headers.
"""

from __future__ import annotations

from aiohttp import web

from common.admission import Admission, Caller, caller_of
from common.service import json_response, read_json
from common.waiting import unless_gone
from optimize_service.fleet.formatter import fleet_body
from optimize_service.fleet.model import MAX_TIME_LIMIT_S as FLEET_MAX_TIME_LIMIT_S
from optimize_service.optimizer import Optimizer
from optimize_service.stops.formatter import plan_body

OPTIMIZER_KEY: web.AppKey[Optimizer] = web.AppKey("optimizer", Optimizer)
ADMISSION_KEY: web.AppKey[Admission] = web.AppKey("admission", Admission)


def account_of(caller: Caller | None) -> str:
    """Whose turn a request takes in the solver lanes ("": on nobody's behalf)."""
    return caller.account if caller is not None else ""


async def optimize_stops(request: web.Request) -> web.Response:
    optimizer, caller = request.app[OPTIMIZER_KEY], caller_of(request.headers)
    parsed = await optimizer.parse(await read_json(request), request.query, optimizer.allowance(caller))
    async with request.app[ADMISSION_KEY].admit(caller, optimizer.price(parsed)) as admitted:
        plan = await unless_gone(request, optimizer.plan(parsed, account_of(caller)))
    return json_response(plan_body(plan), headers=admitted.headers)


async def optimize_routes(request: web.Request) -> web.Response:
    optimizer, caller = request.app[OPTIMIZER_KEY], caller_of(request.headers)
    fleet = optimizer.parse_fleet(await read_json(request), optimizer.allowance(caller, FLEET_MAX_TIME_LIMIT_S))
    async with request.app[ADMISSION_KEY].admit(caller, optimizer.price_fleet(fleet)) as admitted:
        plan = await unless_gone(request, optimizer.plan_fleet(fleet, account_of(caller)))
    return json_response(fleet_body(plan), headers=admitted.headers)
