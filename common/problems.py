"""The wire formats of an error: how an `ApiError` is written for the caller, and read back.

Three bodies: the problem detail (RFC 9457, `application/problem+json`, the default), the
legacy one (`application/json`, for clients that accept only it) and the internal one, which
our own services ask for (`X-Internal-Errors: full`) so that the caller can rebuild the typed
error and pass it on (`read_internal_body`). The contract of the first two is the API's
(`../shared/API.md` beside the repository; `/v1/openapi.json` lists every error type).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from common.errors import ApiError, UpstreamError, Violation

PROBLEM_JSON = "application/problem+json"
LEGACY_JSON = "application/json"
# Service-to-service calls ask for this variant so the caller can rebuild the typed error.
INTERNAL_ERRORS_HEADER = "X-Internal-Errors"


def wants_legacy(accept: str | None) -> bool:
    """Legacy format only when `application/json` is acceptable and problem+json is not.

    q-values count: `q=0` means "not acceptable" (RFC 9110 §12.4.2), so
    `application/json;q=0` does not select the legacy format."""
    if not accept:
        return False
    weights = accepted_media_types(accept)
    return weights.get(LEGACY_JSON, 0.0) > 0 and weights.get(PROBLEM_JSON, 0.0) == 0


def accepted_media_types(accept: str) -> dict[str, float]:
    """Media type → its q-value (the highest when one is listed twice)."""
    weights: dict[str, float] = {}
    for item in accept.split(","):
        media_type, *params = (part.strip() for part in item.split(";"))
        if media_type:
            key = media_type.lower()
            weights[key] = max(weights.get(key, 0.0), quality(params))
    return weights


def quality(params: list[str]) -> float:
    """The q parameter, 1 when absent; a malformed one counts as absent (lenient)."""
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                q = float(value.strip())
            except ValueError:
                return 1.0
            return min(max(q, 0.0), 1.0) if math.isfinite(q) else 1.0
    return 1.0


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class RenderedError:
    status: int
    content_type: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def problem_body(error: ApiError, instance: str) -> dict[str, Any]:
    return {
        "status": error.status,
        "type": error.violations[0].type if error.violations else error.type,
        "title": error.title,
        "detail": error.detail,
        "timestamp": now_iso(),
        "instance": instance,
    }


def legacy_body(error: ApiError) -> dict[str, Any]:
    return {
        "status": error.status,
        "details": [{"code": v.code, "message": v.text()} for v in error.violations],
        "errors": [v.text() for v in error.violations],
    }


def internal_body(error: ApiError, instance: str) -> dict[str, Any]:
    """Everything, so a calling service can rebuild the typed error."""
    body = problem_body(error, instance)
    body["code"] = error.code
    body["violations"] = [
        {"parameter": v.parameter, "message": v.message, "code": v.code, "type": v.type} for v in error.violations
    ]
    return body


def render_error(error: ApiError, *, accept: str | None, instance: str, internal: bool = False) -> RenderedError:
    if internal:
        return RenderedError(error.status, PROBLEM_JSON, internal_body(error, instance), error.headers)
    if wants_legacy(accept):
        return RenderedError(error.status, LEGACY_JSON, legacy_body(error), error.headers)
    return RenderedError(error.status, PROBLEM_JSON, problem_body(error, instance), error.headers)


def read_internal_body(body: Mapping[str, Any]) -> UpstreamError:
    """The typed error another of our services answered in the internal format."""
    violations = [
        Violation(v.get("parameter"), str(v.get("message", "")), str(v.get("code", "")), str(v.get("type", "")))
        for v in body.get("violations", [])
    ]
    return UpstreamError(int(body.get("status", 502)), str(body.get("title", "Upstream error")), violations)
