"""Where a provider call runs: on the event loop, in the thread pool, or, for heavy work, in a
child process of the route worker (no aiohttp here).

Heavy work (issue 29) runs in the child whenever the worker has one (`ROUTE_LARGE_PROCESSES`):
map matching, isochrones, large matrices (OSRM from LARGE_MATRIX_CELLS on, the graph provider's
from `costs.HEAVY_GRAPH_MATRIX_UNITS`), tours through many waypoints, detour files. A 10 000-point
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
import re
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from common.errors import ApiError
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
    Matrix,
    MatrixQuery,
    MatrixResult,
    RouteResult,
    TimedPointInfo,
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
from route_service.providers.graph import GraphProvider
from route_service.providers.osrm_provider import OsrmProvider
from route_service.providers.registry import load_graph_provider, load_valhalla_provider, resolve
from route_service.providers.surface import SurfaceSnapper
from route_service.providers.valhalla_areas import RouteStarts
from route_service.split_tours import halves, joined, on_time, renumbered, splits_tour

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
_child_graph_cache: Path | None = None  # where the worker's prepared graph file is (graph_engine.shared)


def open_dataset(
    dataset_dir: Path, manifest: dict[str, Any], niceness: int, flags: Any = None, graph_cache: Path | None = None
) -> None:
    """The child's initializer: its own OSRM engines on the same memory-mapped files, its
    errors diagnosed as the worker's are; the graph provider on its first use, mapping the
    worker's prepared graph file (`graph_cache`)."""
    global _child_provider, _child_plugins, _child_dataset, _child_diagnostics, _child_flags, _child_graph_cache
    start_pool_process(niceness)
    fix_mmap_threshold()
    _child_flags = flags
    _child_graph_cache = graph_cache
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
    """A provider's plugins in the child: OSRM's from the start, the graph's and Valhalla's loaded
    on first use (only where isochrones, graph matrices or Valhalla are asked; the graph's file
    mapped, prepared by whichever process needed it first)."""
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
    diagnostics, osrm = _child_diagnostics, _plugins()[1]
    starts = RouteStarts(osrm.route, lambda vehicle: [area[0] for area in diagnostics.areas(vehicle, "fastest")])
    graph = load_graph_provider(dataset, now=False, cache_dir=_child_graph_cache)
    return load_valhalla_provider(dataset, graph, starts)


OPTIONAL_PROVIDERS: dict[str, Callable[[Dataset], RouteProvider | None]] = {
    "graph": lambda dataset: load_graph_provider(dataset, cache_dir=_child_graph_cache),
    "valhalla": _child_valhalla,
}


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

    def __init__(self, dataset: Dataset, processes: int, niceness: int, graph_cache: Path | None = None) -> None:
        self.dataset, self.processes, self.niceness, self.graph_cache = dataset, processes, niceness, graph_cache
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
        return cls(dataset, config.large_processes, config.large_niceness, config.graph_cache_dir)

    def new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=self.context,
            initializer=open_dataset,
            initargs=(self.dataset.path, self.dataset.manifest, self.niceness, self.flags.array, self.graph_cache),
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


# A heavy graph matrix with at least this many sources is split between the child process and
# the worker (ProviderCalls.split_matrix): below it a row's search (2-3 ms on Heidelberg) is
# not worth a second process's hop.
SPLIT_MATRIX_SOURCES = 40


def refused(answer: object) -> bool:
    """A request's error (4xx), not a fault."""
    return isinstance(answer, ApiError) and answer.status < 500


def splits(request: MatrixRequest) -> bool:
    return request.provider == GraphProvider.name and len(request.query.sources) >= SPLIT_MATRIX_SOURCES


def rows_split(query: MatrixQuery) -> tuple[MatrixQuery, MatrixQuery]:
    half = len(query.sources) // 2
    return replace(query, sources=query.sources[:half]), replace(query, sources=query.sources[half:])


SOURCE = re.compile(r"sources\[(\d+)\]")


def joined_rows(head: MatrixResult, tail: MatrixResult, offset: int) -> MatrixResult:
    """One matrix of two halves' rows (the same destinations)."""

    def rows(first: Matrix, second: Matrix) -> Matrix:
        if isinstance(first, np.ndarray) and isinstance(second, np.ndarray):
            return first if first.size == 0 else np.vstack([first, second])
        return [*list(first), *list(second)]

    def renumbered(point: TimedPointInfo) -> TimedPointInfo:
        match = SOURCE.fullmatch(point.parameter)
        return point if match is None else replace(point, parameter=f"sources[{int(match.group(1)) + offset}]")

    destinations = {p.parameter: p for p in head.timed_points if not SOURCE.fullmatch(p.parameter)}
    timed = [p for p in head.timed_points if SOURCE.fullmatch(p.parameter)]
    timed += [renumbered(p) for p in tail.timed_points if SOURCE.fullmatch(p.parameter)]
    return replace(
        head,
        durations_s=rows(head.durations_s, tail.durations_s),
        distances_m=rows(head.distances_m, tail.distances_m),
        snapped_sources=[*head.snapped_sources, *tail.snapped_sources],
        timed_points=[*timed, *destinations.values()],
    )


class ProviderCalls:
    """Runs provider calls where they cost the other requests least."""

    def __init__(self, executor: Executor, inline: frozenset[str] = frozenset()) -> None:
        self.executor = executor
        # Providers called on the event loop rather than the pool (ROUTE_INLINE_PROVIDERS):
        # OSRM holds the GIL, so the pool's hop and GIL hand-offs only cost (~15 % of a route).
        self.inline = inline
        self.large: LargeCalls | None = None  # set once the dataset is loaded
        self.split_matrices = 0  # matrices answered by the child and the worker together (tests)
        self.split_tours = 0  # graph tours answered by the child and the worker together (tests)
        self.split_tour_legs_again = 0  # their legs routed again at their true time (a rule changed)

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
        if self.large is not None and heavy and splits(request):
            return await self.split_matrix(request, self.large)
        if self.large is not None and heavy:
            return await self.large.matrix(request.provider, request.query)
        return await self.run(request.plugin, request.query)

    async def split_matrix(self, request: MatrixRequest, large: LargeCalls) -> MatrixResult:
        """The first half of the rows in the child process, the rest here at the same time: a
        graph matrix's rows are independent searches, so two cores answer it in about half the
        time (a tour at a time waits for its matrix, issue 33)."""
        self.split_matrices += 1
        first, rest = rows_split(request.query)
        answers = await asyncio.gather(large.matrix(request.provider, first), self.run(request.plugin, rest),
                                       return_exceptions=True)  # fmt: skip
        for index, answer in enumerate(answers):
            if isinstance(answer, BaseException):
                raise answer if index == 0 else renumbered(answer, len(first.sources), "sources")
        head, tail = answers
        assert isinstance(head, MatrixResult) and isinstance(tail, MatrixResult)
        return joined_rows(head, tail, len(first.sources))

    async def route_waypoints(self, request: WaypointsRequest) -> WaypointsResult:
        if self.large is not None and request.provider == self.large.provider and is_large_route(request.query):
            return await self.large.route_waypoints(request.provider, request.query)
        if self.large is not None and request.provider == GraphProvider.name and splits_tour(request.query):
            return await self.split_tour(request, self.large)
        return await self.run(request.plugin, request.query)

    async def split_tour(self, request: WaypointsRequest, large: LargeCalls) -> WaypointsResult:
        """The first half of a graph tour's legs in the child process, the rest here at the same
        time (`route_service.split_tours`): about half the time of a 100-stop tour's 0.39 s."""
        self.split_tours += 1
        parts = halves(request.query)
        first, rest = await asyncio.gather(large.route_waypoints(request.provider, parts.first),
                                           self.run(request.plugin, parts.rest), return_exceptions=True)  # fmt: skip
        if parts.expected and (refused(first) or refused(rest)):
            # a route's error at the expected times need not be the tour's: leg after leg, as chained
            return await self.run(request.plugin, request.query)
        if isinstance(first, BaseException):
            raise first
        if isinstance(rest, BaseException):
            raise renumbered(rest, parts.offset)
        tour = joined(first, rest)
        if not parts.expected:
            return tour
        if tour.rule_changes is None:  # nothing to tell which legs hold: leg after leg
            return await self.run(request.plugin, request.query)
        chained, again = await self.run(on_time, request.query, tour, request.plugin)
        self.split_tour_legs_again += again
        return chained

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
