"""HTTP handlers of the job service: read the request, call `Jobs`, answer. Errors are raised,
never formatted."""

from __future__ import annotations

from aiohttp import hdrs, web

from common.errors import Unauthorized
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from job_service.formatter import job_body, job_path, jobs_body
from job_service.jobs import Jobs
from job_service.model import Account
from job_service.submission import check_job_id, stored_request

JOBS_KEY: web.AppKey[Jobs] = web.AppKey("jobs", Jobs)
RESULT_TTL_KEY: web.AppKey[int] = web.AppKey("result_ttl", int)


def account(request: web.Request) -> Account:
    """The caller, as the gateway forwards it; never from the client (the gateway drops such headers)."""
    subject = request.headers.get(INTERNAL_SUBJECT_HEADER, "")
    if not subject:
        raise Unauthorized("jobs belong to an account: call through the gateway with a token")
    return Account(subject, request.headers.get(INTERNAL_TIER_HEADER, ""))


def answer(body: bytes, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json", headers=headers)


async def submit(request: web.Request) -> web.Response:
    """POST /v1/optimize/routes|stops, /v1/detour/file with ?async=true: 202 and where to look."""
    caller = account(request)
    stored = stored_request(
        request.path,
        list(request.query.items()),
        request.content_type,
        request.headers.get(hdrs.CONTENT_TYPE, ""),
        request.headers.get(hdrs.CONTENT_DISPOSITION, ""),
        await request.read(),
    )
    job = await request.app[JOBS_KEY].submit(caller, stored)
    location = job_path(job.id)
    return answer(job_body(job, request.app[RESULT_TTL_KEY]), status=202, headers={hdrs.LOCATION: location})


async def get_job(request: web.Request) -> web.Response:
    job, result = await request.app[JOBS_KEY].view(account(request), check_job_id(request.match_info["job_id"]))
    return answer(job_body(job, request.app[RESULT_TTL_KEY], result))


async def get_result(request: web.Request) -> web.Response:
    """The result alone, with the synchronous call's Content-Type."""
    job, result = await request.app[JOBS_KEY].result(account(request), check_job_id(request.match_info["job_id"]))
    return web.Response(body=result, headers={hdrs.CONTENT_TYPE: job.result_type})


async def delete_job(request: web.Request) -> web.Response:
    job = await request.app[JOBS_KEY].cancel(account(request), check_job_id(request.match_info["job_id"]))
    if job is None:
        return web.Response(status=204)
    return answer(job_body(job, request.app[RESULT_TTL_KEY]))


async def list_jobs(request: web.Request) -> web.Response:
    jobs = await request.app[JOBS_KEY].list(account(request))
    return answer(jobs_body(jobs, request.app[RESULT_TTL_KEY]))
