"""The route service's state and the policy of its answers (the handlers only parse, call and
respond): which dataset and providers it serves, and how a route is answered (from the
cache, else computed where `calls` says, formatted, and cached behind the answer).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from common.admission import Admission
from common.datasets import read_current
from common.errors import ApiError, DatasetNotReady
from common.service import dump_json
from route_service import street_names
from route_service.cache import RouteCache, cache_key
from route_service.calls import LargeCalls, ProviderCalls
from route_service.config import DEFAULT_MATRIX_CELLS, MatrixLimits, RouteConfig, parse_matrix_cells
from route_service.dataset import Dataset, current_dataset
from route_service.formatter import route_body
from route_service.providers.base import RouteRequest
from route_service.providers.registry import ProviderRegistry

log = logging.getLogger("route_service")
T = TypeVar("T")


@dataclass
class RouteState:
    """What the handlers need; `registry` stays None until a dataset is loaded."""

    calls: ProviderCalls
    cache: RouteCache
    admission: Admission  # what each public request costs its account (common.admission)
    dataset: Dataset | None = None
    registry: ProviderRegistry | None = None
    load_error: str | None = None
    matrix_limits: MatrixLimits = field(default_factory=lambda: parse_matrix_cells(DEFAULT_MATRIX_CELLS))
    counters: dict[str, int] = field(default_factory=lambda: {"cache_hits": 0, "cache_misses": 0})
    switches: int = 0  # datasets put into service after start-up (`switch`)

    def load(self, maps: Path, preload: bool, graph_cache: Path | None = None) -> None:
        """The current dataset and its providers. Runs in a thread: opening the OSRM files
        and the graph takes a moment. A failure is kept to be reported, not raised: the
        service runs on, unready, and says what is missing."""
        try:
            dataset = current_dataset(maps)
            registry = ProviderRegistry.load(dataset, preload=preload, graph_cache=graph_cache)
        except ApiError as exc:
            self.load_error = exc.detail
            return
        self.dataset, self.registry = dataset, registry
        log.info("map dataset %s loaded, providers %s", dataset.hash, ", ".join(registry.names))

    async def follow(self, config: RouteConfig) -> None:
        """Reads `current.json` every `reload_check_seconds`; a dataset named there that is not the
        one served goes into service (`switch`). One that fails to open is not retried until
        current.json names another."""
        refused: str | None = None
        while True:
            await asyncio.sleep(config.reload_check_seconds)
            digest = read_current(config.maps_path)
            if digest is None or digest == refused or (self.dataset is not None and digest == self.dataset.hash):
                continue
            try:
                switched = await self.switch(config)
            except Exception:  # the child would not start, …: keep serving, and keep following
                log.exception("map switch to %s failed, still serving %s", digest, self.dataset and self.dataset.hash)
                switched = False
            refused = None if switched else digest

    async def switch(self, config: RouteConfig) -> bool:
        """Puts the current dataset into service without a pause: the old one answers until the
        new one is open, requests already running end on the old one, none fails.

        Memory: OSRM's, Valhalla's and the prepared graph's files are memory-mapped (page cache
        the kernel may drop, not memory two maps must hold at once); where the graph cannot be
        shared it is the process's own, so the new graph is built only once the old one is
        released (or on its first use)."""
        try:
            dataset, registry = await self.calls.run(
                open_registry, config.maps_path, config.preload, config.graph_cache_dir
            )
        except ApiError as exc:
            log.error("map switch failed, still serving %s: %s", self.dataset and self.dataset.hash, exc.detail)
            return False
        large = LargeCalls.of(dataset, config)
        if large is not None:
            try:
                await large.start()
            except BaseException:  # a child that cannot open the new map is not left running
                await self.calls.run(large.shutdown)
                raise
        old_large, old_graph = self.calls.large, self.graph_engine()
        self.dataset, self.registry, self.calls.large, self.load_error = dataset, registry, large, None
        if old_large is not None:
            await self.calls.run(partial(old_large.shutdown, drain=True))  # its jobs end first
        await released(old_graph)
        if config.preload:
            await self.calls.run(registry.preload)
        self.switches += 1
        log.info("map dataset %s in service, providers %s", dataset.hash, ", ".join(registry.names))
        return True

    def graph_engine(self) -> weakref.ref[object] | None:
        """A weak reference to the graph engine in service, if one is built."""
        graph = self.registry.sources.get("graph") if self.registry is not None else None
        engine = getattr(graph, "_engine", None)
        return weakref.ref(engine) if engine is not None else None

    def ready(self) -> tuple[Dataset, ProviderRegistry]:
        if self.dataset is None or self.registry is None:
            raise DatasetNotReady(self.load_error or "the map data is still loading")
        return self.dataset, self.registry

    async def route(self, request: RouteRequest, dataset: Dataset) -> tuple[bytes, str]:
        """The answer's JSON and where it came from ("hit": the cache, "miss": computed)."""
        key = cache_key(request.query, request.provider, dataset.hash)
        cached = await self.cache.get(key)
        if cached is not None:
            self.counters["cache_hits"] += 1
            return cached, "hit"
        self.counters["cache_misses"] += 1
        result = await self.calls.route(request)
        result = street_names.of_dataset(dataset.path).translated(result, request.query.wording.language)
        body = dump_json(route_body(result, request.query, request.provider, dataset.hash))
        self.cache.put(key, body)
        return body, "miss"

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """In the thread pool (detour files)."""
        return await self.calls.run(function, *args)

    def health(self) -> dict[str, Any]:
        if self.dataset is None or self.registry is None:
            return {"dataset": None, "dataset_error": self.load_error, "ready": False}
        health: dict[str, Any] = {
            "dataset": self.dataset.hash,
            "providers": self.registry.names,
            "cache": dict(self.counters),
            "mapSwitches": self.switches,
        }
        if self.calls.large is not None:
            health["largeCalls"] = self.calls.large.health()
        return health


def open_registry(maps: Path, preload: bool, graph_cache: Path | None) -> tuple[Dataset, ProviderRegistry]:
    """The current dataset with its providers, the graph's engine left to `preload`."""
    dataset = current_dataset(maps)
    return dataset, ProviderRegistry.load(dataset, preload=preload, graph_now=False, graph_cache=graph_cache)


# How long a switch waits for the requests still on the old graph before building the new one
# anyway (a request holds it for at most its own time: milliseconds to a few seconds).
RELEASE_WAIT_S = 30.0


async def released(engine: weakref.ref[object] | None) -> None:
    """Returns once the referenced object is gone (its last request ended), or after RELEASE_WAIT_S."""
    if engine is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RELEASE_WAIT_S
    for check in itertools.count():
        if engine() is None or loop.time() >= deadline:
            return
        if check % 10 == 0:  # a reference cycle may hold it: collected twice a second, not more
            gc.collect()
        await asyncio.sleep(0.05)


STATE_KEY: web.AppKey[RouteState] = web.AppKey("route_state", RouteState)
