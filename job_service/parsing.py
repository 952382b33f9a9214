"""A submitted request checked before it is stored: `async=true`, and a body the synchronous
operation could read at all (JSON for the optimizations, text for a detour file or a geocoder batch). Everything
else is the owning service's to check when the job runs: its 4xx becomes the job's error."""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson

from common.errors import InvalidParameter, MalformedBody, NotFound, UnsupportedMediaType
from job_service.model import BY_PATH, Operation, StoredRequest

ASYNC_PARAMETER = "async"
JSON_TYPES = ("application/json",)
# uuid4().hex: anything else cannot name a job, and is not looked up.
JOB_ID = re.compile(r"^[0-9a-f]{32}$")


def check_async(values: Sequence[str]) -> None:
    """The gateway sends here only requests with `async` other than false."""
    if len(values) != 1 or values[0].lower() != "true":
        shown = ", ".join(repr(v[:20]) for v in values) or "nothing"
        raise InvalidParameter(
            f"must be true (a job) or false (the synchronous answer), once, got {shown}", parameter=ASYNC_PARAMETER
        )


def operation_at(path: str) -> Operation:
    found = BY_PATH.get(path.rstrip("/"))
    if found is None:
        raise NotFound(f"no operation at {path} may run as a job")
    return found


def check_body(operation: Operation, content_type: str, body: bytes) -> None:
    accepted = JSON_TYPES if operation.json_body else operation.text_types
    if content_type not in accepted and not (operation.json_body and content_type.endswith("+json")):
        raise UnsupportedMediaType(
            f"send the body as {' or '.join(accepted)}, as for the synchronous operation, not {content_type[:80]!r}",
            parameter="Content-Type",
        )
    if operation.json_body:
        try:
            orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise MalformedBody(f"the body is not valid JSON: {exc}") from exc


def stored_request(
    path: str, query: Sequence[tuple[str, str]], content_type: str, full_content_type: str, disposition: str,
    body: bytes,
) -> StoredRequest:  # fmt: skip
    """The request to keep, `async` left out; `full_content_type` keeps a charset for the replay."""
    operation = operation_at(path)
    check_async([value for name, value in query if name == ASYNC_PARAMETER])
    check_body(operation, content_type, body)
    kept = [(name, value) for name, value in query if name != ASYNC_PARAMETER]
    return StoredRequest(operation.name, full_content_type or content_type, body, kept, disposition)


def check_job_id(job_id: str) -> str:
    if not JOB_ID.match(job_id):
        raise NotFound("no such job")
    return job_id
