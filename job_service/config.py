"""Configuration of the job service, from the environment (see `BaseConfig`).

ROUTE_SERVICE_URL              where detour-file jobs are replayed (default http://127.0.0.1:8083)
OPTIMIZE_SERVICE_URL           where optimization jobs are replayed (default http://127.0.0.1:8084)
JOB_CONCURRENCY                jobs this process runs at once (default 2: one per core of a small machine)
JOB_LIMITS                     jobs queued or running at once per account, by tier, as `tier=count,...`
                               (default in common/tiers.py: demo=1,standard=3,unlimited=10)
JOB_RESULT_TTL_SECONDS         how long a finished job (its result or error) is kept; then it is gone and
                               its id answers 404 (default 86400: 24 h)
JOB_LEASE_SECONDS              a running job's lease, renewed every third of it; a job whose lease ran out
                               (its process died) is queued again (default 15)
JOB_MAX_ATTEMPTS               times a job may be started before an interruption fails it (default 3)
JOB_CALL_TIMEOUT_SECONDS       the replayed call's timeout (default 900: far above a 20 000-line detour file)
JOB_STORE_MAX_FRACTION         share of the state Redis' maxmemory above which new jobs are refused with 503
                               (default 0.7: rate limits and revocations keep the rest)
JOB_STORE_QUOTAS               MiB of the store one account's jobs may hold (requests and results, compressed),
                               per tier, as `tier=MiB,...` (default in common/tiers.py: demo=8,standard=32,
                               unlimited=128); beyond it 429 JOB_ERROR_QUOTA_EXCEEDED
JOB_MAX_RESULT_MB              the largest result a job keeps, in MiB as the operation answered it; larger fails
                               the job with 413 JOB_ERROR_RESULT_TOO_LARGE (default 64)
JOB_RUNNING_PER_ACCOUNT        jobs one account may have running at once across every job-service process, the
                               others waiting their turn, round-robin between accounts (default 1: below the
                               default 2 runners, so another account's job always finds one; 0: no cap)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from common.config import BaseConfig, env_float, env_int, env_str
from common.tiers import DEFAULT_JOB_LIMITS, DEFAULT_JOB_STORE_MIB, TierLimits, parse_tier_limits

DEFAULT_ROUTE_SERVICE_URL = "http://127.0.0.1:8083"
DEFAULT_OPTIMIZE_SERVICE_URL = "http://127.0.0.1:8084"


@dataclass
class JobConfig(BaseConfig):
    route_service_url: str = DEFAULT_ROUTE_SERVICE_URL
    optimize_service_url: str = DEFAULT_OPTIMIZE_SERVICE_URL
    concurrency: int = 2
    job_limits: TierLimits = field(default_factory=lambda: parse_tier_limits("JOB_LIMITS", DEFAULT_JOB_LIMITS))
    result_ttl_seconds: int = 86_400
    lease_seconds: float = 15.0
    max_attempts: int = 3
    call_timeout_seconds: float = 900.0
    store_max_fraction: float = 0.7
    store_quotas: TierLimits = field(
        default_factory=lambda: parse_tier_limits("JOB_STORE_QUOTAS", DEFAULT_JOB_STORE_MIB)
    )
    max_result_mb: int = 64
    running_per_account: int = 1
    # How often an idle runner looks for queued jobs, and the reaper for expired leases.
    poll_seconds: float = 0.25
    # The largest body of the three operations (a detour file, 16 MiB) and room for its headers.
    max_body_bytes: int = 17 << 20

    @classmethod
    def from_env(cls, service: str = "job_service", **overrides: Any) -> Self:
        values: dict[str, Any] = {
            "route_service_url": env_str("ROUTE_SERVICE_URL", DEFAULT_ROUTE_SERVICE_URL),
            "optimize_service_url": env_str("OPTIMIZE_SERVICE_URL", DEFAULT_OPTIMIZE_SERVICE_URL),
            "concurrency": max(1, env_int("JOB_CONCURRENCY", 2)),
            "job_limits": parse_tier_limits("JOB_LIMITS", env_str("JOB_LIMITS", DEFAULT_JOB_LIMITS)),
            "result_ttl_seconds": max(60, env_int("JOB_RESULT_TTL_SECONDS", 86_400)),
            "lease_seconds": max(1.0, env_float("JOB_LEASE_SECONDS", 15.0)),
            "max_attempts": max(1, env_int("JOB_MAX_ATTEMPTS", 3)),
            "call_timeout_seconds": max(1.0, env_float("JOB_CALL_TIMEOUT_SECONDS", 900.0)),
            "store_max_fraction": min(1.0, max(0.1, env_float("JOB_STORE_MAX_FRACTION", 0.7))),
            "store_quotas": parse_tier_limits("JOB_STORE_QUOTAS", env_str("JOB_STORE_QUOTAS", DEFAULT_JOB_STORE_MIB)),
            "max_result_mb": max(1, env_int("JOB_MAX_RESULT_MB", 64)),
            "running_per_account": max(0, env_int("JOB_RUNNING_PER_ACCOUNT", 1)),
        }
        values.update(overrides)
        return super().from_env(service, **values)
