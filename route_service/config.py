"""Configuration of the route service, from the environment (see `BaseConfig`).

MAP_DIR                 maps directory holding `current.json` and `<hash>/` datasets (default <data_dir>/maps)
ROUTE_THREADS           threads running provider calls (default 2)
ROUTE_CACHE_TTL_SECONDS lifetime of cached route answers in Redis, 0 disables the cache (default 3600)
ROUTE_PRELOAD           1: open every OSRM dataset, and start the large-call children, at start-up;
                        0: on first use (default 1)
ROUTE_RELOAD_CHECK_SECONDS
                        how often `current.json` is read: a new dataset named there goes into service
                        without a restart (default 1, the geocoder's GEO_RELOAD_CHECK_SECONDS too)
ROUTE_INLINE_PROVIDERS  comma-separated providers called on the event loop, not in the pool (default osrm)
ROUTE_SERVICE_WORKERS   processes serving the port (default: 2 on a machine with 2 or more cores, else 1)
ROUTE_LARGE_PROCESSES   child processes per worker for large OSRM calls (matrices of 20 000 cells or more,
                        routes through 150 waypoints or more); 0 runs them in the worker (default 1)
ROUTE_LARGE_NICE        niceness added to those child processes, so small requests come first (default 10)
ROUTE_MATRIX_CELLS      cells (sources x destinations) one POST /v1/matrix may ask, per account tier, as
                        `tier=cells,...` (default demo=1000,standard=10000,unlimited=1000000); a tier not
                        listed, or a request without the gateway's tier header, gets the smallest
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from common.config import BaseConfig, optional_path, setting
from common.tiers import DEFAULT_MATRIX_CELLS, TierLimits, parse_tier_limits

# The per-tier limits live together in common/tiers.py; a matrix's is a `TierLimits`.
MatrixLimits = TierLimits


def parse_matrix_cells(text: str) -> MatrixLimits:
    """Cells per public matrix request, by the tier the gateway forwards (`X-Internal-Tier`).
    Unlimited is still bounded by the 1000 x 1000 sides (`parsing.MAX_MATRIX_SIDE`): a
    1000 x 1000 table takes OSRM 1.3 s and ~130 MiB (`route_service.calls`)."""
    return parse_tier_limits("ROUTE_MATRIX_CELLS", text)


def names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names, blanks left out."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def default_workers() -> int:
    """Two processes where there are two cores: OSRM holds the GIL for a whole route, so one
    process routes on one core at a time (cold path +10-57 % req/s with two, bench/RESULTS.md).
    Not more: the map files are shared (mmap), but the gateway and Redis need CPU too."""
    return min(2, os.cpu_count() or 1)


@dataclass
class RouteConfig(BaseConfig):
    SERVICE: ClassVar[str] = "route_service"
    workers: int = setting("{SERVICE}_WORKERS", factory=default_workers, low=1)
    # None: `<data_dir>/maps` (see `maps_path`).
    map_dir: Path | None = setting("MAP_DIR", "", parse=optional_path)
    threads: int = setting("ROUTE_THREADS", 2, low=1)
    cache_ttl_seconds: int = setting("ROUTE_CACHE_TTL_SECONDS", 3600, low=0)
    preload: bool = setting("ROUTE_PRELOAD", True)
    reload_check_seconds: float = setting("ROUTE_RELOAD_CHECK_SECONDS", 1.0, low=0.1)
    # OSRM holds the GIL for its whole call, so the pool only adds overhead for it (measured).
    inline_providers: tuple[str, ...] = setting("ROUTE_INLINE_PROVIDERS", "osrm", parse=names)
    # OSRM holds the GIL: a 1000x1000 table (1.3 s) would stall the worker (route_service.calls).
    large_processes: int = setting("ROUTE_LARGE_PROCESSES", 1, low=0)
    large_niceness: int = setting("ROUTE_LARGE_NICE", 10, low=0, high=19)
    matrix_limits: TierLimits = setting("ROUTE_MATRIX_CELLS", DEFAULT_MATRIX_CELLS, parse=parse_matrix_cells)

    @property
    def maps_path(self) -> Path:
        return self.map_dir if self.map_dir is not None else self.data_dir / "maps"
