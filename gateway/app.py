"""The gateway app factory."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Callable

import aiohttp
from aiohttp import web

from common.admission import Admission, parse_cost_budgets
from common.client import ServiceClient, upstream_connector
from common.http_server import UNCAPPED_CLIENTS_KEY
from common.service import REDIS_KEY, base_app
from gateway import docs, handlers, webpages
from gateway.client_address import TrustedProxies
from gateway.config import GatewayConfig
from gateway.cors import CORS_KEY, CorsPolicy, add_cors_headers
from gateway.jwks import JWKS_TIMEOUT_SECONDS, JwksRefresher, jwks_credential
from gateway.pacing import RefusalPacer
from gateway.ratelimit import RateLimiter
from gateway.revocation import RevocationChecker
from gateway.services import service_clients
from gateway.state import GATEWAY_KEY, GatewayState
from gateway.tokens import TokenVerifier
from gateway.usage import UsageCounter, flushing


def trusted_peer(proxies: TrustedProxies) -> Callable[[str], bool]:
    """Whether a connection's peer address is one of the trusted proxies."""

    def trusted(peer: str) -> bool:
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        # A dual-stack socket shows IPv4 peers as ::ffff:a.b.c.d; TRUSTED_PROXIES names them as IPv4.
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        return proxies.trusts(mapped or address)

    return trusted


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
            admission=Admission(redis, parse_cost_budgets(config.cost_budgets)),
            proxies=TrustedProxies(config.trusted_proxies),
            pacer=RefusalPacer(config.refusal_pacing),
        )
        await jwks.start()
        async for _ in flushing(usage):
            yield
        await jwks.stop()
        await session.close()

    app.cleanup_ctx.append(gateway_context)
    # The trusted proxies carry many clients' connections: the per-client cap is not theirs.
    app[UNCAPPED_CLIENTS_KEY] = trusted_peer(TrustedProxies(config.trusted_proxies))
    app[CORS_KEY] = CorsPolicy.of(config.cors_allowed_origins)
    app.on_response_prepare.append(add_cors_headers)
    app.router.add_get("/v1/openapi.json", docs.openapi_json)
    app.router.add_get("/openapi.json", docs.openapi_json)
    app.router.add_get("/docs", docs.docs_page)
    webpages.add_routes(app, config)  # /map, /console and /static/…
    app.router.add_route("*", "/{tail:.*}", handlers.proxy)
    return app
