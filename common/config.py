"""Configuration from environment variables, shared by every service.

Each service has its own `config.py` with a dataclass built on `BaseConfig`; values come
from the environment so a process can be started alone (`python -m route_service`) or by
the launcher, docker compose or a test with different ports.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Self

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
# request (a 1000-stop optimization at its default 8 s on two cores is ~16 000 units). Unlimited:
# the API's largest request, a 100 000-line geocoder batch job at 8 units a line (800 000).
DEFAULT_COST_BUDGETS = "anonymous=200/20/400/1,demo=5000/50/10000/1,standard=60000/500/60000/2,unlimited=1000000/0/0/8"


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return default if raw is None or raw == "" else parse_int(name, raw)


def parse_int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError as exc:
        raise SystemExit(f"configuration error: {name}={raw!r} is not an integer") from exc


def parse_float(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError as exc:
        raise SystemExit(f"configuration error: {name}={raw!r} is not a number") from exc


def data_dir() -> Path:
    """Where services keep their state (accounts, keys, map data); `var/` in the repo by default."""
    return Path(os.environ.get("DATA_DIR", str(REPO_ROOT / "var"))).resolve()


def optional_path(text: str) -> Path | None:
    """A path variable whose empty value means "the default place" (a property then chooses it)."""
    return Path(text) if text else None


@dataclass(frozen=True)
class Setting:
    """How one configuration field is read from the environment: the variable (`{SERVICE}` is
    the service's name in capitals), how its text becomes the value, and the bounds the value is
    clamped to (`low`, `high`) or refused outside (`at_least`, `at_most`: the process stops)."""

    variable: str
    parse: Callable[[str, str], Any] | None = None  # (variable, text) -> value; None: the default's type
    low: float | None = None
    high: float | None = None
    at_least: float | None = None
    at_most: float | None = None
    by_service: Mapping[str, Any] | None = None  # a default per service (ports)

    def name_for(self, service: str) -> str:
        return self.variable.replace("{SERVICE}", service.upper())

    def read(self, service: str, default: Any) -> Any:
        """The value for `service`: the variable's, else the default, within the bounds."""
        name = self.name_for(service)
        raw = os.environ.get(name)
        if self.by_service is not None:
            default = self.by_service.get(service, default)
        if raw is None or (raw == "" and self.parse is None and not isinstance(default, str)):
            value = default
        elif self.parse is not None:
            value = self.parse(name, raw)
        elif isinstance(default, bool):
            value = parse_int(name, raw) != 0
        elif isinstance(default, int):
            value = parse_int(name, raw)
        elif isinstance(default, float):
            value = parse_float(name, raw)
        else:
            value = raw
        return self.clamped(value)

    def clamped(self, value: Any) -> Any:
        """A value from the environment, brought within `low` and `high`."""
        if self.low is not None:
            value = max(type(value)(self.low), value)
        if self.high is not None:
            value = min(type(value)(self.high), value)
        return value

    def check(self, service: str, value: Any) -> None:
        """Stops the process when a value (from the environment or given) is outside `at_least`
        and `at_most`."""
        below = self.at_least is not None and value < self.at_least
        above = self.at_most is not None and value > self.at_most
        if not (below or above):
            return
        name = self.name_for(service)
        if self.at_most is None:
            raise SystemExit(f"configuration error: {name} must be at least {self.at_least}")
        raise SystemExit(f"configuration error: {name} must be between {self.at_least} and {self.at_most}")


def setting(
    variable: str,
    default: Any = MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    parse: Callable[[str], Any] | None = None,
    parse_named: Callable[[str, str], Any] | None = None,
    secret: bool = False,
    **bounds: Any,
) -> Any:
    """A configuration field read from `variable`, its default written here once.

    With `parse` (or `parse_named`, which also gets the variable's name for its messages) the
    default is the variable's text, parsed like a value from the environment."""
    parser: Callable[[str, str], Any] | None = parse_named
    if parse is not None:
        parser = lambda _name, text: parse(text)  # noqa: E731 - one line, one job
    metadata = {"setting": Setting(variable, parser, **bounds)}
    if parser is not None and default is not MISSING:
        text, name = str(default), variable
        return field(default_factory=lambda: parser(name, text), metadata=metadata, repr=not secret)
    if factory is not None:
        return field(default_factory=factory, metadata=metadata, repr=not secret)
    return field(default=default, metadata=metadata, repr=not secret)


@dataclass
class BaseConfig:
    service: str = "service"
    host: str = setting("{SERVICE}_HOST", "127.0.0.1")
    port: int = setting("{SERVICE}_PORT", 0, by_service=DEFAULT_PORTS)
    # The state Redis: rate limits, revocations; run with noeviction (docs/decisions.md). The
    # password travels in the URL (`redis://:PASSWORD@host:port/0`): out of the repr, as it is
    # out of every log line (common.redis.redacted).
    redis_url: str = setting("REDIS_URL", DEFAULT_REDIS_URL, secret=True)
    # The cache Redis (route and geocoder answers), run with allkeys-lru; empty: caches share
    # `redis_url`, whose operator then chooses the eviction policy.
    redis_cache_url: str = setting("REDIS_CACHE_URL", "", secret=True)
    log_level: str = setting("LOG_LEVEL", "INFO")
    data_dir: Path = field(default_factory=data_dir)  # DATA_DIR
    # Largest request body the service reads, in bytes.
    max_body_bytes: int = 1 << 20
    # Processes serving the port together (SO_REUSEPORT).
    workers: int = setting("{SERVICE}_WORKERS", 1, low=1)
    # A client that has begun a request's headers, or is sending its body, and then sends
    # nothing for this long gets a 408 (0 turns the check off).
    header_timeout_seconds: float = setting("HEADER_READ_TIMEOUT_SECONDS", 30.0)
    body_timeout_seconds: float = setting("BODY_READ_TIMEOUT_SECONDS", 30.0)
    # The secret every internal call carries (see common.internal_auth). Empty only for apps
    # built in-process (tests): `run()` refuses to start a process without it.
    internal_token: str = setting("INTERNAL_TOKEN", "", secret=True)
    # INTERNAL_AUTH=off: a process may start without INTERNAL_TOKEN, for development only.
    internal_auth_off: bool = setting("INTERNAL_AUTH", "", parse=lambda text: text == "off")
    # A connection idle this long (between requests, or silent since it opened) is closed:
    # above a proxy's upstream keep-alive (nginx Ingress: 60 s) and the services' client pools
    # (15 s), so neither sends on a connection being closed.
    idle_timeout_seconds: float = setting("IDLE_TIMEOUT_SECONDS", 75.0)
    # Connections one client address may hold at once on this port (0: no cap). Only the
    # gateway's public port sets one (GatewayConfig); a service's clients are our own pools.
    max_connections_per_client: int = 0
    # Work-unit budgets per tier (common.admission): what services charge heavy requests, and
    # what the gateway's /v1/account shows.
    cost_budgets: str = setting("COST_BUDGETS", DEFAULT_COST_BUDGETS)

    # The service a subclass configures, when `from_env` is not told another.
    SERVICE: ClassVar[str] = "service"

    @classmethod
    def from_env(cls, service: str | None = None, **overrides: Any) -> Self:
        """Every field that names a variable (`setting`) read for `service`; `overrides` win."""
        service = service or cls.SERVICE
        values: dict[str, Any] = {"service": service}
        for spec in fields(cls):
            rule = spec.metadata.get("setting")
            if rule is None or spec.name in overrides:
                continue
            values[spec.name] = rule.read(service, field_default(spec))
        known = {spec.name for spec in fields(cls)}
        values.update({name: value for name, value in overrides.items() if name in known})
        config = cls(**values)
        for spec in fields(cls):
            if "setting" in spec.metadata:
                spec.metadata["setting"].check(service, getattr(config, spec.name))
        config.validate()
        return config

    def validate(self) -> None:
        """Rules between fields; one field's own bounds are its `setting`'s."""

    @classmethod
    def variables(cls, service: str) -> dict[str, str]:
        """The variables this configuration reads for `service`, by field name."""
        return {
            spec.name: spec.metadata["setting"].name_for(service) for spec in fields(cls) if "setting" in spec.metadata
        }


def field_default(spec: Field[Any]) -> Any:
    if spec.default is not MISSING:
        return spec.default
    if spec.default_factory is not MISSING:
        return spec.default_factory()
    raise TypeError(f"configuration field {spec.name} has no default")
