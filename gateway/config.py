"""Gateway settings, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

from common.config import BaseConfig, setting
from gateway.client_address import IPNetwork, parse_trusted_proxies
from gateway.pacing import PacingRule, parse_pacing_rule

# service name -> env var holding its base URL; empty means "not deployed" (503).
UPSTREAM_ENV = {
    "auth_service": "AUTH_SERVICE_URL",
    "geo_service": "GEO_SERVICE_URL",
    "route_service": "ROUTE_SERVICE_URL",
    "optimize_service": "OPTIMIZE_SERVICE_URL",
    "job_service": "JOB_SERVICE_URL",
}

DEFAULT_RATE_LIMITS = "anonymous=5/20,demo=2/10,standard=50/100,unlimited=0/0"
# Web pages of any origin may call the API with a token (gateway.cors says why that is safe).
DEFAULT_CORS_ORIGINS = "*"
# The /map demo page's background tiles: an XYZ URL template (`{z}`, `{x}`, `{y}`, optionally
# `{s}` and `{r}`); empty: no background, the page draws the data's outline and answers alone.
DEFAULT_MAP_TILE_URL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
DEFAULT_MAP_TILE_ATTRIBUTION = "© OpenStreetMap contributors"
# Connections one client address may hold open at once (per gateway process); a browser opens
# at most 6 per host, so 64 leaves room for offices behind one NAT address. Behind a proxy every
# connection comes from the proxy: set 0 there and cap clients at the proxy.
DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 64
# Requests of a queued route (GET /v1/route) one gateway process forwards to its service at once;
# the others wait in arrival order. 8 keeps 2 route workers busy (about 4 each); raise it with
# more route service replicas behind one gateway (common.client.ArrivalQueue says why).
DEFAULT_QUEUED_CONCURRENCY = 8


@dataclass(frozen=True)
class RateLimit:
    """GCRA: `rate` requests per second sustained, bursts of `burst`; rate 0 = unlimited."""

    rate: float
    burst: int

    @property
    def unlimited(self) -> bool:
        return self.rate <= 0


def parse_origins(text: str) -> tuple[str, ...]:
    """CORS_ALLOWED_ORIGINS: `*`, or origins separated by commas (`https://app.example.com`);
    empty: no browser page elsewhere may call the API."""
    return tuple(origin.strip().rstrip("/") for origin in text.split(",") if origin.strip())


def parse_rate_limits(text: str) -> dict[str, RateLimit]:
    limits: dict[str, RateLimit] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            tier, spec = item.split("=", 1)
            rate, burst = spec.split("/", 1)
            limits[tier.strip()] = RateLimit(float(rate), int(burst))
        except ValueError as exc:
            raise SystemExit(f"configuration error: RATE_LIMITS item {item!r} is not tier=rate/burst") from exc
    return limits


def upstreams_from_env() -> dict[str, str]:
    """The deployed services' base URLs, from UPSTREAM_ENV; a service without one is not deployed."""
    urls = {name: os.environ.get(variable, "").rstrip("/") for name, variable in UPSTREAM_ENV.items()}
    return {name: url for name, url in urls.items() if url}


@dataclass
class GatewayConfig(BaseConfig):
    SERVICE: ClassVar[str] = "gateway"
    upstreams: dict[str, str] = field(default_factory=upstreams_from_env)
    jwt_issuer: str = setting("JWT_ISSUER", "routing-api")
    jwt_audience: str = setting("JWT_AUDIENCE", "routing-api")
    # Empty: the auth service's keys, when it is deployed (`__post_init__`).
    jwks_url: str = setting("JWKS_URL", "")
    jwks_refresh_seconds: float = setting("JWKS_REFRESH_SECONDS", 300.0)
    # Tolerated clock skew between the auth service and the gateway.
    jwt_leeway_seconds: float = setting("JWT_LEEWAY_SECONDS", 5.0)
    revocation_cache_seconds: float = setting("REVOCATION_CACHE_SECONDS", 5.0)
    rate_limits: dict[str, RateLimit] = setting("RATE_LIMITS", DEFAULT_RATE_LIMITS, parse=parse_rate_limits)
    upstream_timeout_seconds: float = setting("UPSTREAM_TIMEOUT_SECONDS", 30.0)
    # The detour upload is the largest body; services enforce their own, smaller limits.
    max_body_bytes: int = setting("GATEWAY_MAX_BODY_BYTES", 16 << 20)
    cors_allowed_origins: tuple[str, ...] = setting("CORS_ALLOWED_ORIGINS", DEFAULT_CORS_ORIGINS, parse=parse_origins)
    map_tile_url: str = setting("MAP_TILE_URL", DEFAULT_MAP_TILE_URL, parse=str.strip)
    map_tile_attribution: str = setting("MAP_TILE_ATTRIBUTION", DEFAULT_MAP_TILE_ATTRIBUTION)
    max_connections_per_client: int = setting(
        "GATEWAY_MAX_CONNECTIONS_PER_CLIENT", DEFAULT_MAX_CONNECTIONS_PER_CLIENT, low=0
    )
    # 0: no arrival queue.
    queued_concurrency: int = setting("GATEWAY_QUEUED_CONCURRENCY", DEFAULT_QUEUED_CONCURRENCY, low=0)
    # The proxies (addresses, CIDR blocks) whose X-Forwarded-For names the client: the Ingress
    # controller's pods. Empty: the connection's peer is the client (gateway.client_address).
    trusted_proxies: tuple[IPNetwork, ...] = setting("TRUSTED_PROXIES", "", parse=parse_trusted_proxies)
    # How refusals (401, 429) of a client that keeps asking are held (gateway.pacing).
    refusal_pacing: PacingRule = setting("GATEWAY_REFUSAL_PACING", "20/10/1", parse=parse_pacing_rule)

    def __post_init__(self) -> None:
        if not self.jwks_url and "auth_service" in self.upstreams:
            self.jwks_url = f"{self.upstreams['auth_service']}/.well-known/jwks.json"
