"""Configuration of the optimize service, from the environment (see `BaseConfig`).

ROUTE_SERVICE_URL                 the route service's matrix and tour geometry (default http://127.0.0.1:8083)
OPTIMIZE_SOLVER_PROCESSES         processes solving large problems (the large lane); 0 runs both lanes in threads
                                  of the service (tests; OR-Tools then stalls the event loop while it searches);
                                  with 2 or more, each request runs two searches at once (default: CPUs, at most 4)
OPTIMIZE_SMALL_PROCESSES          processes solving small problems (the small lane: exact ones and searches of at
                                  most OPTIMIZE_SMALL_SECONDS), never behind a large one (default: CPUs, at most 2)
OPTIMIZE_SMALL_SECONDS            estimated solver seconds up to which a problem is small (default 1.0: up to
                                  ~120 stops at the default time limit)
OPTIMIZE_LARGE_NICE               niceness added to the large lane's processes, so small problems get the CPU first
                                  (default 10)
OPTIMIZE_QUEUE_SIZE               large requests that may wait behind the one solving; one more → 503
                                  OPTIMIZE_ERROR_BUSY with Retry-After (default 4)
OPTIMIZE_QUEUE_SECONDS            most estimated solver seconds a request may find ahead of it plus its own, in
                                  either lane; more → 503 OPTIMIZE_ERROR_BUSY (default 40; the gateway waits 60)
OPTIMIZE_ROUTE_TIMEOUT_SECONDS    per call to the route service (default 50; the gateway gives up after 60)
OPTIMIZE_TIME_LIMITS              most `timeLimit` seconds per account tier, as `tier=seconds,...` (default in
                                  common/tiers.py: demo=2,standard=10,unlimited=30); more → 400, a default above
                                  it is cut to it (optimize_service.costs)
ROUTE_MATRIX_CELLS                the tiers' matrix cells (as the route service reads them): a synchronous request's
                                  road matrix may have no more (demo 31 stops, standard 100, unlimited 1000);
                                  larger ones run as jobs (?async=true)
COST_BUDGETS                      the tiers' work-unit budgets each request is charged from (common.admission)
REDIS_URL                         the state Redis: the accounts' budgets and heavy slots (admission fails open
                                  without it)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from common.config import BaseConfig, setting
from common.tiers import DEFAULT_MATRIX_CELLS, DEFAULT_OPTIMIZE_SECONDS, TierLimits, parse_tier_limits

DEFAULT_ROUTE_SERVICE_URL = "http://127.0.0.1:8083"


def default_solver_processes() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def default_small_processes() -> int:
    """Two where there are two cores: a small problem's two searches run at once, as before."""
    return max(1, min(2, os.cpu_count() or 1))


@dataclass
class OptimizeConfig(BaseConfig):
    SERVICE: ClassVar[str] = "optimize_service"
    route_service_url: str = setting("ROUTE_SERVICE_URL", DEFAULT_ROUTE_SERVICE_URL)
    solver_processes: int = setting("OPTIMIZE_SOLVER_PROCESSES", factory=default_solver_processes, low=0)
    small_processes: int = setting("OPTIMIZE_SMALL_PROCESSES", factory=default_small_processes, low=1)
    small_lane_seconds: float = setting("OPTIMIZE_SMALL_SECONDS", 1.0, low=0)
    large_niceness: int = setting("OPTIMIZE_LARGE_NICE", 10, low=0, high=19)
    queue_size: int = setting("OPTIMIZE_QUEUE_SIZE", 4, low=0)
    queue_seconds: float = setting("OPTIMIZE_QUEUE_SECONDS", 40.0, low=1)
    route_timeout_seconds: float = setting("OPTIMIZE_ROUTE_TIMEOUT_SECONDS", 50.0)
    # 1000 stops as JSON with long names fit; the gateway allows 2 MiB as well.
    max_body_bytes: int = 2 << 20
    time_limits: TierLimits = setting("OPTIMIZE_TIME_LIMITS", DEFAULT_OPTIMIZE_SECONDS, parse_named=parse_tier_limits)
    matrix_cells: TierLimits = setting("ROUTE_MATRIX_CELLS", DEFAULT_MATRIX_CELLS, parse_named=parse_tier_limits)
