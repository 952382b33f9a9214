"""The job service's aiohttp application (its state, store and runner: job_service.state)."""

from __future__ import annotations

from aiohttp import web

from common.service import HEALTH_CHECKS_KEY, base_app
from job_service.config import JobConfig
from job_service.handlers import delete_job, get_job, get_result, list_jobs, submit
from job_service.model import OPERATIONS
from job_service.state import runner_health, state_context


def create_app(config: JobConfig) -> web.Application:
    app = base_app(config, with_redis=False)
    app.cleanup_ctx.append(state_context(config))
    app[HEALTH_CHECKS_KEY].append(runner_health(app))
    for operation in OPERATIONS:
        app.router.add_post(operation.path, submit)
    app.router.add_get("/v1/jobs", list_jobs)
    app.router.add_get("/v1/jobs/{job_id}", get_job)
    app.router.add_delete("/v1/jobs/{job_id}", delete_job)
    app.router.add_get("/v1/jobs/{job_id}/result", get_result)
    return app
