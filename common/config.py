"""Configuration from environment variables, shared by every service.

Each service has its own `config.py` with a dataclass built on `BaseConfig`; values come
from the environment so a process can be started alone (`python -m route_service`) or by
the launcher, docker compose or a test with different ports.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Self

REPO_ROOT = Path(__file__).resolve().parent.parent

DEFAULT_PORTS = {
    "gateway": 8080,
    "auth_service": 8081,
    "geo_service": 8082,
    "route_service": 8083,
    "optimize_service": 8084,
    "job_service": 8085,
}
DEFAULT_REDIS_URL = "redis://127.0.0.1:6390/0"
# tier=per_request/rate/burst/concurrent in work units (about a millisecond of one core each;
# common.admission). Standard: half a core sustained, a minute of one core at once and in one
# request (a 1000-stop optimization at its default 8 s on two cores is ~16 000 units).
DEFAULT_COST_BUDGETS = "anonymous=200/20/400/1,demo=5000/50/10000/1,standard=60000/500/60000/2,unlimited=600000/0/0/8"


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise SystemExit(f"configuration error: {name}={raw!r} is not an integer") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise SystemExit(f"configuration error: {name}={raw!r} is not a number") from exc


def data_dir() -> Path:
    """Where services keep their state (accounts, keys, map data); `var/` in the repo by default."""
    return Path(os.environ.get("DATA_DIR", str(REPO_ROOT / "var"))).resolve()


@dataclass
class BaseConfig:
    service: str = "service"
    host: str = "127.0.0.1"
    port: int = 0
    # The state Redis: rate limits, revocations; run with noeviction (docs/decisions.md). The
    # password travels in the URL (`redis://:PASSWORD@host:port/0`): out of the repr, as it is
    # out of every log line (common.redis.redacted).
    redis_url: str = field(default=DEFAULT_REDIS_URL, repr=False)
    # The cache Redis (route and geocoder answers), run with allkeys-lru; empty: caches share
    # `redis_url`, whose operator then chooses the eviction policy.
    redis_cache_url: str = field(default="", repr=False)
    log_level: str = "INFO"
    data_dir: Path = field(default_factory=data_dir)
    # Largest request body the service reads, in bytes.
    max_body_bytes: int = 1 << 20
    # Processes serving the port together (SO_REUSEPORT); `<SERVICE>_WORKERS`.
    workers: int = 1
    # A client that has begun a request's headers, or is sending its body, and then sends
    # nothing for this long gets a 408 (HEADER_READ_TIMEOUT_SECONDS, BODY_READ_TIMEOUT_SECONDS;
    # 0 turns the check off).
    header_timeout_seconds: float = 30.0
    body_timeout_seconds: float = 30.0
    # The secret every internal call carries (`INTERNAL_TOKEN`; see common.internal_auth). Empty
    # only for apps built in-process (tests): `run()` refuses to start a process without it.
    internal_token: str = field(default="", repr=False)
    # INTERNAL_AUTH=off: a process may start without INTERNAL_TOKEN, for development only.
    internal_auth_off: bool = False
    # A connection idle this long (between requests, or silent since it opened) is closed
    # (IDLE_TIMEOUT_SECONDS): above a proxy's upstream keep-alive (nginx Ingress: 60 s) and the
    # services' client pools (15 s), so neither sends on a connection being closed.
    idle_timeout_seconds: float = 75.0
    # Connections one client address may hold at once on this port (0: no cap). Only the
    # gateway's public port sets one (GatewayConfig); a service's clients are our own pools.
    max_connections_per_client: int = 0
    # Work-unit budgets per tier (COST_BUDGETS, common.admission): what services charge heavy
    # requests, and what the gateway's /v1/account shows.
    cost_budgets: str = DEFAULT_COST_BUDGETS

    @classmethod
    def from_env(cls, service: str, **overrides: Any) -> Self:
        prefix = service.upper() + "_"
        values: dict[str, Any] = {
            "service": service,
            "host": env_str(prefix + "HOST", "127.0.0.1"),
            "port": env_int(prefix + "PORT", DEFAULT_PORTS.get(service, 0)),
            "redis_url": env_str("REDIS_URL", DEFAULT_REDIS_URL),
            "redis_cache_url": env_str("REDIS_CACHE_URL", ""),
            "log_level": env_str("LOG_LEVEL", "INFO"),
            "data_dir": data_dir(),
            "workers": max(1, env_int(prefix + "WORKERS", 1)),
            "header_timeout_seconds": env_float("HEADER_READ_TIMEOUT_SECONDS", 30.0),
            "body_timeout_seconds": env_float("BODY_READ_TIMEOUT_SECONDS", 30.0),
            "internal_token": env_str("INTERNAL_TOKEN", ""),
            "internal_auth_off": env_str("INTERNAL_AUTH", "") == "off",
            "idle_timeout_seconds": env_float("IDLE_TIMEOUT_SECONDS", 75.0),
            "cost_budgets": env_str("COST_BUDGETS", DEFAULT_COST_BUDGETS),
        }
        known = {f.name for f in fields(cls)}
        values.update({k: v for k, v in overrides.items() if k in known})
        return cls(**values)
