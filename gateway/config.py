"""Gateway settings, from the environment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from common.config import BaseConfig, env_float, env_int, env_str
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


@dataclass
class GatewayConfig(BaseConfig):
    upstreams: dict[str, str] = field(default_factory=dict)
    jwt_issuer: str = "routing-api"
    jwt_audience: str = "routing-api"
    jwks_url: str = ""
    jwks_refresh_seconds: float = 300.0
    # Tolerated clock skew between the auth service and the gateway.
    jwt_leeway_seconds: float = 5.0
    revocation_cache_seconds: float = 5.0
    rate_limits: dict[str, RateLimit] = field(default_factory=lambda: parse_rate_limits(DEFAULT_RATE_LIMITS))
    upstream_timeout_seconds: float = 30.0
    # The detour upload is the largest body; services enforce their own, smaller limits.
    max_body_bytes: int = 16 << 20
    cors_allowed_origins: tuple[str, ...] = (DEFAULT_CORS_ORIGINS,)
    map_tile_url: str = DEFAULT_MAP_TILE_URL
    map_tile_attribution: str = DEFAULT_MAP_TILE_ATTRIBUTION
    max_connections_per_client: int = DEFAULT_MAX_CONNECTIONS_PER_CLIENT
    queued_concurrency: int = DEFAULT_QUEUED_CONCURRENCY  # 0: no arrival queue
    # The proxies (addresses, CIDR blocks) whose X-Forwarded-For names the client: the Ingress
    # controller's pods. Empty: the connection's peer is the client (gateway.client_address).
    trusted_proxies: tuple[IPNetwork, ...] = ()
    # How refusals (401, 429) of a client that keeps asking are held (gateway.pacing).
    refusal_pacing: PacingRule = field(default_factory=PacingRule)

    @classmethod
    def from_env(cls, service: str = "gateway", **overrides: Any) -> Self:
        upstreams = {name: env_str(var, "").rstrip("/") for name, var in UPSTREAM_ENV.items()}
        auth_url = upstreams.get("auth_service", "")
        values: dict[str, Any] = {
            "upstreams": {name: url for name, url in upstreams.items() if url},
            "jwt_issuer": env_str("JWT_ISSUER", "routing-api"),
            "jwt_audience": env_str("JWT_AUDIENCE", "routing-api"),
            "jwks_url": env_str("JWKS_URL", f"{auth_url}/.well-known/jwks.json" if auth_url else ""),
            "jwks_refresh_seconds": env_float("JWKS_REFRESH_SECONDS", 300.0),
            "jwt_leeway_seconds": env_float("JWT_LEEWAY_SECONDS", 5.0),
            "revocation_cache_seconds": env_float("REVOCATION_CACHE_SECONDS", 5.0),
            "rate_limits": parse_rate_limits(env_str("RATE_LIMITS", DEFAULT_RATE_LIMITS)),
            "upstream_timeout_seconds": env_float("UPSTREAM_TIMEOUT_SECONDS", 30.0),
            "max_body_bytes": env_int("GATEWAY_MAX_BODY_BYTES", 16 << 20),
            "cors_allowed_origins": parse_origins(env_str("CORS_ALLOWED_ORIGINS", DEFAULT_CORS_ORIGINS)),
            "map_tile_url": env_str("MAP_TILE_URL", DEFAULT_MAP_TILE_URL).strip(),
            "map_tile_attribution": env_str("MAP_TILE_ATTRIBUTION", DEFAULT_MAP_TILE_ATTRIBUTION),
            "trusted_proxies": parse_trusted_proxies(env_str("TRUSTED_PROXIES", "")),
            "refusal_pacing": parse_pacing_rule(env_str("GATEWAY_REFUSAL_PACING", "20/10/1")),
            "queued_concurrency": max(0, env_int("GATEWAY_QUEUED_CONCURRENCY", DEFAULT_QUEUED_CONCURRENCY)),
            "max_connections_per_client": max(
                0, env_int("GATEWAY_MAX_CONNECTIONS_PER_CLIENT", DEFAULT_MAX_CONNECTIONS_PER_CLIENT)
            ),
        }
        values.update(overrides)
        return super().from_env(service, **values)
