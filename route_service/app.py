"""The route service's aiohttp application.

At start-up the dataset named by `<MAP_DIR>/current.json` is loaded in a worker thread
(OSRM per profile, and Valhalla when its tiles exist); a dataset named there later
goes into service without a restart (`RouteState.follow`). Without a dataset the
service still starts, answers 503 DatasetNotReady and reports itself unready in /health,
so `make up` shows what is missing instead of crashing. With a dataset, heavy work (matching,
isochrones, big matrices, tours through many waypoints, detour files) gets a niced child
process of its own (`ROUTE_LARGE_PROCESSES`, see `route_service.calls`), so it never stalls
this worker's loop. Public requests are priced and charged to their account's budget in the
state Redis (`route_service.costs`, `common.admission`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web

from common.admission import Admission, parse_cost_budgets
from common.memory import fix_mmap_threshold
from common.service import CACHE_REDIS_KEY, HEALTH_CHECKS_KEY, REDIS_KEY, base_app
from route_service.cache import RouteCache
from route_service.calls import LargeCalls, ProviderCalls
from route_service.config import RouteConfig
from route_service.detour_handlers import detour_file
from route_service.handlers import handler, providers
from route_service.operations import ISOCHRONE, MATCH, MATRIX, PUBLIC_MATRIX, ROUTE, WAYPOINTS
from route_service.state import STATE_KEY, RouteState

CleanupContext = Callable[[web.Application], AsyncIterator[None]]


def state_context(config: RouteConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        # A matrix's arrays and JSON (8-16 MiB each at 1000x1000) in mappings of their own,
        # returned to the system when freed (common.memory).
        fix_mmap_threshold()
        executor = ThreadPoolExecutor(max_workers=config.threads, thread_name_prefix="route")
        calls = ProviderCalls(executor, frozenset(config.inline_providers))
        admission = Admission(app[REDIS_KEY], parse_cost_budgets(config.cost_budgets))
        state = RouteState(calls, RouteCache(app[CACHE_REDIS_KEY], config.cache_ttl_seconds), admission)
        state.matrix_limits = config.matrix_limits
        app[STATE_KEY] = state
        await calls.run(state.load, config.maps_path, config.preload)
        calls.large = LargeCalls.of(state.dataset, config) if state.dataset is not None else None
        if calls.large is not None and config.preload:
            # Without preload the child starts with the first large call: 1.2-1.6 s less per
            # start-up, which every route app test paid (the suite's profile, 2026-11-29).
            await calls.large.start()
        following = asyncio.create_task(state.follow(config))  # a new map without a restart
        yield
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        calls.shutdown()

    return context


async def dataset_health(app: web.Application) -> dict[str, Any]:
    return app[STATE_KEY].health()


def create_app(config: RouteConfig) -> web.Application:
    app = base_app(config, with_cache=True)
    app.cleanup_ctx.append(state_context(config))
    app[HEALTH_CHECKS_KEY].append(dataset_health)
    app.router.add_get("/v1/route", handler(ROUTE))
    app.router.add_get("/v1/providers", providers)
    app.router.add_get("/internal/providers", providers)  # gathered by the gateway into /v1/providers
    app.router.add_post("/v1/matrix", handler(PUBLIC_MATRIX))
    app.router.add_post("/v1/match", handler(MATCH))
    app.router.add_get("/v1/isochrone", handler(ISOCHRONE))
    app.router.add_post("/internal/matrix", handler(MATRIX))
    app.router.add_post("/internal/route", handler(WAYPOINTS))
    app.router.add_post("/v1/detour/file", detour_file)
    return app
