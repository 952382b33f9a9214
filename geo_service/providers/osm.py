"""The default provider: our own OSM index (SQLite FTS5 + R*Tree), queried in a small thread pool.

SQLite and rapidfuzz calls block; a pool with one read-only connection per thread keeps the
event loop free for other requests while a query runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from common.errors import GeocoderDatasetNotReady
from geo_service.index import IndexLoader, LoadedIndex
from geo_service.model import RESULT_TYPES, AutocompleteQuery, GeocodeAnswer, GeocodeQuery, GeocodeResult, ReverseQuery
from geo_service.store import ATTRIBUTION_KEY

T = TypeVar("T")


class OsmIndexProvider:
    name = "osm"

    def __init__(self, loader: IndexLoader, threads: int, batch_threads: int = 1) -> None:
        self.loader = loader
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="geo-query") if threads else None
        # Batch lines have their own lane: a batch's chunks queued in the query threads made every
        # single lookup wait behind one (issue 55: 4-9 ms became a median of 125 ms).
        self.batch_pool = ThreadPoolExecutor(max_workers=batch_threads, thread_name_prefix="geo-batch")

    def index(self) -> LoadedIndex:
        loaded = self.loader.current()
        if loaded is None:
            raise GeocoderDatasetNotReady(self.loader.error or "the geocoder index is not loaded")
        return loaded

    def ready(self) -> bool:
        return self.loader.current() is not None

    def cache_token(self) -> str | None:
        loaded = self.loader.current()
        return loaded.hash if loaded else None

    def capabilities(self) -> dict[str, Any]:
        loaded = self.loader.current()
        operations = ["geocode", "reverse"]
        # An index written before autocomplete existed cannot answer it (until re-imported).
        if loaded is None or loaded.autocompleter.available:
            operations.append("autocomplete")
        return {
            "operations": operations,
            "resultTypes": list(RESULT_TYPES),
            "countries": loaded.countries if loaded else [],
            "dataset": loaded.hash if loaded else None,
            "counts": loaded.counts if loaded else {},
            "attribution": loaded.reader.meta.get(ATTRIBUTION_KEY) if loaded else None,
            # What the index covers, next to the routing map's coverage in /v1/providers.
            "importedAt": loaded.reader.meta.get("created") if loaded else None,
            "sources": list(loaded.reader.meta.get("inputs", [])) if loaded else [],
        }

    async def _run(self, function: Callable[[], T], pool: ThreadPoolExecutor | None = None) -> T:
        pool = pool or self.pool
        if pool is None:
            return function()
        return await asyncio.get_running_loop().run_in_executor(pool, function)

    async def geocode(self, query: GeocodeQuery) -> GeocodeAnswer:
        matcher = self.index().matcher
        return await self._run(lambda: matcher.geocode(query))

    async def reverse(self, query: ReverseQuery) -> GeocodeAnswer:
        matcher = self.index().matcher
        return await self._run(lambda: matcher.reverse(query))

    async def answer_many(self, queries: Sequence[GeocodeQuery | ReverseQuery]) -> tuple[list[GeocodeAnswer], float]:
        """Many lookups in one hop to the batch lane's thread. A batch's lines asked one hop each paid a
        thread switch apiece: 10 000 lines on the merged map took 14.7 s that way and 7.9 s
        without the pool (bench/geocoder_batch.py)."""
        matcher = self.index().matcher

        def answer_all() -> tuple[list[GeocodeAnswer], float]:
            began = time.thread_time()
            answers = [matcher.reverse(q) if isinstance(q, ReverseQuery) else matcher.geocode(q) for q in queries]
            return answers, time.thread_time() - began

        return await self._run(answer_all, self.batch_pool)

    async def autocomplete(self, query: AutocompleteQuery) -> list[GeocodeResult]:
        autocompleter = self.index().autocompleter
        if not autocompleter.available:
            raise GeocoderDatasetNotReady(
                "the geocoder index predates autocomplete: run python -m geo_service.importing"
            )
        return await self._run(lambda: autocompleter.complete(query))

    def translations(self, language: str) -> dict[str, str]:
        return self.index().reader.translations(language)

    def close(self) -> None:
        for pool in (self.pool, self.batch_pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self.loader.close()
