"""The geocoding service's aiohttp application."""

from __future__ import annotations

from aiohttp import web

from common.service import HEALTH_CHECKS_KEY, base_app
from geo_service.config import GeoConfig
from geo_service.handlers import autocomplete, batch, geocode, providers, reverse
from geo_service.state import index_health, state_context


def create_app(config: GeoConfig) -> web.Application:
    app = base_app(config, with_cache=True)
    app.cleanup_ctx.append(state_context(config))
    app[HEALTH_CHECKS_KEY].append(index_health)
    app.router.add_get("/v1/geocoder", geocode)
    app.router.add_get("/v1/geocoder/reverse", reverse)
    app.router.add_get("/v1/geocoder/autocomplete", autocomplete)
    app.router.add_post("/v1/geocoder/batch", batch)
    app.router.add_get("/internal/providers", providers)
    return app
