"""The middlewares every app installs: request ids, errors in the caller's format (and the 204
of a job submission's price-only request, `common.admission.Priced`), and the request body's
guard (Content-Encoding, read timeout); and the headers every answer carries."""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from types import TracebackType

import orjson
from aiohttp import web
from aiohttp.http_exceptions import ContentEncodingError
from aiohttp.web_protocol import RequestPayloadError
from prometheus_client import Counter, Histogram

from common.admission import Priced
from common.errors import (
    ApiError,
    InternalError,
    MalformedBody,
    MethodNotAllowed,
    RequestTimeout,
    UnsupportedMediaType,
    error_for_status,
)
from common.logging import request_id_var
from common.problems import INTERNAL_ERRORS_HEADER, render_error

log = logging.getLogger("common.errors")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

REQUEST_ID_HEADER = "X-Request-ID"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# What aiohttp decodes, and "no encoding"; anything else would reach handlers still encoded.
ACCEPTED_CONTENT_ENCODINGS = frozenset({"", "identity", "gzip", "deflate"})
# Replaces aiohttp's `Python/3.x aiohttp/3.x` banner, which tells an attacker the versions.
SERVER_HEADER = "routing-api"
# nginx's convention for "the client closed the connection before the answer": only the
# metrics see it, nobody is left to receive it.
CLIENT_CLOSED_REQUEST = 499

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


def error_response(request: web.BaseRequest, error: ApiError) -> web.Response:
    """The error in the format the request asks for (its Accept and X-Internal-Errors headers)."""
    return render_response(
        error,
        accept=request.headers.get("Accept"),
        instance=str(request.rel_url),
        internal=request.headers.get(INTERNAL_ERRORS_HEADER) == "full",
    )


def render_response(error: ApiError, *, accept: str | None, instance: str, internal: bool = False) -> web.Response:
    rendered = render_error(error, accept=accept, instance=instance, internal=internal)
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


def set_standard_headers(headers: MutableMapping[str, str], status: int) -> None:
    """What every answer carries. `no-store` is the default: answers are per account and
    computed on live data; a handler whose answer may be kept says so itself. Errors are
    never stored, whatever a handler set."""
    headers["Server"] = SERVER_HEADER
    headers["X-Content-Type-Options"] = "nosniff"
    if status >= 400:
        headers["Cache-Control"] = "no-store"
    else:
        headers.setdefault("Cache-Control", "no-store")


async def standard_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` hook: runs for every answer of the app, errors included."""
    set_standard_headers(response.headers, response.status)
    if "request_id" in request:  # a streamed answer is sent before `request_context` sees it
        response.headers[REQUEST_ID_HEADER] = request["request_id"]


class BodyReadTimeout(TimeoutError):
    """Set on a request's body stream when the client stops sending it. A TimeoutError, so
    aiohttp's own reading after the answer (it drains an unread body) takes it as one."""


class BodyWatchdog:
    """Fails the body stream with BodyReadTimeout once `timeout` seconds pass without a byte
    from the client: a request announcing `Content-Length: 1000` and sending nothing would
    otherwise hold its handler and connection until the client gives up."""

    def __init__(self, request: web.Request, timeout: float) -> None:
        self._payload = request.content
        self._transport = request.transport
        self._timeout = timeout
        self._bytes_seen = 0
        self._timer: asyncio.TimerHandle | None = None

    def __enter__(self) -> BodyWatchdog:
        self._arm()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _arm(self) -> None:
        self._bytes_seen = self._payload.total_bytes
        self._timer = asyncio.get_running_loop().call_later(self._timeout, self._check)

    def _check(self) -> None:
        self._timer = None
        payload = self._payload
        if payload.is_eof() or payload.exception() is not None:
            return
        if payload.total_bytes > self._bytes_seen or not self._waiting_for_client():
            self._arm()
            return
        payload.set_exception(BodyReadTimeout(f"no byte of the body arrived for {self._timeout:g} s"))

    def _waiting_for_client(self) -> bool:
        # While reading is paused our buffer is full: the handler has yet to read, the client
        # is not to blame.
        return self._transport is not None and self._transport.is_reading()


def check_content_encoding(request: web.Request) -> None:
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ACCEPTED_CONTENT_ENCODINGS:
        raise UnsupportedMediaType(
            "send the body uncompressed, or compressed with gzip or deflate", parameter="Content-Encoding"
        )


def payload_error(request: web.Request, exc: RequestPayloadError) -> ApiError:
    """aiohttp's failure to read a body (it carries the parser's reason as its cause)."""
    if isinstance(exc.__cause__, ContentEncodingError):
        encoding = request.headers.get("Content-Encoding", "").strip().lower()
        return MalformedBody(f"the body is not valid {encoding} data, as its Content-Encoding header says")
    return MalformedBody("the body is incomplete or its chunked framing is broken")


def client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _route_label(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


def make_middlewares(
    service: str, *, body_timeout_seconds: float = 30.0
) -> list[Callable[..., Awaitable[web.StreamResponse]]]:
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
        except Priced as exc:  # charged, and no work done: what it cost is the whole answer
            return web.Response(status=204, headers=exc.headers)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return error_response(request, from_http_exception(exc))
        except BodyReadTimeout as exc:
            response = error_response(request, RequestTimeout(str(exc), parameter="body"))
            response.force_close()  # the rest of the body may still come: never read it as a request
            return response
        except RequestPayloadError as exc:
            return error_response(request, payload_error(request, exc))
        except Exception as exc:
            if isinstance(exc, ConnectionError) and client_gone(request):
                log.info("the client closed the connection during %s %s", request.method, request.path)
                return web.Response(status=CLIENT_CLOSED_REQUEST)
            log.exception("unhandled error on %s %s", request.method, request.path)
            return error_response(
                request, InternalError("an internal error occurred; quote the X-Request-ID when reporting it")
            )

    @web.middleware
    async def body_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.body_exists:
            return await handler(request)
        check_content_encoding(request)
        if body_timeout_seconds <= 0:  # turned off
            return await handler(request)
        with BodyWatchdog(request, body_timeout_seconds):
            return await handler(request)

    return [request_context, errors, body_guard]
