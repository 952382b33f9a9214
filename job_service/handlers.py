"""HTTP handlers of the job service: read the request, call `Jobs`, answer. Errors are raised,
never formatted."""

from __future__ import annotations

from aiohttp import hdrs, web

from common.errors import Unauthorized
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from common.streaming import stream
from job_service.formatter import answer, embeds_result, job_body, job_path, jobs_body, streamed, with_result
from job_service.model import Account
from job_service.parsing import check_job_id, stored_request
from job_service.state import STATE_KEY


def account(request: web.Request) -> Account:
    """The caller, as the gateway forwards it; never from the client (the gateway drops such headers)."""
    subject = request.headers.get(INTERNAL_SUBJECT_HEADER, "")
    if not subject:
        raise Unauthorized("jobs belong to an account: call through the gateway with a token")
    return Account(subject, request.headers.get(INTERNAL_TIER_HEADER, ""))


async def submit(request: web.Request) -> web.Response:
    """POST /v1/optimize/routes|stops, /v1/detour/file, /v1/geocoder/batch with ?async=true:
    202, where to look and what it cost."""
    caller = account(request)
    stored = stored_request(
        request.path,
        list(request.query.items()),
        request.content_type,
        request.headers.get(hdrs.CONTENT_TYPE, ""),
        request.headers.get(hdrs.CONTENT_DISPOSITION, ""),
        await request.read(),
    )
    job, cost = await request.app[STATE_KEY].jobs.submit_priced(caller, stored)
    headers = {hdrs.LOCATION: job_path(job.id), **cost}
    return answer(job_body(job, request.app[STATE_KEY].result_ttl_seconds), status=202, headers=headers)


async def get_job(request: web.Request) -> web.StreamResponse:
    state, caller = request.app[STATE_KEY], account(request)
    job = await state.jobs.get(caller, check_job_id(request.match_info["job_id"]))
    if not embeds_result(job):
        return answer(job_body(job, state.result_ttl_seconds))
    async with state.jobs.reading(caller, job) as result:
        return await stream(request, streamed("application/json"), with_result(job, state.result_ttl_seconds, result))


async def get_result(request: web.Request) -> web.StreamResponse:
    """The result alone, with the synchronous call's Content-Type."""
    state, caller = request.app[STATE_KEY], account(request)
    job = await state.jobs.get(caller, check_job_id(request.match_info["job_id"]))
    async with state.jobs.reading(caller, job) as result:
        return await stream(request, streamed(job.result_type), result)


async def delete_job(request: web.Request) -> web.Response:
    job = await request.app[STATE_KEY].jobs.cancel(account(request), check_job_id(request.match_info["job_id"]))
    if job is None:
        return web.Response(status=204)
    return answer(job_body(job, request.app[STATE_KEY].result_ttl_seconds))


async def list_jobs(request: web.Request) -> web.Response:
    jobs = await request.app[STATE_KEY].jobs.list(account(request))
    return answer(jobs_body(jobs, request.app[STATE_KEY].result_ttl_seconds))
