"""Configuration of the job service, from the environment (see `BaseConfig`).

ROUTE_SERVICE_URL              where detour-file jobs are replayed (default http://127.0.0.1:8083)
GEO_SERVICE_URL                where geocoder-batch jobs are replayed (default http://127.0.0.1:8082)
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
JOB_RESULT_READS               results of finished jobs one account may read at once, per tier, as `tier=count,...`
                               (default in common/tiers.py: demo=1,standard=2,unlimited=4); beyond it 429
                               JOB_ERROR_TOO_MANY_RESULT_READS
JOB_RUNNING_PER_ACCOUNT        jobs one account may have running at once across every job-service process, the
                               others waiting their turn, round-robin between accounts (default 1: below the
                               default 2 runners, so another account's job always finds one; 0: no cap)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from common.config import BaseConfig, setting
from common.tiers import (
    DEFAULT_JOB_LIMITS,
    DEFAULT_JOB_RESULT_READS,
    DEFAULT_JOB_STORE_MIB,
    TierLimits,
    parse_tier_limits,
)

DEFAULT_ROUTE_SERVICE_URL = "http://127.0.0.1:8083"
DEFAULT_GEO_SERVICE_URL = "http://127.0.0.1:8082"
DEFAULT_OPTIMIZE_SERVICE_URL = "http://127.0.0.1:8084"


@dataclass
class JobConfig(BaseConfig):
    SERVICE: ClassVar[str] = "job_service"
    route_service_url: str = setting("ROUTE_SERVICE_URL", DEFAULT_ROUTE_SERVICE_URL)
    geo_service_url: str = setting("GEO_SERVICE_URL", DEFAULT_GEO_SERVICE_URL)
    optimize_service_url: str = setting("OPTIMIZE_SERVICE_URL", DEFAULT_OPTIMIZE_SERVICE_URL)
    concurrency: int = setting("JOB_CONCURRENCY", 2, low=1)
    job_limits: TierLimits = setting("JOB_LIMITS", DEFAULT_JOB_LIMITS, parse_named=parse_tier_limits)
    result_ttl_seconds: int = setting("JOB_RESULT_TTL_SECONDS", 86_400, low=60)
    lease_seconds: float = setting("JOB_LEASE_SECONDS", 15.0, low=1)
    max_attempts: int = setting("JOB_MAX_ATTEMPTS", 3, low=1)
    call_timeout_seconds: float = setting("JOB_CALL_TIMEOUT_SECONDS", 900.0, low=1)
    store_max_fraction: float = setting("JOB_STORE_MAX_FRACTION", 0.7, low=0.1, high=1)
    store_quotas: TierLimits = setting("JOB_STORE_QUOTAS", DEFAULT_JOB_STORE_MIB, parse_named=parse_tier_limits)
    max_result_mb: int = setting("JOB_MAX_RESULT_MB", 64, low=1)
    result_reads: TierLimits = setting("JOB_RESULT_READS", DEFAULT_JOB_RESULT_READS, parse_named=parse_tier_limits)
    running_per_account: int = setting("JOB_RUNNING_PER_ACCOUNT", 1, low=0)
    # How often an idle runner looks for queued jobs, and the reaper for expired leases.
    poll_seconds: float = 0.25
    # The largest body of the operations (a detour file or a geocoder batch, 16 MiB) and room for its headers.
    max_body_bytes: int = 17 << 20
