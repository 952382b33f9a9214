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

from common.service import CACHE_REDIS_KEY
from geo_service.cache import AnswerCache, autocomplete_parts, geocode_parts, reverse_parts
from geo_service.config import GeoConfig
from geo_service.formatter import response_json
from geo_service.index import IndexLoader
from geo_service.model import AutocompleteQuery, GeocodeAnswer, GeocodeQuery, ReverseQuery
from geo_service.parsing import ProviderRequest
from geo_service.providers import DEFAULT_PROVIDER, GeocodeProvider, OsmIndexProvider, ProviderRegistry

log = logging.getLogger("geo_service")
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


GEOCODE = Operation[GeocodeQuery]("geocode", lambda provider, query: provider.geocode(query), geocode_parts)
REVERSE = Operation[ReverseQuery]("reverse", lambda provider, query: provider.reverse(query), reverse_parts)
AUTOCOMPLETE = Operation[AutocompleteQuery]("autocomplete", answer_autocomplete, autocomplete_parts)


@dataclass
class GeoState:
    registry: ProviderRegistry
    answers: AnswerCache

    async def answer[Q](self, operation: Operation[Q], request: ProviderRequest[Q]) -> dict[str, Any]:
        """The answer's JSON: cached, else asked of the request's provider and formatted."""
        provider, query = request.provider, request.query

        async def compute() -> dict[str, Any]:
            answer = await operation.call(provider, query)
            return response_json(answer.results, provider.name, answer.notes)

        return await self.answers.answer(operation.name, provider, operation.key_parts(query), compute)

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
        registry = ProviderRegistry([OsmIndexProvider(loader, config.query_threads)], default=DEFAULT_PROVIDER)
        app[STATE_KEY] = GeoState(registry, AnswerCache(app[CACHE_REDIS_KEY], config.cache_seconds))
        yield
        await asyncio.to_thread(registry.close)

    return context


async def index_health(app: web.Application) -> dict[str, Any]:
    return app[STATE_KEY].index_health()
