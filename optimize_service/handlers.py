"""HTTP handler of the optimize service: check the media type, read, parse, plan, format."""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from common.service import json_response, read_json
from optimize_service.formatter import plan_body
from optimize_service.parsing import parse_request
from optimize_service.planner import plan_tour
from optimize_service.routing import RouteClient
from optimize_service.solver import Tour, TourProblem, needs_search, searches, shortest, solve


@dataclass
class OptimizeState:
    routes: RouteClient
    solver_pool: Executor  # processes: the solvers hold the GIL while they search
    # Searches run at once per request, each in its own worker; at most the pool's workers,
    # or they would run one after the other and double the time.
    parallel_searches: int = 1

    async def solve(self, problem: TourProblem) -> Tour:
        loop = asyncio.get_running_loop()
        if not needs_search(problem) or self.parallel_searches < 2:
            return await loop.run_in_executor(self.solver_pool, solve, problem)
        chosen = searches(len(problem.durations_s))[: self.parallel_searches]
        tours = await asyncio.gather(*(loop.run_in_executor(self.solver_pool, solve, problem, s) for s in chosen))
        return shortest(list(tours))


STATE_KEY: web.AppKey[OptimizeState] = web.AppKey("optimize_state", OptimizeState)


async def optimize_stops(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    body = await read_json(request)
    known = await state.routes.provider_names() if "provider" in request.query else None
    parsed = parse_request(body, request.query, datetime.now(UTC), known)
    plan = await plan_tour(parsed, state.routes, state.solve)
    return json_response(plan_body(plan))
