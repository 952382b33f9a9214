"""Configuration of the geocoding service, from the environment (see `BaseConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from common.config import BaseConfig, optional_path, setting

MAX_ADDRESS_CHARS = 500


@dataclass
class GeoConfig(BaseConfig):
    SERVICE: ClassVar[str] = "geo_service"
    # None: `<data_dir>/geo` (see `index_dir`).
    index_dir_override: Path | None = setting("GEO_INDEX_DIR", "", parse=optional_path)
    # Threads running index queries, each with its own read-only SQLite connection;
    # 0 runs them on the event loop (measured in bench/geocoder.py).
    query_threads: int = setting("GEO_QUERY_THREADS", 2, at_least=0)
    # Threads answering batch lines, apart from the query threads (geo_service.providers.osm).
    batch_threads: int = setting("GEO_BATCH_THREADS", 1, at_least=1)
    # Threads reading batch bodies, shared by accounts one each (common.pools.SharedThreads).
    parse_threads: int = setting("GEO_PARSE_THREADS", 2, at_least=1)
    cache_seconds: int = setting("GEO_CACHE_SECONDS", 3600)
    # How often a service without an index (or with an old one) looks at current.json again.
    reload_check_seconds: int = setting("GEO_RELOAD_CHECK_SECONDS", 1)

    @property
    def index_dir(self) -> Path:
        return self.index_dir_override if self.index_dir_override is not None else self.data_dir / "geo"
