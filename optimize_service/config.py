"""Configuration of the optimize service, from the environment (see `BaseConfig`).

ROUTE_SERVICE_URL                 the route service's matrix and tour geometry (default http://127.0.0.1:8083)
OPTIMIZE_SOLVER_PROCESSES         processes running the solver; 0 runs it in a thread of the service
                                  (tests; OR-Tools then stalls the event loop while it searches); with 2 or more,
                                  each request runs two searches at once (default: CPUs, at most 4)
OPTIMIZE_ROUTE_TIMEOUT_SECONDS    per call to the route service (default 50; the gateway gives up after 60)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Self

from common.config import BaseConfig, env_float, env_int, env_str

DEFAULT_ROUTE_SERVICE_URL = "http://127.0.0.1:8083"


def default_solver_processes() -> int:
    return max(1, min(4, os.cpu_count() or 1))


@dataclass
class OptimizeConfig(BaseConfig):
    route_service_url: str = DEFAULT_ROUTE_SERVICE_URL
    solver_processes: int = 1
    route_timeout_seconds: float = 50.0
    # 1000 stops as JSON with long names fit; the gateway allows 2 MiB as well.
    max_body_bytes: int = 2 << 20

    @classmethod
    def from_env(cls, service: str = "optimize_service", **overrides: Any) -> Self:
        values: dict[str, Any] = {
            "route_service_url": env_str("ROUTE_SERVICE_URL", DEFAULT_ROUTE_SERVICE_URL),
            "solver_processes": max(0, env_int("OPTIMIZE_SOLVER_PROCESSES", default_solver_processes())),
            "route_timeout_seconds": env_float("OPTIMIZE_ROUTE_TIMEOUT_SECONDS", 50.0),
        }
        values.update(overrides)
        return super().from_env(service, **values)
