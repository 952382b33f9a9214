"""The server every service runs (common.http_server), on a real socket in this process: what
aiohttp's parser refuses comes in our formats, stalled heads and bodies end in 408, request
targets are normalised before routing, and a client that goes away is neither a 500 nor an
error line."""

from __future__ import annotations

import asyncio
import gzip
import logging
import re
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.http_exceptions import (
    BadHttpMessage,
    BadHttpMethod,
    BadStatusLine,
    ContentEncodingError,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
    TransferEncodingError,
)
from aiohttp.http_parser import RawRequestMessage
from aiohttp.test_utils import unused_port
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from common.config import BaseConfig
from common.errors import (
    ApiError,
    InternalError,
    MalformedBody,
    MalformedRequest,
    RequestTimeout,
    UnsupportedMediaType,
)
from common.http_server import (
    ApiAppRunner,
    HeaderReadTimeout,
    head_accept,
    head_instance,
    normalised_target,
    parser_error,
)
from common.service import base_app, json_response
from tests.raw_http import LEGACY_ACCEPT, PROBLEM_ACCEPT, Answer, assert_error_format, async_exchange, request

MARKER = "HOSTILE-MARKER"
HEADER_TIMEOUT = 0.3
BODY_TIMEOUT = 0.5


async def ok(request: web.Request) -> web.Response:
    return json_response({"path": request.path, "query": request.query_string})


async def read_body(request: web.Request) -> web.Response:
    return json_response({"size": len(await request.read())})


async def cacheable(request: web.Request) -> web.Response:
    return json_response({"ok": True}, headers={"Cache-Control": "public, max-age=60"})


@pytest.fixture
async def port() -> AsyncIterator[int]:
    """The shared base app behind ApiAppRunner on a free loopback port."""
    app = base_app(BaseConfig(service="httptest", body_timeout_seconds=BODY_TIMEOUT), with_redis=False)
    app.router.add_get("/ok", ok)
    app.router.add_post("/body", read_body)
    app.router.add_get("/cacheable", cacheable)
    runner = ApiAppRunner(app, header_timeout=HEADER_TIMEOUT, access_log=None)
    await runner.setup()
    free = unused_port()
    await web.TCPSite(runner, "127.0.0.1", free).start()
    try:
        yield free
    finally:
        await runner.cleanup()


def message(target: str) -> RawRequestMessage:
    headers = CIMultiDictProxy(CIMultiDict[str]())
    return RawRequestMessage("GET", target, (1, 1), headers, (), False, None, False, False, URL(target, encoded=True))  # type: ignore[arg-type]


# ---------------------------------------------------------------- units


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/v1/route", "/v1/route"),
        ("/v1/route/", "/v1/route"),
        ("/v1/route//", "/v1/route"),
        ("/v1/route/?from=1%2C2&to=3", "/v1/route?from=1%2C2&to=3"),
        ("/v1/a%2Fb/", "/v1/a%2Fb"),
        ("/", "/"),
        ("http://example.com/v1/authenticate", "/v1/authenticate"),
        ("http://example.com:8080/v1/route/?x=%2F", "/v1/route?x=%2F"),
        ("*", "*"),
    ],
)
def test_targets_are_normalised(target: str, expected: str) -> None:
    normalised = normalised_target(message(target))
    assert normalised.path == expected
    assert str(normalised.url) == expected
    assert not normalised.url.absolute or expected == "*"


@pytest.mark.parametrize(
    ("exc", "error", "status"),
    [
        (LineTooLong(MARKER.encode() + b"...", 8190), MalformedRequest, 400),
        (BadHttpMethod(MARKER), MalformedRequest, 400),
        (BadStatusLine(MARKER), MalformedRequest, 400),
        (InvalidURLError(f"Invalid URL: {MARKER}"), MalformedRequest, 400),
        (InvalidHeader(MARKER.encode()), MalformedRequest, 400),
        (BadHttpMessage(f"Invalid character in Content-Length:\n\n  b'{MARKER}'\n   ^"), MalformedRequest, 400),
        (TransferEncodingError(MARKER), MalformedRequest, 400),
        (
            ContentEncodingError("Can not decode content-encoding: brotli (br). Please install `Brotli`"),
            UnsupportedMediaType,
            415,
        ),
        (ContentEncodingError("deflate"), MalformedBody, 400),
        (HeaderReadTimeout("the request's headers did not arrive within 30 s"), RequestTimeout, 408),
    ],
)
def test_parser_refusals_are_typed_and_never_repeat_the_input(
    exc: Exception, error: type[ApiError], status: int
) -> None:
    refused = parser_error(exc, 8190)
    assert refused is not None and type(refused) is error
    assert refused.status == status
    assert MARKER not in refused.detail


def test_an_exception_that_is_not_the_parser_s_is_not_a_refusal() -> None:
    assert parser_error(RuntimeError("boom"), 8190) is None
    assert parser_error(None, 8190) is None


def test_the_raw_head_gives_accept_and_a_safe_instance() -> None:
    head = b"GET /v1/route?x=1 HTTP/1.1\r\nHost: a\r\nACCEPT:  application/json \r\nX: y"
    assert head_accept(head) == "application/json"
    assert head_instance(head) == "/v1/route"
    assert head_accept(b"GET / HTTP/1.1\r\nHost: a\r\n") is None
    assert head_instance(b"GET /" + b"a" * 300 + b" HTTP/1.1") == "/"  # too long to name
    assert head_instance(b"GET /<script> HTTP/1.1") == "/"  # not plainly a path
    assert head_instance(b"\x16\x03\x01garbage") == "/"


# ---------------------------------------------------------------- over a socket


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            lambda accept: request("GET", "/ok", accept=accept, headers={"X-Big": MARKER * 700}), id="header-8k"
        ),
        pytest.param(lambda accept: request("GET", "/ok?q=" + MARKER * 700, accept=accept), id="line-8k"),
        pytest.param(
            lambda accept: request("POST", "/body", accept=accept, headers={"Content-Length": f"1{MARKER}"}),
            id="content-length",
        ),
        pytest.param(lambda accept: request("G<T", "/ok", accept=accept), id="method"),
    ],
)
async def test_parser_refusals_in_both_formats(port: int, data: Any, legacy: bool) -> None:
    answer = await async_exchange(port, data(LEGACY_ACCEPT if legacy else PROBLEM_ACCEPT), check_close=True)
    assert_error_format(
        answer, legacy=legacy, status=400, code=MalformedRequest.code, problem_type=MalformedRequest.type
    )
    assert MARKER.encode() not in answer.raw
    assert answer.closed
    assert "aiohttp" not in answer.headers["server"].lower()
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
async def test_stalled_headers_end_in_408(port: int, legacy: bool) -> None:
    accept = LEGACY_ACCEPT if legacy else PROBLEM_ACCEPT
    partial = f"GET /ok HTTP/1.1\r\nHost: a\r\nAccept: {accept}\r\n".encode()  # no blank line: never ends
    answer = await async_exchange(port, partial, within=HEADER_TIMEOUT + 3, check_close=True)
    assert_error_format(answer, legacy=legacy, status=408, code=RequestTimeout.code, problem_type=RequestTimeout.type)
    assert answer.closed


async def test_an_idle_connection_gets_no_408(port: int) -> None:
    """Only a request that has begun is timed: an idle keep-alive connection is not answered
    (a client would take an unasked 408 for the answer to its next request)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(HEADER_TIMEOUT * 3):
                await reader.read(1)
        writer.write(request("GET", "/ok", headers={"Connection": "close"}))
        async with asyncio.timeout(3):
            assert (await reader.read()).startswith(b"HTTP/1.1 200")
    finally:
        writer.close()


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
async def test_a_body_that_stops_ends_in_408(port: int, legacy: bool) -> None:
    data = request("POST", "/body", accept=LEGACY_ACCEPT if legacy else PROBLEM_ACCEPT, body=b"{", content_length=1000)
    answer = await async_exchange(port, data, within=BODY_TIMEOUT + 3, check_close=True)
    assert_error_format(answer, legacy=legacy, status=408, code=RequestTimeout.code, problem_type=RequestTimeout.type)
    assert answer.closed
    assert answer.seconds >= BODY_TIMEOUT * 0.9


async def test_a_slow_body_that_keeps_coming_is_read(port: int) -> None:
    """The body timeout is for silence, not for the whole body: bytes every half timeout pass."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request("POST", "/body", body=b"", content_length=4, headers={"Connection": "close"}))
        for byte in b"abcd":
            await asyncio.sleep(BODY_TIMEOUT / 2)
            writer.write(bytes([byte]))
        async with asyncio.timeout(3):
            raw = await reader.read()
        assert raw.startswith(b"HTTP/1.1 200"), raw[:300]
        assert raw.endswith(b'{"size":4}')
    finally:
        writer.close()


async def test_a_client_that_leaves_mid_body_is_no_500_and_no_error_line(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request("POST", "/body", body=b"{", content_length=1000))
    await writer.drain()
    await asyncio.sleep(0.1)
    writer.close()
    await asyncio.sleep(0.2)  # the handler sees the connection lost
    metrics = (await async_exchange(port, request("GET", "/metrics"))).body.decode()
    served = dict(re.findall(r'http_requests_total\{[^}]*route="/body"[^}]*status="(\d+)"\} (\S+)', metrics))
    assert served.get("499") == "1.0", metrics
    assert "500" not in served
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
@pytest.mark.parametrize(
    ("encoding", "body", "error"),
    [
        ("gzip", b'{"not": "compressed"}', MalformedBody),
        ("deflate", b'{"not": "compressed"}', MalformedBody),
        ("br", b'{"not": "compressed"}', UnsupportedMediaType),
        ("x-unknown", b"{}", UnsupportedMediaType),
        ("gzip, gzip", b"{}", UnsupportedMediaType),
    ],
)
async def test_content_encoding_refusals(port: int, encoding: str, body: bytes, error: Any, legacy: bool) -> None:
    data = request(
        "POST",
        "/body",
        accept=LEGACY_ACCEPT if legacy else PROBLEM_ACCEPT,
        headers={"Content-Encoding": encoding},
        body=body,
    )
    answer = await async_exchange(port, data)
    assert_error_format(answer, legacy=legacy, status=error.status, code=error.code, problem_type=error.type)


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("identity", lambda b: b), ("GZIP", gzip.compress)],
)
async def test_bodies_in_accepted_encodings_are_read(port: int, encoding: str, compress: Any) -> None:
    body = b"x" * 5000
    answer = await async_exchange(
        port, request("POST", "/body", headers={"Content-Encoding": encoding}, body=compress(body))
    )
    assert answer.status == 200, answer.raw[:400]
    assert answer.json() == {"size": 5000}


@pytest.mark.parametrize(
    ("target", "path", "query"),
    [
        ("/ok/", "/ok", ""),
        ("/ok/?a=1", "/ok", "a=1"),
        ("http://example.com/ok", "/ok", ""),
        ("http://example.com/ok/?a=%2C", "/ok", "a=%2C"),
        ("/health/", None, None),
    ],
)
async def test_trailing_slash_and_absolute_form_are_served_as_the_path(
    port: int, target: str, path: str | None, query: str | None
) -> None:
    answer = await async_exchange(port, request("GET", target))
    assert answer.status == 200, answer.raw[:400]
    if path is not None:
        assert answer.json() == {"path": path, "query": query.replace("%2C", ",") if query else ""}


async def test_every_answer_carries_the_standard_headers(port: int) -> None:
    answers: dict[str, Answer] = {
        "ok": await async_exchange(port, request("GET", "/ok")),
        "cacheable": await async_exchange(port, request("GET", "/cacheable")),
        "missing": await async_exchange(port, request("GET", "/nowhere")),
        "metrics": await async_exchange(port, request("GET", "/metrics")),
    }
    for name, answer in answers.items():
        assert answer.headers["x-content-type-options"] == "nosniff", name
        assert "aiohttp" not in answer.headers["server"].lower() and "python" not in answer.headers["server"].lower()
    assert answers["ok"].headers["cache-control"] == "no-store"
    assert answers["cacheable"].headers["cache-control"] == "public, max-age=60"  # a handler's own choice
    assert answers["missing"].status == 404 and answers["missing"].headers["cache-control"] == "no-store"


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
async def test_an_exception_past_every_middleware_is_our_500(legacy: bool) -> None:
    """What aiohttp answers itself when no middleware caught the exception."""

    async def crash(request: web.Request) -> web.Response:
        raise RuntimeError(f"secret {MARKER}")

    app = web.Application()  # without our middlewares
    app.router.add_get("/crash", crash)
    runner = ApiAppRunner(app, header_timeout=HEADER_TIMEOUT, access_log=None)
    await runner.setup()
    free = unused_port()
    await web.TCPSite(runner, "127.0.0.1", free).start()
    try:
        accept = LEGACY_ACCEPT if legacy else PROBLEM_ACCEPT
        answer = await async_exchange(free, request("GET", "/crash", accept=accept))
    finally:
        await runner.cleanup()
    assert_error_format(answer, legacy=legacy, status=500, code=InternalError.code, problem_type=InternalError.type)
    assert MARKER.encode() not in answer.raw
    assert answer.headers["x-content-type-options"] == "nosniff"
