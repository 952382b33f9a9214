"""The route service's state and the policy of its answers (the handlers only parse, call and
respond): which dataset and providers it serves, and how a route is answered (from the
cache, else computed where `calls` says, formatted, and cached behind the answer).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

from aiohttp import web

from common.admission import Admission, measured
from common.datasets import read_current
from common.errors import ApiError, DatasetNotReady
from common.service import dump_json
from route_service.cache import RouteCache
from route_service.calls import LargeCalls, ProviderCalls
from route_service.config import DEFAULT_MATRIX_CELLS, MatrixLimits, RouteConfig, parse_matrix_cells
from route_service.dataset import Dataset, current_dataset
from route_service.operations import Operation
from route_service.providers.registry import ProviderRegistry

log = logging.getLogger("route_service")
T = TypeVar("T")


@dataclass(frozen=True)
class Answer:
    """An operation's answer: its JSON, its headers (X-Cache for cached operations), and what
    it costs in the end when its operation settles (None: its price stands)."""

    body: bytes
    headers: dict[str, str]
    settled: int | None = None


@dataclass(frozen=True)
class Called[R]:
    """What `call` found: the operation's result, or its answer's JSON from the cache; `key`
    is its cache key (None: its answers are not cached)."""

    key: str | None
    result: R | None = None
    cached: bytes | None = None


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

    def load(self, maps: Path, preload: bool) -> None:
        """The current dataset and its providers. Runs in a thread: opening the OSRM and
        Valhalla files takes a moment. A failure is kept to be reported, not raised: the
        service runs on, unready, and says what is missing."""
        try:
            dataset = current_dataset(maps)
            registry = ProviderRegistry.load(dataset, preload=preload)
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

        Memory: OSRM's and Valhalla's files are memory-mapped (page cache the kernel may drop,
        not memory two maps must hold at once)."""
        try:
            dataset, registry = await self.calls.run(open_registry, config.maps_path, config.preload)
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
        old_large = self.calls.large
        self.dataset, self.registry, self.calls.large, self.load_error = dataset, registry, large, None
        if old_large is not None:
            await self.calls.run(partial(old_large.shutdown, drain=True))  # its jobs end first
        if config.preload:
            await self.calls.run(registry.preload)
        self.switches += 1
        log.info("map dataset %s in service, providers %s", dataset.hash, ", ".join(registry.names))
        return True

    def ready(self) -> tuple[Dataset, ProviderRegistry]:
        if self.dataset is None or self.registry is None:
            raise DatasetNotReady(self.load_error or "the map data is still loading")
        return self.dataset, self.registry

    async def call[P, R](
        self, operation: Operation[P, R], parsed: P, dataset: Dataset, watch: Callable[[Awaitable[R]], Awaitable[R]]
    ) -> Called[R]:
        """The operation's result for a parsed request, called where `calls` says (`watch`ed:
        abandoned when its client goes), or its answer's JSON from the cache when the
        operation's answers are cached and this one is there."""
        key = operation.cache_key(parsed, dataset) if operation.cache_key is not None else None
        if key is not None:
            cached = await self.cache.get(key)
            self.counters["cache_hits" if cached is not None else "cache_misses"] += 1
            if cached is not None:
                return Called(key, cached=cached)
        return Called(key, await watch(operation.call(self.calls, parsed, dataset)))

    async def written[P, R](
        self, operation: Operation[P, R], called: Called[R], parsed: P, dataset: Dataset, registry: ProviderRegistry,
        read_s: float = 0.0,
    ) -> Answer:  # fmt: skip
        """The answer: its JSON written (and cached behind it), what it settles at (`read_s`: the
        CPU its request's reading took)."""
        if called.cached is not None:
            return Answer(called.cached, {"X-Cache": "hit"})
        result = cast(R, called.result)  # not cached: called

        def write() -> bytes:
            return dump_json(operation.respond(result, parsed, dataset, registry))

        body, write_s = await asyncio.to_thread(measured, write) if operation.in_thread else (write(), 0.0)
        if called.key is not None:
            self.cache.put(called.key, body)
        settled = operation.settle(result, read_s + write_s) if operation.settle is not None else None
        return Answer(body, {"X-Cache": "miss"} if called.key is not None else {}, settled)

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


def open_registry(maps: Path, preload: bool) -> tuple[Dataset, ProviderRegistry]:
    """The current dataset with its providers."""
    dataset = current_dataset(maps)
    return dataset, ProviderRegistry.load(dataset, preload=preload)


STATE_KEY: web.AppKey[RouteState] = web.AppKey("route_state", RouteState)
