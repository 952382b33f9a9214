"""HTTP handlers of the optimize service: one for both products (`optimizer.STOPS`,
`optimizer.FLEET`): parse → price → admit → plan → answer. Errors are raised, never formatted.

The price (optimize_service.costs) is charged to the caller's account before any routing or
solving (common.admission): 413 when one request costs more than its tier allows, 429 when the
account's budget or its heavy slots are spent; the answer carries the `RateLimit-Cost` headers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from common.admission import Caller, caller_of
from common.service import json_response, read_json
from common.waiting import unless_gone
from optimize_service.optimizer import Product
from optimize_service.state import STATE_KEY

Handler = Callable[[web.Request], Awaitable[web.Response]]


def account_of(caller: Caller | None) -> str:
    """Whose turn a request takes in the solver lanes ("": on nobody's behalf)."""
    return caller.account if caller is not None else ""


def handler(product: Product[Any, Any]) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        state, caller = request.app[STATE_KEY], caller_of(request.headers)
        optimizer = state.optimizer
        allowance = optimizer.allowance(caller, product.longest_s)
        parsed = await product.parse(optimizer, await read_json(request), request.query, allowance)
        async with state.admission.admit(caller, product.price(optimizer, parsed)) as admitted:
            plan = await unless_gone(request, product.plan(optimizer, parsed, account_of(caller)))
        return json_response(product.respond(plan), headers=admitted.headers)

    return handle
