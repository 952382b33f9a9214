"""Where a provider call runs: on the event loop, in the thread pool, or, for large OSRM
calls, in a child process of the route worker (no aiohttp here).

OSRM's binding holds the GIL for its whole call. Measured on Heidelberg: a 1000x1000 Table
takes 1.3 s, and a Python thread beside it made no progress at all until it returned, so on
the worker's event loop or in its thread pool a large matrix stalls every other request of
that worker, a 20-stop optimization's 20x20 matrix (12 ms alone) included. Row blocks with
awaits between them were measured too: every Table call repeats ~0.2 s of work for 1000
destinations, so blocks short enough to keep the loop responsive (≤ 0.2 s) made a 1000x1000
matrix cost 2-4x the CPU (250x250 tiles 2.9 s, 100x100 6.1 s). A child process keeps the
single call, leaves the loop free, and runs niced, so small requests on the same two cores
come first. Small calls stay in the worker: the hop costs a few milliseconds.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from common.memory import fix_mmap_threshold, trim_heap
from common.pools import RestartingPool
from common.processes import start_pool_process
from route_service.dataset import Dataset
from route_service.detour.csvfile import DetourCase, LineError
from route_service.detour.engine import DetourResult, Router, answer_cases
from route_service.diagnostics import SnapDiagnostics
from route_service.matching import match_in_chunks
from route_service.model import MatchResult, MatrixQuery, MatrixResult, RouteResult, WaypointsQuery, WaypointsResult
from route_service.providers.base import Capabilities, MatchRequest, MatrixRequest, RouteRequest, WaypointsRequest
from route_service.providers.osrm_provider import OsrmProvider
from route_service.providers.registry import resolve

T = TypeVar("T")

# From these sizes on an OSRM call runs in the child process. Heidelberg, car, one call:
# Table 100x100 33 ms, 150x150 66 ms, 200x200 116 ms; Route through 100 waypoints 39 ms,
# 150 51 ms, 200 74 ms, 1000 0.39 s. Below, a call stalls the loop ≤ ~60 ms, less than
# queueing in the child behind a large matrix would cost.
LARGE_MATRIX_CELLS = 20_000
LARGE_ROUTE_WAYPOINTS = 150


def is_large_matrix(query: MatrixQuery) -> bool:
    return query.cells >= LARGE_MATRIX_CELLS


def is_large_route(query: WaypointsQuery) -> bool:
    return len(query.waypoints) >= LARGE_ROUTE_WAYPOINTS


# ---------------------------------------------------------------- in the child process

_child_provider: OsrmProvider | None = None
_child_plugins: Capabilities | None = None


def open_dataset(dataset_dir: Path, manifest: dict[str, Any], niceness: int) -> None:
    """The child's initializer: its own OSRM engines on the same memory-mapped files, its
    errors diagnosed as the worker's are."""
    global _child_provider, _child_plugins
    start_pool_process(niceness)
    fix_mmap_threshold()
    _child_provider = OsrmProvider.load(dataset_dir, manifest)
    dataset = Dataset(dataset_dir.name, dataset_dir, manifest)
    diagnostics = SnapDiagnostics(_child_provider, dataset.bounds, dataset.sample_points)
    _child_plugins = resolve(_child_provider, diagnostics)


def _plugins() -> tuple[OsrmProvider, Capabilities]:
    if _child_provider is None or _child_plugins is None:
        raise RuntimeError("the large-call process has no dataset")
    return _child_provider, _child_plugins


def child_preload() -> None:
    _plugins()[0].preload()


def child_matrix(query: MatrixQuery) -> MatrixResult:
    matrix = _plugins()[1].matrix
    assert matrix is not None  # OSRM has its own
    try:
        return matrix(query)
    finally:
        trim_heap()  # the binding's freed tree would otherwise stay in the child's heap


def child_route_waypoints(query: WaypointsQuery) -> WaypointsResult:
    try:
        return _plugins()[1].waypoints(query)
    finally:
        trim_heap()


def child_detour_cases(
    vehicle: str, route_type: str, cases: list[DetourCase]
) -> tuple[list[DetourResult], list[LineError]]:
    """A share of a large detour file (`route_service.detour_handlers`)."""
    return answer_cases(Router(_plugins()[1], vehicle, route_type), cases)


# ---------------------------------------------------------------- in the route worker


class LargeCalls:
    """The worker's child process(es) for large OSRM calls, started with the dataset."""

    provider = OsrmProvider.name  # the provider whose calls it takes

    def __init__(self, dataset: Dataset, processes: int, niceness: int) -> None:
        self.dataset, self.processes, self.niceness = dataset, processes, niceness
        # A child that died (killed, out of memory) fails the calls it had with a 503; later
        # ones get a new child instead of failing until the worker restarts.
        self.pool = RestartingPool("large-call", self.new_pool)

    def new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.processes,
            # spawn, not fork: the worker runs an event loop and threads
            mp_context=multiprocessing.get_context("spawn"),
            initializer=open_dataset,
            initargs=(self.dataset.path, self.dataset.manifest, self.niceness),
        )

    async def start(self) -> None:
        """Starts every child and opens its engines, so the first large call pays neither."""
        await asyncio.gather(*(self.pool.run(child_preload) for _ in range(self.processes)))

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        return await self.pool.run(function, *args)

    async def matrix(self, query: MatrixQuery) -> MatrixResult:
        return await self.run(child_matrix, query)

    async def route_waypoints(self, query: WaypointsQuery) -> WaypointsResult:
        return await self.run(child_route_waypoints, query)

    async def detour_cases(
        self, vehicle: str, route_type: str, cases: list[DetourCase]
    ) -> tuple[list[DetourResult], list[LineError]]:
        return await self.run(child_detour_cases, vehicle, route_type, cases)

    def health(self) -> dict[str, int]:
        return {"processes": self.processes, "restarts": self.pool.restarts}

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True)


class ProviderCalls:
    """Runs provider calls where they cost the other requests least."""

    def __init__(self, executor: Executor, inline: frozenset[str] = frozenset()) -> None:
        self.executor = executor
        # Providers called on the event loop rather than the pool (ROUTE_INLINE_PROVIDERS):
        # OSRM holds the GIL, so the pool's hop and GIL hand-offs only cost (~15 % of a route).
        self.inline = inline
        self.large: LargeCalls | None = None  # set once the dataset is loaded

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, function, *args)

    async def route(self, request: RouteRequest) -> RouteResult:
        if request.provider in self.inline:
            return request.plugin(request.query)
        return await self.run(request.plugin, request.query)

    async def matrix(self, request: MatrixRequest) -> MatrixResult:
        if self.large is not None and request.provider == self.large.provider and is_large_matrix(request.query):
            return await self.large.matrix(request.query)
        return await self.run(request.plugin, request.query)

    async def route_waypoints(self, request: WaypointsRequest) -> WaypointsResult:
        if self.large is not None and request.provider == self.large.provider and is_large_route(request.query):
            return await self.large.route_waypoints(request.query)
        return await self.run(request.plugin, request.query)

    async def match(self, request: MatchRequest) -> MatchResult:
        """A whole trace, in chunks (route_service.matching), in the thread pool: a 10 000-point
        trace takes seconds."""
        query = request.query
        return await self.run(
            lambda: match_in_chunks(
                request.plugin,
                query.points,
                query.timestamps,
                query.vehicle,
                query.route_type,
                detail=query.detail,
                gps_accuracy_m=query.gps_accuracy_m,
            )
        )

    def shutdown(self) -> None:
        if self.large is not None:
            self.large.shutdown()
        self.executor.shutdown(wait=True, cancel_futures=True)
