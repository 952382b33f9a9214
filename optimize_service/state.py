"""The optimize service's state: the solver lanes and the route service behind the optimizer,
and the admission that charges each request to its account.

The solvers run in worker processes, started and warmed up with the app: both solvers
(PyVRP, OR-Tools) hold the GIL for their whole search, so in a thread they would stall every
other request of the service for seconds. Two pools, the scheduler's lanes
(`optimize_service.scheduler`): small problems (`OPTIMIZE_SMALL_PROCESSES`) and large ones
(`OPTIMIZE_SOLVER_PROCESSES`, niced by `OPTIMIZE_LARGE_NICE`), so a small request never waits
behind a large one. With two or more processes in a lane, each request runs two searches at
once and keeps the shorter tour. Fleet routing (`POST /v1/optimize/routes`) runs in the same
lanes. Road matrices and geometries come from the route service (`ROUTE_SERVICE_URL`).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from common.admission import Admission, parse_cost_budgets
from common.client import ServiceClient
from common.pools import RestartingPool
from common.processes import start_pool_process
from common.service import REDIS_KEY
from optimize_service.config import OptimizeConfig
from optimize_service.costs import TierRules
from optimize_service.fleet.solver import warm_up_fleet
from optimize_service.optimizer import Optimizer
from optimize_service.routing import RouteClient
from optimize_service.scheduler import LARGE, SMALL, Lane, Scheduler
from optimize_service.stops.solver import warm_up


@dataclass
class OptimizeState:
    optimizer: Optimizer
    # What each request costs its account, charged before any work (optimize_service.costs).
    admission: Admission


STATE_KEY: web.AppKey[OptimizeState] = web.AppKey("optimize_state", OptimizeState)

log = logging.getLogger("optimize_service")
CleanupContext = Callable[[web.Application], AsyncIterator[None]]


def solver_pool(name: str, processes: int, niceness: int = 0) -> RestartingPool:
    def new_executor() -> Executor:
        if processes == 0:
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="solver")
        # spawn, not fork: forking a process that runs an event loop and threads is unsafe.
        return ProcessPoolExecutor(
            max_workers=processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=start_pool_process,
            initargs=(niceness,),
        )

    return RestartingPool(f"{name}-lane solver", new_executor)


def scheduler_for(config: OptimizeConfig) -> Scheduler:
    """The two lanes; OPTIMIZE_SOLVER_PROCESSES=0 gives each a thread instead (tests)."""
    threads = config.solver_processes == 0
    small_processes = 0 if threads else config.small_processes
    small = Lane(SMALL, solver_pool(SMALL, small_processes), small_processes, None, config.queue_seconds)
    large = Lane(
        LARGE,
        solver_pool(LARGE, config.solver_processes, config.large_niceness),
        config.solver_processes,
        config.queue_size,
        config.queue_seconds,
    )
    return Scheduler(small, large, config.small_lane_seconds)


async def warm(lane: Lane) -> None:
    """One warm-up per process, at once, so each has imported OR-Tools and VROOM before the
    first request."""
    for work in (warm_up, warm_up_fleet):
        await asyncio.gather(*(lane.pool.run(work) for _ in range(max(1, lane.processes))))


def state_context(config: OptimizeConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        client = ServiceClient(
            "route service",
            config.route_service_url,
            timeout=config.route_timeout_seconds,
            internal_token=config.internal_token,
        )
        scheduler = scheduler_for(config)
        await asyncio.gather(warm(scheduler.small), warm(scheduler.large))
        budgets = parse_cost_budgets(config.cost_budgets)
        rules = TierRules(config.time_limits, config.matrix_cells, budgets)
        optimizer = Optimizer(RouteClient(client), scheduler, rules)
        app[STATE_KEY] = OptimizeState(optimizer, Admission(app[REDIS_KEY], budgets))
        log.info(
            "solvers ready: %d small-lane and %d large-lane process(es); route service at %s",
            scheduler.small.processes,
            scheduler.large.processes,
            config.route_service_url,
        )
        yield
        await client.close()
        for lane in (scheduler.small, scheduler.large):
            lane.pool.shutdown(wait=False)

    return context


def solver_health(config: OptimizeConfig) -> Callable[[web.Application], Any]:
    async def check(app: web.Application) -> dict[str, Any]:
        lanes = app[STATE_KEY].optimizer.scheduler.health() if STATE_KEY in app else {}
        return {"solverProcesses": config.solver_processes, "lanes": lanes, "routeService": config.route_service_url}

    return check
