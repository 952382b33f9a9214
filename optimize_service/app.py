"""The optimize service's aiohttp application.

The solver runs in a pool of worker processes (`OPTIMIZE_SOLVER_PROCESSES`), started and
warmed up with the app: both solvers (PyVRP, OR-Tools) hold the GIL for their whole search, so
in a thread they would stall every other request of the service for seconds. With two or more
workers, each request runs its two searches at once and keeps the shorter tour. The road
matrix and the tour geometry come from the route service (`ROUTE_SERVICE_URL`).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from aiohttp import web

from common.client import ServiceClient
from common.service import HEALTH_CHECKS_KEY, base_app
from optimize_service.config import OptimizeConfig
from optimize_service.handlers import STATE_KEY, OptimizeState, optimize_stops
from optimize_service.routing import RouteClient
from optimize_service.solver import warm_up

log = logging.getLogger("optimize_service")
CleanupContext = Callable[[web.Application], AsyncIterator[None]]


def solver_pool(processes: int) -> Executor:
    if processes == 0:
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="solver")
    # spawn, not fork: forking a process that runs an event loop and threads is unsafe.
    return ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"))


def parallel_searches(processes: int) -> int:
    """Two searches per request when two workers exist (the solver's portfolio has two; on the
    bench, PyVRP alone is 1.4-1.7 % above the reference at 200 and 500 stops, the pair ≤ 0.71 %).
    It trades throughput for quality: a second request at the same time waits for the first."""
    return max(1, min(2, processes))


def state_context(config: OptimizeConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        client = ServiceClient("route service", config.route_service_url, timeout=config.route_timeout_seconds)
        pool = solver_pool(config.solver_processes)
        loop = asyncio.get_running_loop()
        # One warm-up per worker, at once, so each has imported OR-Tools before the first request.
        await asyncio.gather(*(loop.run_in_executor(pool, warm_up) for _ in range(max(1, config.solver_processes))))
        app[STATE_KEY] = OptimizeState(RouteClient(client), pool, parallel_searches(config.solver_processes))
        log.info(
            "solver ready in %d process(es); route service at %s", config.solver_processes, config.route_service_url
        )
        yield
        await client.close()
        pool.shutdown(wait=False, cancel_futures=True)

    return context


def solver_health(config: OptimizeConfig) -> Callable[[web.Application], Any]:
    async def check(app: web.Application) -> dict[str, Any]:
        return {"solverProcesses": config.solver_processes, "routeService": config.route_service_url}

    return check


def create_app(config: OptimizeConfig) -> web.Application:
    app = base_app(config, with_redis=False)
    app.cleanup_ctx.append(state_context(config))
    app[HEALTH_CHECKS_KEY].append(solver_health(config))
    app.router.add_post("/v1/optimize/stops", optimize_stops)
    return app
