"""The HTTP server every service runs: aiohttp's, with its own refusals in our formats.

aiohttp answers what its parser refuses (a request line or header over 8 KiB, a bad
Content-Length, an invalid method, an unsupported Content-Encoding) itself, before any
middleware sees the request: in text/plain, repeating the client's bytes. Here its
per-connection protocol is subclassed so that those answers are our typed errors, rendered
like every other error; a client that starts a request's headers and stops gets a 408; and
the request target is normalised before routing (absolute-form to origin-form, trailing
slashes removed), so every service and the gateway route alike.

Connections are bounded too: a body left unread by an early answer (401, 404, 413, 429 …) is
never read further, let alone decompressed (aiohttp would drain it, a gzip bomb's gigabytes
included, to keep the connection): the answer says `Connection: close`, the rest of the
client's bytes are dropped unparsed for at most `UNREAD_BODY_LINGER_SECONDS` and
`UNREAD_BODY_DISCARD_BYTES`, and the connection is closed. A port may cap the connections one client address holds at once
(`max_connections_per_client`; beyond it a new connection is closed at once), and an idle
connection is closed after `keepalive_timeout` seconds (also one that never sent a byte). On a
public port (`PUBLIC_PORT_KEY`, the gateway's) a client's `X-Internal-*` headers are removed
before anything reads the request: they are ours to set, never a client's (all but the
credential, `X-Internal-Token`, which is checked where it matters: the gateway's /metrics).

The subclasses lean on aiohttp internals (`RequestHandler._messages`, `_waiter`, `_ErrInfo`,
`Server._kwargs`); tests/integration/test_hostile_http.py exercises each over raw sockets, so
an aiohttp upgrade that moves them fails there first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import (
    BadHttpMessage,
    BadHttpMethod,
    BadStatusLine,
    ContentEncodingError,
    HttpProcessingError,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
    PayloadEncodingError,
)
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD
from aiohttp.web_protocol import RequestHandler, RequestPayloadError, _ErrInfo
from aiohttp.web_request import BaseRequest
from multidict import CIMultiDict, CIMultiDictProxy
from prometheus_client import Counter as MetricCounter
from yarl import URL

from common.errors import (
    ApiError,
    InternalError,
    MalformedBody,
    MalformedRequest,
    RequestTimeout,
    UnsupportedMediaType,
    error_for_status,
)
from common.internal_auth import INTERNAL_TOKEN_HEADER
from common.middleware import error_response, render_response, set_standard_headers

log = logging.getLogger("common.http_server")

# The start of a request's head is kept until it parses, to find its Accept header when the
# parser refuses the request: the answer then comes in the format the client asked for.
HEAD_BYTES_KEPT = 64 * 1024
_ACCEPT_LINE = re.compile(rb"\r\naccept[ \t]*:[ \t]*([^\r\n]{0,1024})", re.IGNORECASE)
# A refused request's path is named in `instance` only when it is short and plainly a path.
_SAFE_TARGET = re.compile(rb"^[A-Z]{1,16} (/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,255})[ ?]")


# After an answer that left part of the body unread, the client's further bytes are dropped
# (not parsed) for at most this long before the connection is closed: closing at once, with
# bytes still unread, makes the kernel send a reset that may destroy the answer on its way
# (nginx's "lingering close" for the same reason). Ends as soon as the client closes.
UNREAD_BODY_LINGER_SECONDS = 2.0
# ... and at most this many bytes are dropped: past them the connection is closed at once (the
# answer may then be lost to a client that writes all before it reads). Dropping a 4 MiB gzip
# bomb's rest in full, at 550 bombs a second on loopback, cost the gateway one of two cores and
# raised another client's probe p50 from 4 to 19 ms (bench/isolation.py, 2026-11-26). Bodies up
# to this size still get their answer to such a client.
UNREAD_BODY_DISCARD_BYTES = 1 << 20
# Headers only our own services set (common.internal_auth); a public port drops a client's,
# except the credential (X-Internal-Token), which guards the gateway's /metrics.
INTERNAL_HEADER_PREFIX = "x-internal-"
# Set by `base_app(internal=False)`: the port faces clients, not our services.
PUBLIC_PORT_KEY: web.AppKey[bool] = web.AppKey("public_port", bool)
# Which client addresses the per-client connection cap leaves alone: the gateway's trusted
# proxies, whose connections carry many clients'.
UNCAPPED_CLIENTS_KEY: web.AppKey[Callable[[str], bool]] = web.AppKey("uncapped_clients")

CONNECTIONS_REFUSED = MetricCounter(
    "http_connections_refused_total", "Connections closed at once: their client address held too many"
)
UNREAD_BODIES = MetricCounter(
    "http_unread_bodies_total", "Answers sent before their request's body was read; the connection was closed"
)


class HeaderReadTimeout(TimeoutError):
    """A request's headers began to arrive and did not complete in time."""


# ---------------------------------------------------------------- the request target


def normalised_target(message: RawRequestMessage) -> RawRequestMessage:
    """One rule for every path: a trailing slash names the same resource (`/v1/route/` is
    `/v1/route`), and an absolute-form target (`POST http://example.com/v1/authenticate`,
    which RFC 9112 §3.2.2 says servers must accept) is served as its path and query."""
    url = message.url
    path = url.raw_path
    if not url.absolute and not path.startswith("/"):
        return message  # `OPTIONS *` and the like: routing refuses them as they are
    trimmed = path.rstrip("/") or "/"
    if trimmed == path and not url.absolute:
        return message
    target = URL.build(path=trimmed, query_string=url.raw_query_string, encoded=True)
    return message._replace(path=str(target), url=target)


def forged_header(name: str) -> bool:
    """An X-Internal-* header other than the credential itself, which is checked, not believed."""
    lowered = name.lower()
    return lowered.startswith(INTERNAL_HEADER_PREFIX) and lowered != INTERNAL_TOKEN_HEADER.lower()


def without_internal_headers(message: RawRequestMessage) -> RawRequestMessage:
    """The request without the client's `X-Internal-*` headers (a public port's requests)."""
    if not any(forged_header(name) for name in message.headers):
        return message
    kept = CIMultiDict((name, value) for name, value in message.headers.items() if not forged_header(name))
    raw = tuple((name, value) for name, value in message.raw_headers if not forged_header(name.decode("latin-1")))
    return message._replace(headers=CIMultiDictProxy(kept), raw_headers=raw)


# ---------------------------------------------------------------- refusals before any handler


def parser_error(exc: BaseException | None, max_line_size: int) -> ApiError | None:
    """The typed error for what aiohttp's parser refused; None when it is not a parser's.
    Messages name the fault, never the bytes: aiohttp's own repeat them."""
    if isinstance(exc, HeaderReadTimeout):
        return RequestTimeout(str(exc))
    if isinstance(exc, LineTooLong):
        return MalformedRequest(f"the request line or a header field is longer than {max_line_size} bytes")
    if isinstance(exc, BadHttpMethod):
        return MalformedRequest("the request method is unknown or malformed; this API answers GET, POST and OPTIONS")
    if isinstance(exc, BadStatusLine):
        return MalformedRequest("the request line is malformed; expected 'METHOD /path HTTP/1.1'")
    if isinstance(exc, InvalidURLError):
        return MalformedRequest("the request target is not a valid path")
    if isinstance(exc, InvalidHeader):
        return MalformedRequest("a header field is malformed")
    if isinstance(exc, ContentEncodingError):
        return content_encoding_error(exc)
    if isinstance(exc, PayloadEncodingError):
        return MalformedRequest("the body's framing (Content-Length or Transfer-Encoding) is broken")
    if isinstance(exc, BadHttpMessage):
        return MalformedRequest(f"the request's head is malformed: {parser_reason(exc)}")
    return None


def content_encoding_error(exc: ContentEncodingError) -> ApiError:
    # aiohttp tells "cannot decode this encoding at all" (br, zstd without their packages)
    # from "these bytes are not valid gzip/deflate" only in its message.
    if "install" in exc.message:
        return UnsupportedMediaType(
            "send the body uncompressed, or compressed with gzip or deflate", parameter="Content-Encoding"
        )
    return MalformedBody("the body is not encoded as its Content-Encoding header says")


def parser_reason(exc: HttpProcessingError) -> str:
    """llhttp's reason ("Invalid character in Content-Length") without the bytes it quotes
    after a colon, or aiohttp's own fixed sentence ("Too many headers received")."""
    reason = exc.message.split(":", 1)[0].strip().rstrip(".")
    return reason[:100] or "unreadable"


def head_accept(head: bytes) -> str | None:
    found = _ACCEPT_LINE.search(head)
    return found.group(1).decode("latin-1").strip() if found else None


def head_instance(head: bytes) -> str:
    found = _SAFE_TARGET.match(head)
    return found.group(1).decode("ascii") if found else "/"


class ApiRequestHandler(RequestHandler):
    """aiohttp's per-connection protocol, with our error answers and a header read timeout."""

    def __init__(self, manager: ApiServer, *, header_timeout: float, **kwargs: Any) -> None:
        # aiohttp's lingering reads an unread body to its end (decompressing it): never here.
        super().__init__(manager, **{**kwargs, "lingering_time": 0})
        self._server = manager
        self._header_timeout = header_timeout
        self._header_timer: asyncio.TimerHandle | None = None
        self._head = bytearray()
        self._head_pending = False  # part of a request's head has arrived, not all of it
        self._client: str | None = None  # the address counted against its connection cap
        self._refused = False
        self._discarding = False  # an unread body's rest is dropped, not parsed
        self.discarded_bytes = 0
        self._closed: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        client = client_address(transport)
        if not self._server.admit(client):
            # Before aiohttp sees it: no request task, no timers, nothing kept.
            self._refused = True
            CONNECTIONS_REFUSED.inc()
            transport.close()
            return
        self._client = client
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._discarding or self._refused:
            self.discarded_bytes += len(data)
            if self._discarding and self.discarded_bytes > UNREAD_BODY_DISCARD_BYTES:
                self._stop_lingering()
            return
        awaiting_head = self._awaiting_request()
        if awaiting_head:
            self._keep_head_bytes(data)
        super().data_received(data)
        if not self._awaiting_request():
            self._head_pending = False
            self._stop_header_timer()
            if not any(isinstance(queued, _ErrInfo) for queued, _ in self._messages):
                self._head.clear()  # parsed: no refusal will need it
        elif awaiting_head and self._header_timer is None and self._header_timeout > 0:
            self._header_timer = self._loop.call_later(self._header_timeout, self._header_timed_out)

    def _keep_head_bytes(self, data: bytes) -> None:
        if not self._head_pending:
            self._head.clear()  # the first bytes of a new request
            self._head_pending = True
        if len(self._head) < HEAD_BYTES_KEPT:
            self._head += data[: HEAD_BYTES_KEPT - len(self._head)]

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._refused:
            return
        self._server.release(self._client)
        self._stop_header_timer()
        self._stop_lingering()
        super().connection_lost(exc)

    def _stop_lingering(self) -> None:
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)

    async def finish_response(
        self, request: BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        """An answer given before the body was read to its end closes the connection: the rest
        of the body is never read, so the next request could not be found after it."""
        unread = not request.content.is_eof()
        if unread:
            resp.force_close()  # `Connection: close`, and aiohttp will not keep the connection
        resp, reset = await super().finish_response(request, resp, start_time)
        if unread and not reset:
            UNREAD_BODIES.inc()
            await self._drop_unread_body()
        return resp, reset

    async def _drop_unread_body(self) -> None:
        """Our side is finished (FIN after the answer); what the client still sends is counted
        and dropped until it closes, `UNREAD_BODY_DISCARD_BYTES` have come or
        `UNREAD_BODY_LINGER_SECONDS` pass; then aiohttp closes."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self._discarding = True
        self._stop_header_timer()
        with contextlib.suppress(AttributeError, NotImplementedError, RuntimeError):
            transport.resume_reading()  # reading may be paused by a full body buffer
        if transport.can_write_eof():
            transport.write_eof()
        self._closed = self._loop.create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._closed), UNREAD_BODY_LINGER_SECONDS)

    def log_exception(self, *args: Any, **kwargs: Any) -> None:
        """aiohttp drains the unread rest of a body after the answer; a body already answered
        as broken (400) or cut off by its client fails again there, which is no error of ours."""
        if isinstance(kwargs.get("exc_info"), RequestPayloadError | ConnectionError):
            log.debug("dropped the rest of a request body that cannot be read")
            return
        super().log_exception(*args, **kwargs)

    def _awaiting_request(self) -> bool:
        """Between requests: the connection waits for the next request's head."""
        waiter = self._waiter
        return waiter is not None and not waiter.done()

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        """Queued like a parser error, so it is answered (408) and the connection closed by
        the same path."""
        self._header_timer = None
        if not self._awaiting_request() or self._waiter is None:
            return
        timeout = HeaderReadTimeout(f"the request's headers did not arrive within {self._header_timeout:g} s")
        self._messages.append((_ErrInfo(status=408, exc=timeout, message=str(timeout)), EMPTY_PAYLOAD))
        self._waiter.set_result(None)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """What aiohttp answers itself: a request its parser refused, or an exception that
        escaped every middleware. Always closes the connection, as aiohttp's does."""
        refused = parser_error(exc, self.max_line_size)
        if refused is None:
            self.log_exception("error handling a request from %s", request.remote, exc_info=exc)
        if request.writer.output_size > 0:
            raise ConnectionError("part of the answer is sent already; the error cannot be")
        if refused is not None:
            log.info("refused a request from %s: %s", request.remote, refused.detail)
            response = self._refusal(refused)
        else:
            response = self._failure(request, status)
        set_standard_headers(response.headers, response.status)
        response.force_close()
        return response

    def _refusal(self, error: ApiError) -> web.Response:
        """The request never parsed: its Accept header and path come from the raw head."""
        head = bytes(self._head)
        return render_response(error, accept=head_accept(head), instance=head_instance(head))

    def _failure(self, request: BaseRequest, status: int) -> web.Response:
        """An exception escaped the middlewares (which answer every error they see)."""
        error = InternalError("an internal error occurred") if status == 500 else error_for_status(status)()
        return error_response(request, error)


# ---------------------------------------------------------------- server and runner


def client_address(transport: asyncio.BaseTransport) -> str | None:
    """The peer's IP address; None for a socket without one (a unix socket)."""
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple | list) and peer else None


class ApiServer(web.Server):
    """aiohttp's server, making ApiRequestHandler protocols, normalising request targets
    (and, on a public port, dropping clients' X-Internal-* headers), and counting each client
    address's connections against `max_connections_per_client` (0: no cap)."""

    def __init__(
        self,
        handler: Any,
        *,
        header_timeout: float,
        max_connections_per_client: int = 0,
        uncapped: Callable[[str], bool] | None = None,
        public: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(handler, **kwargs)
        self._header_timeout = header_timeout
        self._max_per_client = max_connections_per_client
        self._uncapped = uncapped or (lambda client: False)
        self._per_client: Counter[str] = Counter()
        app_factory = self.request_factory

        def normalising_factory(message: RawRequestMessage, *args: Any) -> BaseRequest:
            message = normalised_target(message)
            if public:
                message = without_internal_headers(message)
            return app_factory(message, *args)

        self.request_factory = normalising_factory

    def __call__(self) -> RequestHandler:
        return ApiRequestHandler(self, header_timeout=self._header_timeout, loop=self._loop, **self._kwargs)

    def admit(self, client: str | None) -> bool:
        """Counts a new connection of `client`; False (not counted) when it holds the most."""
        if client is None or self._max_per_client <= 0 or self._uncapped(client):
            return True
        if self._per_client[client] >= self._max_per_client:
            return False
        self._per_client[client] += 1
        return True

    def release(self, client: str | None) -> None:
        if client is None or client not in self._per_client:
            return
        self._per_client[client] -= 1
        if self._per_client[client] <= 0:
            del self._per_client[client]


class ApiAppRunner(web.AppRunner):
    """An AppRunner whose server is ApiServer (aiohttp builds a plain Server; it is rebuilt
    with the same handler, request factory and options)."""

    __slots__ = ("_header_timeout", "_max_connections_per_client")

    def __init__(
        self, app: web.Application, *, header_timeout: float, max_connections_per_client: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(app, **kwargs)
        self._header_timeout = header_timeout
        self._max_connections_per_client = max_connections_per_client

    async def _make_server(self) -> web.Server:
        plain = await super()._make_server()
        public = self.app.get(PUBLIC_PORT_KEY, False)
        return ApiServer(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=asyncio.get_running_loop(),
            header_timeout=self._header_timeout,
            max_connections_per_client=self._max_connections_per_client,
            uncapped=self.app.get(UNCAPPED_CLIENTS_KEY),
            public=public,
            # The public port's bodies stay as sent until read: its reader decodes them only as
            # far as it reads (gateway.proxy.BodyDecoder).
            **{**plain._kwargs, "auto_decompress": not public},
        )


def run_app(
    app: web.Application,
    *,
    host: str,
    port: int,
    loop: asyncio.AbstractEventLoop,
    header_timeout: float,
    reuse_port: bool = False,
    shutdown_timeout: float = 5.0,
    keepalive_timeout: float = 75.0,
    max_connections_per_client: int = 0,
) -> None:
    """`aiohttp.web.run_app` with ApiAppRunner: serves until SIGTERM or SIGINT, then shuts
    down gracefully (in-flight requests get `shutdown_timeout` seconds)."""
    runner = ApiAppRunner(
        app,
        header_timeout=header_timeout,
        max_connections_per_client=max_connections_per_client,
        handle_signals=True,
        access_log=None,
        shutdown_timeout=shutdown_timeout,
        keepalive_timeout=keepalive_timeout,
    )

    async def serve_until_stopped() -> None:
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port, reuse_port=reuse_port).start()
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    asyncio.set_event_loop(loop)
    main = loop.create_task(serve_until_stopped())
    try:
        loop.run_until_complete(main)
    except (web.GracefulExit, KeyboardInterrupt):
        pass
    finally:
        if not main.done():
            main.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(main)
        cancel_remaining_tasks(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def cancel_remaining_tasks(loop: asyncio.AbstractEventLoop) -> None:
    remaining = asyncio.all_tasks(loop)
    for task in remaining:
        task.cancel()
    if remaining:
        loop.run_until_complete(asyncio.gather(*remaining, return_exceptions=True))
