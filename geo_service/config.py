"""Configuration of the geocoding service, from the environment (see `BaseConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from common.config import BaseConfig, env_int, env_str

MAX_ADDRESS_CHARS = 500


@dataclass
class GeoConfig(BaseConfig):
    # None: `<data_dir>/geo` (see `index_dir`).
    index_dir_override: Path | None = None
    # Threads running index queries, each with its own read-only SQLite connection;
    # 0 runs them on the event loop (measured in bench/geocoder.py).
    query_threads: int = 2
    cache_seconds: int = 3600
    # How often a service without an index (or with an old one) looks at current.json again.
    reload_check_seconds: int = 1

    @property
    def index_dir(self) -> Path:
        return self.index_dir_override if self.index_dir_override is not None else self.data_dir / "geo"

    @classmethod
    def from_env(cls, service: str = "geo_service", **overrides: Any) -> Self:
        index_dir = env_str("GEO_INDEX_DIR", "")
        values: dict[str, Any] = {
            "index_dir_override": Path(index_dir) if index_dir else None,
            "query_threads": env_int("GEO_QUERY_THREADS", 2),
            "cache_seconds": env_int("GEO_CACHE_SECONDS", 3600),
            "reload_check_seconds": env_int("GEO_RELOAD_CHECK_SECONDS", 1),
        }
        values.update(overrides)
        config = super().from_env(service, **values)
        if config.query_threads < 0:
            raise SystemExit("configuration error: GEO_QUERY_THREADS must be 0 or more")
        return config
