"""The geocoding service's state and the policy of its answers (the handlers only parse, call
and respond): the providers it serves, and how an answer is given (from the cache, else asked
of the provider and formatted, and cached behind the answer).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from common.admission import Admission, Caller, parse_cost_budgets
from common.errors import ApiError, BatchWorkSpent
from common.pools import SharedThreads
from common.service import CACHE_REDIS_KEY, REDIS_KEY
from geo_service.analysis import cache_parts
from geo_service.batch import BatchLine, LineAnswer, LineResult, ParsedBatch, decode, line_error, parse_batch
from geo_service.cache import AnswerCache, autocomplete_parts, reverse_parts
from geo_service.config import GeoConfig
from geo_service.formatter import response_json
from geo_service.index import IndexLoader
from geo_service.model import AutocompleteQuery, GeocodeAnswer, GeocodeQuery, ReverseQuery
from geo_service.names import names_in
from geo_service.parsing import BatchRequest, ProviderRequest
from geo_service.providers import DEFAULT_PROVIDER, GeocodeProvider, OsmIndexProvider, ProviderRegistry

log = logging.getLogger("geo_service")
# A batch's lines not in the cache are asked of the provider BATCH_CHUNK at a time (one thread
# hop for the lot: a hop per line doubled a lookup's time), one chunk of a batch at a time in
# the batch lane (GEO_BATCH_THREADS), so batches of several accounts take turns chunk by chunk
# and single lookups keep the query threads.
BATCH_CHUNK = 32
BATCH_CHUNKS_IN_FLIGHT = 1
CleanupContext = Callable[[web.Application], AsyncIterator[None]]


@dataclass(frozen=True)
class Operation[Q]:
    """One geocoder operation: its name in cache keys, how a provider answers it, and what of
    its query decides the answer (the cache key's parts)."""

    name: str
    call: Callable[[GeocodeProvider, Q], Awaitable[GeocodeAnswer]]
    key_parts: Callable[[Q], tuple[Any, ...]]


async def answer_autocomplete(provider: GeocodeProvider, query: AutocompleteQuery) -> GeocodeAnswer:
    return GeocodeAnswer(await provider.autocomplete(query))


GEOCODE = Operation[GeocodeQuery]("geocode", lambda provider, query: provider.geocode(query), cache_parts)
REVERSE = Operation[ReverseQuery]("reverse", lambda provider, query: provider.reverse(query), reverse_parts)
AUTOCOMPLETE = Operation[AutocompleteQuery]("autocomplete", answer_autocomplete, autocomplete_parts)
LineFound = dict[str, Any] | ApiError  # a batch line's answer JSON, or its request's violations


def key_parts[Q](operation: Operation[Q], request: ProviderRequest[Q]) -> tuple[Any, ...]:
    """What of a request decides its answer: the operation's query parts and the names' language."""
    return (*operation.key_parts(request.query), request.language)


def operation_of(query: GeocodeQuery | ReverseQuery) -> Operation[Any]:
    return REVERSE if isinstance(query, ReverseQuery) else GEOCODE


@dataclass
class GeoState:
    registry: ProviderRegistry
    answers: AnswerCache
    admission: Admission  # what a batch costs its account (common.admission)
    readers: SharedThreads  # where batch bodies are read, one at a time per account

    async def parse_batch(self, caller: Caller | None, body: bytes, request: BatchRequest) -> ParsedBatch:
        """The batch's lines, read in a thread of the readers' (stopped when the client goes)."""
        return await self.readers.run(
            caller.account if caller else "",
            lambda stop: parse_batch(decode(body), request.form, request.max_lines, stop),
        )

    async def answer[Q](self, operation: Operation[Q], request: ProviderRequest[Q]) -> dict[str, Any]:
        """The answer's JSON: cached, else asked of the request's provider and formatted."""
        provider, query, language = request.provider, request.query, request.language

        async def compute() -> dict[str, Any]:
            answer = await operation.call(provider, query)
            results = answer.results
            if language is not None:
                results = names_in(results, language, provider.translations)
            return response_json(results, provider.name, answer.notes, language)

        return await self.answers.answer(operation.name, provider, key_parts(operation, request), compute)

    async def answer_batch(self, request: BatchRequest, parsed: ParsedBatch, most_s: float = 0.0) -> tuple[list[LineAnswer], float]:
        """Every line's answer, in the batch's order: the geocoder's answer to the line's request
        (cached like a single one), or the line's error; and the CPU seconds of the lookups. Lines
        alike (the same kind and parameters: address lists repeat) are asked once. Once the
        lookups took `most_s` (0: no bound), the lines left are not looked up (their error says so)."""
        alike = {line.same_as: line for line in parsed.lines}
        asked, lookups_s = await self.ask_lines(request, list(alike.values()), most_s)
        answers: list[LineAnswer] = [*parsed.errors]
        for line in parsed.lines:
            found = asked[line.same_as]
            answers.append(line_error(line, found) if isinstance(found, ApiError) else LineResult(line, found))
        return sorted(answers, key=lambda answer: answer.line), lookups_s

    async def ask_lines(self, request: BatchRequest, lines: list[BatchLine], most_s: float) -> tuple[dict[tuple[str, ...], LineFound], float]:
        """Each line's answer JSON or its request's violations, and the lookups' CPU seconds: from
        the cache, the rest asked of the provider BATCH_CHUNK lines at a time. A provider that cannot answer (5xx) fails the
        batch, which is then retried whole."""
        found: dict[tuple[str, ...], LineFound] = {}
        asked: list[tuple[BatchLine, ProviderRequest[Any], str | None]] = []
        for line in lines:
            try:
                line_request = request.line_request(line)
            except ApiError as exc:
                if exc.status >= 500:
                    raise
                found[line.same_as] = exc
                continue
            operation = operation_of(line_request.query)
            asked.append(
                (
                    line,
                    line_request,
                    self.answers.key(operation.name, line_request.provider, key_parts(operation, line_request)),
                )
            )
        stored = await asyncio.gather(*(self.answers.stored(key) for _, _, key in asked))
        misses = [
            (line, line_request, key)
            for (line, line_request, key), value in zip(asked, stored, strict=True)
            if value is None
        ]
        found |= {line.same_as: value for (line, _, _), value in zip(asked, stored, strict=True) if value is not None}
        in_flight = asyncio.Semaphore(BATCH_CHUNKS_IN_FLIGHT)
        lookups_s = 0.0

        async def ask(chunk: list[tuple[BatchLine, ProviderRequest[Any], str | None]]) -> None:
            nonlocal lookups_s
            async with in_flight:
                if most_s and lookups_s >= most_s:
                    spent = BatchWorkSpent(f"not looked up: the lines before it took {lookups_s:.1f} CPU-s, "
                                           f"all the work one request of the account's tier may cost; send it in another batch")  # fmt: skip
                    found.update((line.same_as, spent) for line, _, _ in chunk)
                    return
                provider = chunk[0][1].provider
                answers, cpu_s = await provider.answer_many([line_request.query for _, line_request, _ in chunk])
                lookups_s += cpu_s
            for (line, _, key), answer in zip(chunk, answers, strict=True):
                found[line.same_as] = answer_json = response_json(answer.results, provider.name, answer.notes)
                self.answers.keep(key, answer_json)

        await asyncio.gather(*(ask(misses[i : i + BATCH_CHUNK]) for i in range(0, len(misses), BATCH_CHUNK)))
        return found, lookups_s

    def index_health(self) -> dict[str, Any]:
        provider = self.registry.providers[self.registry.default]
        assert isinstance(provider, OsmIndexProvider)
        loaded = provider.loader.current()
        if loaded is None:
            return {"geocoder_index": "missing", "geocoder_error": provider.loader.error, "ready": False}
        return {"geocoder_index": "loaded", "dataset": loaded.hash, "counts": loaded.counts}


STATE_KEY: web.AppKey[GeoState] = web.AppKey("geo_state", GeoState)


def state_context(config: GeoConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        loader = IndexLoader(config.index_dir, config.reload_check_seconds)
        # Opening reads meta and trigram counts: off the loop, like every other index access.
        await asyncio.to_thread(loader.refresh)
        if loader.loaded is None:
            log.warning("geocoder not ready: %s", loader.error)
        registry = ProviderRegistry([OsmIndexProvider(loader, config.query_threads, config.batch_threads)], default=DEFAULT_PROVIDER)
        admission = Admission(app[REDIS_KEY], parse_cost_budgets(config.cost_budgets))
        readers = SharedThreads("geo-batch-read", config.parse_threads)
        app[STATE_KEY] = GeoState(registry, AnswerCache(app[CACHE_REDIS_KEY], config.cache_seconds), admission, readers)
        yield
        readers.shutdown()
        await asyncio.to_thread(registry.close)

    return context


async def index_health(app: web.Application) -> dict[str, Any]:
    return app[STATE_KEY].index_health()
