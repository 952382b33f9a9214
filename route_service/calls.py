"""Where a provider call runs: on the event loop, in the thread pool, or, for heavy work, in a
child process of the route worker (no aiohttp here).

Heavy work (issue 29) runs in the child whenever the worker has one (`ROUTE_LARGE_PROCESSES`):
map matching, isochrones, large matrices (OSRM from LARGE_MATRIX_CELLS on, Valhalla's from
`costs.HEAVY_MATRIX_UNITS`), tours through many waypoints, detour files. A 10 000-point
trace held the worker's GIL for 46-50 s in its thread pool: /health answered 503 and another
account's route took 1.9 s. In the niced child the worker's loop stays free for light requests.

Abandoned work stops (issue 29: 42 CPU-s burnt on after the client had gone): when the awaiting
task is cancelled, a job still queued is dropped, and a running one sees its id in the shared
`AbandonFlags` the next time it asks (between matching chunks, `route_service.matching`; at the
start of every job) and ends. Unchunked calls are bounded by their limits (a 1000x1000 table
1.3 s, an isochrone ~0.2 s) and run to their end.

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
import itertools
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from common.geo import LatLon
from common.memory import fix_mmap_threshold, trim_heap
from common.pools import RestartingPool
from common.processes import start_pool_process
from route_service.config import RouteConfig
from route_service.dataset import Dataset
from route_service.detour.csvfile import DetourCase, LineError, TrackPoint
from route_service.detour.engine import DetourResult, Router, TrackResult, answer_cases, answer_track
from route_service.diagnostics import SnapDiagnostics
from route_service.matching import Abandoned, Thinned, match_trace
from route_service.model import (
    IsochroneQuery,
    IsochroneResult,
    MatchQuery,
    MatchResult,
    MatrixQuery,
    MatrixResult,
    RouteResult,
    WaypointsQuery,
    WaypointsResult,
)
from route_service.providers.base import (
    Capabilities,
    IsochroneRequest,
    MatchRequest,
    MatrixRequest,
    RouteProvider,
    RouteRequest,
    WaypointsRequest,
)
from route_service.providers.osrm_provider import OsrmProvider
from route_service.providers.registry import load_valhalla_provider, resolve, route_starts
from route_service.providers.surface import SurfaceSnapper

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


# ---------------------------------------------------------------- abandoned jobs

# Slots of the shared array: a job's id is written to slot id % ABANDON_SLOTS when its caller
# gives up. Ids are never reused, so a stale entry cannot stop a later job; two jobs share a
# slot only with 4096 jobs in flight at once.
ABANDON_SLOTS = 4096


@dataclass(frozen=True)
class Ticket:
    """A job's identity in the abandon flags."""

    job: int

    @property
    def slot(self) -> int:
        return self.job % ABANDON_SLOTS


class AbandonFlags:
    """Shared memory the worker writes and its children read (no lock: one aligned word each)."""

    def __init__(self, context: Any) -> None:
        self.array = context.RawArray("q", ABANDON_SLOTS)
        self._ids = itertools.count(1)

    def ticket(self) -> Ticket:
        return Ticket(next(self._ids))

    def abandon(self, ticket: Ticket) -> None:
        self.array[ticket.slot] = ticket.job


# ---------------------------------------------------------------- in the child process

_child_provider: OsrmProvider | None = None
_child_plugins: Capabilities | None = None
_child_dataset: Dataset | None = None
_child_diagnostics: SnapDiagnostics | None = None
_child_optional: dict[str, Capabilities | None] = {}  # loaded on first use; None: not in the dataset
_child_flags: Any = None


def open_dataset(dataset_dir: Path, manifest: dict[str, Any], niceness: int, flags: Any = None) -> None:
    """The child's initializer: its own OSRM engines on the same memory-mapped files, its
    errors diagnosed as the worker's are; Valhalla on its first use."""
    global _child_provider, _child_plugins, _child_dataset, _child_diagnostics, _child_flags
    start_pool_process(niceness)
    fix_mmap_threshold()
    _child_flags = flags
    _child_provider = OsrmProvider.load(dataset_dir, manifest)
    _child_dataset = Dataset(dataset_dir.name, dataset_dir, manifest)
    _child_diagnostics = SnapDiagnostics(_child_provider, _child_dataset.areas, _child_dataset.sample_points)
    _child_plugins = resolve(_child_provider, _child_diagnostics, ChildSurface())


class ChildSurface:
    """The surface road a point means (providers.surface), from the child's own Valhalla,
    loaded on the first point that asks (as the worker's registry does it)."""

    provider: RouteProvider | None = None
    loaded = False

    def surface_point(self, vehicle: str, point: LatLon, max_distance_m: float) -> LatLon | None:
        if not ChildSurface.loaded and _child_dataset is not None:
            ChildSurface.provider = load_valhalla_provider(_child_dataset)
            ChildSurface.loaded = True
        valhalla = ChildSurface.provider
        return valhalla.surface_point(vehicle, point, max_distance_m) if isinstance(valhalla, SurfaceSnapper) else None


def _plugins() -> tuple[OsrmProvider, Capabilities]:
    if _child_provider is None or _child_plugins is None:
        raise RuntimeError("the large-call process has no dataset")
    return _child_provider, _child_plugins


def _capabilities(provider: str) -> Capabilities:
    """A provider's plugins in the child: OSRM's from the start, Valhalla's loaded on first use
    (only where Valhalla is asked)."""
    osrm = _plugins()[1]
    if provider == osrm.name:
        return osrm
    loader = OPTIONAL_PROVIDERS.get(provider)
    if provider not in _child_optional and loader is not None and _child_dataset is not None:
        loaded = loader(_child_dataset)
        _child_optional[provider] = resolve(loaded, _child_diagnostics, ChildSurface()) if loaded is not None else None
    found = _child_optional.get(provider)
    if found is None:
        raise RuntimeError(f"the large-call process has no {provider} provider")
    return found


def _child_valhalla(dataset: Dataset) -> RouteProvider | None:
    """Valhalla as the worker's registry loads it (its isochrones' starts and the map's cuts)."""
    assert _child_diagnostics is not None
    return load_valhalla_provider(dataset, route_starts(_plugins()[0], _child_diagnostics, ChildSurface()))


OPTIONAL_PROVIDERS: dict[str, Callable[[Dataset], RouteProvider | None]] = {"valhalla": _child_valhalla}


def _abandoned(ticket: Ticket) -> Callable[[], bool]:
    flags = _child_flags

    def abandoned() -> bool:
        return flags is not None and flags[ticket.slot] == ticket.job

    if abandoned():  # given up while queued: not even started
        raise Abandoned(f"job {ticket.job} was abandoned before it started")
    return abandoned


def child_preload() -> None:
    _plugins()[0].preload()


def child_matrix(ticket: Ticket, provider: str, query: MatrixQuery) -> MatrixResult:
    _abandoned(ticket)
    matrix = _capabilities(provider).matrix
    assert matrix is not None  # parsing chose a provider that has one
    try:
        return matrix(query)
    finally:
        trim_heap()  # the binding's freed tree would otherwise stay in the child's heap


def child_route_waypoints(ticket: Ticket, provider: str, query: WaypointsQuery) -> WaypointsResult:
    _abandoned(ticket)
    waypoints = _capabilities(provider).waypoints
    assert waypoints is not None  # every provider has them, leg by leg if not its own
    try:
        return waypoints(query)
    finally:
        trim_heap()


def child_match(ticket: Ticket, provider: str, query: MatchQuery, thin: Thinned) -> MatchResult:
    abandoned = _abandoned(ticket)
    match = _capabilities(provider).match
    assert match is not None  # parsing chose a provider that has one
    try:
        return match_trace(match, query, thin, abandoned)
    finally:
        trim_heap()


def child_isochrone(ticket: Ticket, provider: str, query: IsochroneQuery) -> IsochroneResult:
    _abandoned(ticket)
    isochrone = _capabilities(provider).isochrone
    assert isochrone is not None  # parsing chose a provider that has one
    return isochrone(query)


def child_detour_cases(
    ticket: Ticket, provider: str, vehicle: str, route_type: str, cases: list[DetourCase], departure: datetime | None
) -> tuple[list[DetourResult], list[LineError]]:
    """A share of a detour file (`route_service.detour_handlers`)."""
    _abandoned(ticket)
    return answer_cases(Router(_capabilities(provider), vehicle, route_type, departure), cases)


def child_detour_track(
    ticket: Ticket, provider: str, vehicle: str, route_type: str, points: list[TrackPoint], departure: datetime | None
) -> tuple[TrackResult | None, list[LineError]]:
    abandoned = _abandoned(ticket)
    return answer_track(Router(_capabilities(provider), vehicle, route_type, departure), points, abandoned)


# ---------------------------------------------------------------- in the route worker


class LargeCalls:
    """The worker's child process(es) for heavy work, started with the dataset."""

    provider = OsrmProvider.name  # the provider whose large matrices and tours it takes

    def __init__(self, dataset: Dataset, processes: int, niceness: int) -> None:
        self.dataset, self.processes, self.niceness = dataset, processes, niceness
        self.context = multiprocessing.get_context("spawn")  # not fork: the worker runs a loop and threads
        self.flags = AbandonFlags(self.context)
        # A child that died (killed, out of memory) fails the calls it had with a 503; later
        # ones get a new child instead of failing until the worker restarts.
        self.pool = RestartingPool("large-call", self.new_pool)
        self.abandoned = 0  # jobs given up by their callers (for /health and the tests)

    @classmethod
    def of(cls, dataset: Dataset, config: RouteConfig) -> LargeCalls | None:
        """The children the configuration asks for (ROUTE_LARGE_PROCESSES; none at 0)."""
        if config.large_processes <= 0:
            return None
        return cls(dataset, config.large_processes, config.large_niceness)

    def new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=self.context,
            initializer=open_dataset,
            initargs=(self.dataset.path, self.dataset.manifest, self.niceness, self.flags.array),
        )

    async def start(self) -> None:
        """Starts every child and opens its engines, so the first large call pays neither."""
        await asyncio.gather(*(self.pool.run(child_preload) for _ in range(self.processes)))

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        return await self.pool.run(function, *args)

    async def job(self, function: Callable[..., T], *args: Any) -> T:
        """`function(ticket, *args)` in the child; cancelled here, it is abandoned there."""
        ticket = self.flags.ticket()
        try:
            return await self.pool.run(function, ticket, *args)
        except asyncio.CancelledError:
            self.flags.abandon(ticket)
            self.abandoned += 1
            raise

    async def matrix(self, provider: str, query: MatrixQuery) -> MatrixResult:
        return await self.job(child_matrix, provider, query)

    async def route_waypoints(self, provider: str, query: WaypointsQuery) -> WaypointsResult:
        return await self.job(child_route_waypoints, provider, query)

    async def match(self, provider: str, query: MatchQuery, thin: Thinned) -> MatchResult:
        return await self.job(child_match, provider, query, thin)

    async def isochrone(self, provider: str, query: IsochroneQuery) -> IsochroneResult:
        return await self.job(child_isochrone, provider, query)

    async def detour_cases(
        self, provider: str, vehicle: str, route_type: str, cases: list[DetourCase], departure: datetime | None = None
    ) -> tuple[list[DetourResult], list[LineError]]:
        return await self.job(child_detour_cases, provider, vehicle, route_type, cases, departure)

    async def detour_track(
        self, provider: str, vehicle: str, route_type: str, points: list[TrackPoint], departure: datetime | None = None
    ) -> tuple[TrackResult | None, list[LineError]]:
        return await self.job(child_detour_track, provider, vehicle, route_type, points, departure)

    def health(self) -> dict[str, int]:
        return {"processes": self.processes, "restarts": self.pool.restarts, "abandoned": self.abandoned}

    def shutdown(self, *, drain: bool = False) -> None:
        self.pool.shutdown(wait=True, drain=drain)


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

    async def stoppable(self, work: Callable[[Callable[[], bool]], T]) -> T:
        """`work(abandoned)` in the thread pool (no child process): cancelled here, `abandoned()`
        turns true there."""
        gone = threading.Event()
        try:
            return await self.run(work, gone.is_set)
        except asyncio.CancelledError:
            gone.set()
            raise

    async def route(self, request: RouteRequest) -> RouteResult:
        if request.provider in self.inline:
            return request.plugin(request.query)
        return await self.run(request.plugin, request.query)

    async def matrix(self, request: MatrixRequest, *, heavy: bool | None = None) -> MatrixResult:
        """`heavy` (the price's, route_service.costs) sends it to the child; by default OSRM's
        large matrices go there."""
        if heavy is None:
            heavy = request.provider == OsrmProvider.name and is_large_matrix(request.query)
        if self.large is not None and heavy:
            return await self.large.matrix(request.provider, request.query)
        return await self.run(request.plugin, request.query)

    async def route_waypoints(self, request: WaypointsRequest) -> WaypointsResult:
        if self.large is not None and request.provider == self.large.provider and is_large_route(request.query):
            return await self.large.route_waypoints(request.provider, request.query)
        return await self.run(request.plugin, request.query)

    async def match(self, request: MatchRequest, thin: Thinned) -> MatchResult:
        """A whole trace, thinned and in chunks (route_service.matching): seconds for a long one."""
        if self.large is not None:
            return await self.large.match(request.provider, request.query, thin)
        return await self.stoppable(lambda abandoned: match_trace(request.plugin, request.query, thin, abandoned))

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResult:
        if self.large is not None:
            return await self.large.isochrone(request.provider, request.query)
        return await self.run(request.plugin, request.query)

    def shutdown(self) -> None:
        if self.large is not None:
            self.large.shutdown()
        self.executor.shutdown(wait=True, cancel_futures=True)
