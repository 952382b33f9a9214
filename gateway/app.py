"""The gateway app factory."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from common.client import ServiceClient, upstream_connector
from common.service import REDIS_KEY, base_app
from gateway import docs, handlers, webpages
from gateway.config import GatewayConfig
from gateway.cors import CORS_KEY, CorsPolicy, add_cors_headers
from gateway.jwks import JWKS_TIMEOUT_SECONDS, JwksRefresher, jwks_credential
from gateway.ratelimit import RateLimiter
from gateway.revocation import RevocationChecker
from gateway.services import service_clients
from gateway.state import GATEWAY_KEY, GatewayState
from gateway.tokens import TokenVerifier
from gateway.usage import UsageCounter, flushing


def create_app(config: GatewayConfig) -> web.Application:
    app = base_app(config, health_handler=handlers.health, internal=False)  # public: JWTs are checked instead

    async def gateway_context(app: web.Application) -> AsyncIterator[None]:
        session = aiohttp.ClientSession(
            connector=upstream_connector(512),
            auto_decompress=False,
        )
        verifier = TokenVerifier(config.jwt_issuer, config.jwt_audience, leeway_seconds=config.jwt_leeway_seconds)
        keys = ServiceClient(
            "JWKS endpoint",
            config.jwks_url,
            timeout=JWKS_TIMEOUT_SECONDS,
            session=session,
            internal_token=jwks_credential(config),
        )
        jwks = JwksRefresher(keys, verifier, refresh_seconds=config.jwks_refresh_seconds)
        redis = app[REDIS_KEY]
        usage = UsageCounter(redis)
        app[GATEWAY_KEY] = GatewayState(
            services=service_clients(config, session),
            verifier=verifier,
            jwks=jwks,
            rate_limiter=RateLimiter(redis, config.rate_limits),
            revocations=RevocationChecker(redis, config.revocation_cache_seconds),
            usage=usage,
        )
        await jwks.start()
        async for _ in flushing(usage):
            yield
        await jwks.stop()
        await session.close()

    app.cleanup_ctx.append(gateway_context)
    app[CORS_KEY] = CorsPolicy.of(config.cors_allowed_origins)
    app.on_response_prepare.append(add_cors_headers)
    app.router.add_get("/v1/openapi.json", docs.openapi_json)
    app.router.add_get("/openapi.json", docs.openapi_json)
    app.router.add_get("/docs", docs.docs_page)
    webpages.add_routes(app, config)  # /map, /console and /static/…
    app.router.add_route("*", "/{tail:.*}", handlers.proxy)
    return app
