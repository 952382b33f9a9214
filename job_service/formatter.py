"""A job as JSON: its state, progress and times, and when it succeeded its result, inline and
byte for byte what the synchronous call answered (spliced in, never parsed again)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from job_service.model import FINISHED, QUEUED, RUNNING, SUCCEEDED, Job


def job_path(job_id: str) -> str:
    return f"/v1/jobs/{job_id}"


def iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def progress(job: Job) -> dict[str, Any]:
    """queued (with its place in the queue) → running → done; a fraction where it is known."""
    if job.status == QUEUED:
        return {"stage": "queued", "fraction": 0.0, "queuePosition": job.queue_position}
    if job.status == RUNNING:
        return {"stage": "running", "fraction": None}
    return {"stage": "done", "fraction": 1.0}


def job_fields(job: Job, result_ttl_seconds: int) -> dict[str, Any]:
    expires = job.finished + result_ttl_seconds if job.finished is not None else None
    fields: dict[str, Any] = {
        "id": job.id,
        "operation": job.operation,
        "status": job.status,
        "progress": progress(job),
        "attempts": job.attempts,
        "createdAt": iso(job.created),
        "startedAt": iso(job.started),
        "finishedAt": iso(job.finished) if job.status in FINISHED else None,
        "expiresAt": iso(expires) if job.status in FINISHED else None,
        "location": job_path(job.id),
    }
    if job.status == SUCCEEDED:
        fields["resultLocation"] = job_path(job.id) + "/result"
    if job.error is not None:
        fields["error"] = job.error
    return fields


def job_body(job: Job, result_ttl_seconds: int) -> bytes:
    return orjson.dumps(job_fields(job, result_ttl_seconds))


def embeds_result(job: Job) -> bool:
    """A JSON result is part of the job's answer; any other is read at its resultLocation."""
    return job.status == SUCCEEDED and "json" in job.result_type


async def with_result(job: Job, result_ttl_seconds: int, result: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The job's JSON with its result as `result`, in chunks as the result is read. Its first
    chunk is read before anything is given, so a store that refuses is still an error answer."""
    first = await anext(result, b"")
    yield job_body(job, result_ttl_seconds)[:-1] + b',"result":' + first
    async for chunk in result:
        yield chunk
    yield b"}"


def jobs_body(jobs: list[Job], result_ttl_seconds: int) -> bytes:
    return orjson.dumps({"jobs": [job_fields(job, result_ttl_seconds) for job in jobs]})


def answer(body: bytes, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A job answer already serialized (job_body, jobs_body)."""
    return web.Response(body=body, status=status, content_type="application/json", headers=headers)


def streamed(content_type: str) -> web.StreamResponse:
    """An answer written as its result is read (common.streaming)."""
    return web.StreamResponse(headers={"Content-Type": content_type})
