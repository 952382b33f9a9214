"""The two middlewares every app installs: request ids, then errors in the caller's format."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web
from prometheus_client import Counter, Histogram

from common.errors import (
    INTERNAL_ERRORS_HEADER,
    ApiError,
    InternalError,
    MethodNotAllowed,
    error_for_status,
    render_error,
)
from common.logging import request_id_var

log = logging.getLogger("common.errors")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

REQUEST_ID_HEADER = "X-Request-ID"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

REQUESTS = Counter("http_requests_total", "HTTP requests served", ["service", "route", "method", "status"])
LATENCY = Histogram(
    "http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["service", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


def incoming_request_id(request: web.Request) -> str:
    """The client's id when it is safe to echo into logs and headers, else a fresh one."""
    candidate = request.headers.get(REQUEST_ID_HEADER, "")
    return candidate if _VALID_REQUEST_ID.match(candidate) else uuid.uuid4().hex


def error_response(request: web.Request, error: ApiError) -> web.Response:
    rendered = render_error(
        error,
        accept=request.headers.get("Accept"),
        instance=str(request.rel_url),
        internal=request.headers.get(INTERNAL_ERRORS_HEADER) == "full",
    )
    return web.Response(
        status=rendered.status,
        body=orjson.dumps(rendered.body),
        content_type=rendered.content_type,
        headers=rendered.headers,
    )


def from_http_exception(exc: web.HTTPException) -> ApiError:
    """aiohttp's own errors (404, 405, 413 …) in our types."""
    if isinstance(exc, web.HTTPMethodNotAllowed):
        return MethodNotAllowed(exc.method, list(exc.allowed_methods))
    error_cls = error_for_status(exc.status)
    message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else None
    return error_cls(message)


def _route_label(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


def make_middlewares(service: str) -> list[Callable[..., Awaitable[web.StreamResponse]]]:
    @web.middleware
    async def request_context(request: web.Request, handler: Handler) -> web.StreamResponse:
        request_id = incoming_request_id(request)
        request["request_id"] = request_id
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            response.headers[REQUEST_ID_HEADER] = request_id
            return response
        finally:
            route = request.get("route_label") or _route_label(request)
            REQUESTS.labels(service, route, request.method, str(status)).inc()
            LATENCY.labels(service, route).observe(time.perf_counter() - started)
            request_id_var.reset(token)

    @web.middleware
    async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(request, exc)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return error_response(request, from_http_exception(exc))
        except Exception:
            log.exception("unhandled error on %s %s", request.method, request.path)
            return error_response(
                request, InternalError("an internal error occurred; quote the X-Request-ID when reporting it")
            )

    return [request_context, errors]
