"""HTTP handlers of the optimize service: parse → price → admit → solve → answer. Errors are
raised, never formatted.

The price (optimize_service.costs) is charged to the caller's account before any routing or
solving (common.admission): 413 when one request costs more than its tier allows, 429 when the
account's budget or its heavy slots are spent; the answer carries the `RateLimit-Cost` headers.
"""

from __future__ import annotations

from aiohttp import web

from common.admission import Caller, caller_of
from common.service import json_response, read_json
from common.waiting import unless_gone
from optimize_service.fleet.formatter import fleet_body
from optimize_service.fleet.model import MAX_TIME_LIMIT_S as FLEET_MAX_TIME_LIMIT_S
from optimize_service.state import STATE_KEY
from optimize_service.stops.formatter import plan_body


def account_of(caller: Caller | None) -> str:
    """Whose turn a request takes in the solver lanes ("": on nobody's behalf)."""
    return caller.account if caller is not None else ""


async def optimize_stops(request: web.Request) -> web.Response:
    state, caller = request.app[STATE_KEY], caller_of(request.headers)
    optimizer = state.optimizer
    parsed = await optimizer.parse(await read_json(request), request.query, optimizer.allowance(caller))
    async with state.admission.admit(caller, optimizer.price(parsed)) as admitted:
        plan = await unless_gone(request, optimizer.plan(parsed, account_of(caller)))
    return json_response(plan_body(plan), headers=admitted.headers)


async def optimize_routes(request: web.Request) -> web.Response:
    state, caller = request.app[STATE_KEY], caller_of(request.headers)
    optimizer = state.optimizer
    fleet = optimizer.parse_fleet(await read_json(request), optimizer.allowance(caller, FLEET_MAX_TIME_LIMIT_S))
    async with state.admission.admit(caller, optimizer.price_fleet(fleet)) as admitted:
        plan = await unless_gone(request, optimizer.plan_fleet(fleet, account_of(caller)))
    return json_response(fleet_body(plan), headers=admitted.headers)
