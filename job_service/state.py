"""The job service's state: the job store, the jobs' rules and this process's runner.

Large requests as jobs (docs/decisions.md, "Asynchronous jobs"): the three operations with
`?async=true` are priced and charged by their owning service (issue 55: a job over the tier's
cap or beyond its budget is refused at submission), stored in the state Redis
(`job_service.store`) and answered 202 at once;
this process's runner (`job_service.runner`) replays them, `JOB_CONCURRENCY` at a time (one
account's at most `JOB_RUNNING_PER_ACCOUNT` at once, accounts served round-robin), against the
service that owns the operation (`job_service.replay`). Each account's jobs hold at most its
tier's quota of the store (`JOB_STORE_QUOTAS`), a result at most `JOB_MAX_RESULT_MB`. Its own Redis client waits longer
than the shared one: a job's request or result is up to a few MB, not a rate-limit counter.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from common.client import ServiceClient
from common.redis import ResilientRedis
from common.service import REDIS_KEY
from job_service.config import JobConfig
from job_service.jobs import MIB, Jobs, Limits
from job_service.replay import Replayer
from job_service.runner import Runner, RunnerSettings
from job_service.store import JobStore


@dataclass
class JobState:
    jobs: Jobs
    runner: Runner
    # How long a finished job is kept (JOB_RESULT_TTL_SECONDS): every job answer says it.
    result_ttl_seconds: int


STATE_KEY: web.AppKey[JobState] = web.AppKey("job_state", JobState)

log = logging.getLogger("job_service")
CleanupContext = Callable[[web.Application], AsyncIterator[None]]
# A job's request or result in one Redis command: seconds, not the shared client's 0.25.
JOB_REDIS_TIMEOUT_SECONDS = 5.0


def service_clients(config: JobConfig) -> dict[str, ServiceClient]:
    urls = {"route_service": config.route_service_url, "optimize_service": config.optimize_service_url,
            "geo_service": config.geo_service_url}  # fmt: skip
    labels = {"route_service": "routing service", "optimize_service": "optimization service",
              "geo_service": "geocoding service"}  # fmt: skip
    return {
        name: ServiceClient(
            labels[name], url, timeout=config.call_timeout_seconds, internal_token=config.internal_token
        )
        for name, url in urls.items()
    }


def limits(config: JobConfig) -> Limits:
    return Limits(config.job_limits, store_mib=config.store_quotas, reads=config.result_reads)


def runner_settings(config: JobConfig) -> RunnerSettings:
    return RunnerSettings(
        config.concurrency,
        config.lease_seconds,
        config.max_attempts,
        config.poll_seconds,
        max_result_bytes=config.max_result_mb * MIB,
        limits=limits(config),
    )


def state_context(config: JobConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        redis = ResilientRedis(config.redis_url, timeout=JOB_REDIS_TIMEOUT_SECONDS)
        app[REDIS_KEY] = redis
        store = JobStore(redis, result_ttl_seconds=config.result_ttl_seconds,
                         max_memory_fraction=config.store_max_fraction,
                         running_per_account=config.running_per_account)  # fmt: skip
        clients = service_clients(config)
        replayer = Replayer(clients, config.call_timeout_seconds)
        runner = Runner(store, replayer, runner_settings(config))
        jobs = Jobs(store, limits(config), on_submit=runner.wake.set, price=replayer.price)
        app[STATE_KEY] = JobState(jobs, runner, config.result_ttl_seconds)
        runner.start()
        log.info("running up to %d jobs at once, leases of %g s", config.concurrency, config.lease_seconds)
        yield
        await runner.stop()
        for client in clients.values():
            await client.close()
        await redis.close()

    return context


def runner_health(app: web.Application) -> Any:
    async def check(_: web.Application) -> dict[str, Any]:
        state = app.get(STATE_KEY)
        return {"jobsRunning": len(state.runner.running) if state else 0}

    return check
