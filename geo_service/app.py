"""The geocoding service's aiohttp application."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from common.service import CACHE_REDIS_KEY, HEALTH_CHECKS_KEY, base_app
from geo_service.cache import AnswerCache
from geo_service.config import GeoConfig
from geo_service.handlers import ANSWERS_KEY, REGISTRY_KEY, autocomplete, geocode, providers, reverse
from geo_service.index import IndexLoader
from geo_service.providers import DEFAULT_PROVIDER, OsmIndexProvider, ProviderRegistry

log = logging.getLogger("geo_service")
CleanupContext = Callable[[web.Application], AsyncIterator[None]]


def providers_context(config: GeoConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        loader = IndexLoader(config.index_dir, config.reload_check_seconds)
        # Opening reads meta and trigram counts: off the loop, like every other index access.
        await asyncio.to_thread(loader.refresh)
        if loader.loaded is None:
            log.warning("geocoder not ready: %s", loader.error)
        registry = ProviderRegistry([OsmIndexProvider(loader, config.query_threads)], default=DEFAULT_PROVIDER)
        app[REGISTRY_KEY] = registry
        app[ANSWERS_KEY] = AnswerCache(app[CACHE_REDIS_KEY], config.cache_seconds)
        yield
        await asyncio.to_thread(registry.close)

    return context


async def index_health(app: web.Application) -> dict[str, Any]:
    registry = app[REGISTRY_KEY]
    provider = registry.providers[registry.default]
    assert isinstance(provider, OsmIndexProvider)
    loaded = provider.loader.current()
    if loaded is None:
        return {"geocoder_index": "missing", "geocoder_error": provider.loader.error, "ready": False}
    return {"geocoder_index": "loaded", "dataset": loaded.hash, "counts": loaded.counts}


def create_app(config: GeoConfig) -> web.Application:
    app = base_app(config, with_cache=True)
    app.cleanup_ctx.append(providers_context(config))
    app[HEALTH_CHECKS_KEY].append(index_health)
    app.router.add_get("/v1/geocoder", geocode)
    app.router.add_get("/v1/geocoder/reverse", reverse)
    app.router.add_get("/v1/geocoder/autocomplete", autocomplete)
    app.router.add_get("/internal/providers", providers)
    return app
