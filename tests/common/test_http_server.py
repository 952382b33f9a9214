"""The server every service runs (common.http_server), on a real socket in this process: what
aiohttp's parser refuses comes in our formats, stalled heads and bodies end in 408, request
targets are normalised before routing, and a client that goes away is neither a 500 nor an
error line."""

from __future__ import annotations

import asyncio
import contextlib
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

from common import http_server
from common.config import BaseConfig
from common.errors import (
    ApiError,
    InternalError,
    MalformedBody,
    MalformedRequest,
    RequestTimeout,
    Unauthorized,
    UnsupportedMediaType,
)
from common.http_server import (
    UNCAPPED_CLIENTS_KEY,
    ApiAppRunner,
    HeaderReadTimeout,
    head_accept,
    head_instance,
    normalised_target,
    parser_error,
)
from common.service import base_app, json_response
from tests.raw_http import (
    LEGACY_ACCEPT,
    PROBLEM_ACCEPT,
    Answer,
    assert_error_format,
    async_exchange,
    gzip_bomb,
    request,
)

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


# ---------------------------------------------------------------- connections bounded


@contextlib.asynccontextmanager
async def serving(app: web.Application, **runner_options: Any) -> AsyncIterator[int]:
    runner = ApiAppRunner(app, header_timeout=HEADER_TIMEOUT, access_log=None, **runner_options)
    await runner.setup()
    free = unused_port()
    await web.TCPSite(runner, "127.0.0.1", free).start()
    try:
        yield free
    finally:
        await runner.cleanup()


async def closed_by_server(reader: asyncio.StreamReader, within: float = 2.0) -> bool:
    """Whether the server closes the connection (EOF, or a reset) within `within` seconds;
    what it still sends before (the rest of an answer) is read and dropped."""
    try:
        async with asyncio.timeout(within):
            await reader.read()
            return True
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def served(port: int, *, local_host: str | None = None) -> bool:
    """A fresh connection gets a 200 for GET /ok."""
    local = (local_host, 0) if local_host else None
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=local)
    try:
        writer.write(request("GET", "/ok", headers={"Connection": "close"}))
        async with asyncio.timeout(3):
            return (await reader.read()).startswith(b"HTTP/1.1 200")
    except ConnectionError:
        return False
    finally:
        writer.close()


async def test_an_answer_before_the_body_closes_the_connection_and_never_decompresses_the_rest() -> None:
    """The campaign's gzip bomb: an early answer (here a 401) used to be followed by aiohttp
    draining, and so decompressing, the whole body to keep the connection. Now the answer says
    `Connection: close`, the server ends its side at once, and of the 1 GiB inside at most a
    few chunks were ever decompressed (counted by the request's own body stream)."""
    bodies: list[Any] = []

    async def refuse(request: web.Request) -> web.Response:
        bodies.append(request.content)
        raise Unauthorized("no token")

    app = base_app(BaseConfig(service="httptest"), with_redis=False)
    app.router.add_post("/refuse", refuse)
    bomb = gzip_bomb(1024)
    head = request(
        "POST",
        "/refuse",
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        content_length=len(bomb),
    )
    async with serving(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(head + bomb)  # buffered: sent while the answer is read
            async with asyncio.timeout(5):
                raw = await reader.readuntil(b"\r\n\r\n")
            assert raw.startswith(b"HTTP/1.1 401"), raw
            assert b"Connection: close" in raw
            assert await closed_by_server(reader)
        finally:
            writer.close()
    (body,) = bodies
    assert body.total_bytes < 16 << 20, body.total_bytes  # decompressed: a few chunks, not 1 GiB


async def test_a_client_that_keeps_sending_after_the_answer_is_cut_off_past_the_discard_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Dropping what a client still sends after an early answer is bounded in bytes too: a
    bomber sending 4 MiB bodies in a loop had the gateway copy and drop every byte (one of two
    cores). Here the linger time is made long, so only the byte cap can close the connection."""
    monkeypatch.setattr(http_server, "UNREAD_BODY_LINGER_SECONDS", 60.0)
    app = base_app(BaseConfig(service="httptest"), with_redis=False)

    async def refuse(request: web.Request) -> web.Response:
        raise Unauthorized("no token")

    app.router.add_post("/refuse", refuse)
    body = bytes(64 << 20)
    head = request("POST", "/refuse", headers={"Content-Type": "application/json"}, content_length=len(body))
    async with serving(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(head + body)  # buffered: sent while the answer is read
            async with asyncio.timeout(5):
                raw = await reader.readuntil(b"\r\n\r\n")
            assert raw.startswith(b"HTTP/1.1 401"), raw
            with pytest.raises(ConnectionError):  # the server stopped taking the rest: a reset
                async with asyncio.timeout(10):
                    await writer.drain()  # drained at once by a server that drops it all
        finally:
            writer.close()


async def test_a_body_read_to_its_end_keeps_the_connection() -> None:
    """Only an unread body closes: a request answered after its whole body stays keep-alive."""
    app = base_app(BaseConfig(service="httptest"), with_redis=False)
    app.router.add_post("/body", read_body)
    async with serving(app) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in range(2):
                writer.write(request("POST", "/body", body=b'{"a": 1}'))
                async with asyncio.timeout(3):
                    head = await reader.readuntil(b"\r\n\r\n")
                    await reader.readexactly(10)  # {"size":8}
                assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" not in head
        finally:
            writer.close()


async def test_connections_beyond_the_per_client_cap_are_closed_at_once() -> None:
    """3 silent connections are held; the 4th and 5th from the same address are closed at
    once; another address (127.0.0.2) is still served, and a freed place is taken again."""
    app = base_app(BaseConfig(service="httptest"), with_redis=False)
    app.router.add_get("/ok", ok)
    async with serving(app, max_connections_per_client=3) as port:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        extra = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        try:
            assert [await closed_by_server(reader) for reader, _ in extra] == [True, True]
            assert not await closed_by_server(held[0][0], within=0.3)
            assert await served(port, local_host="127.0.0.2")
            assert not await served(port)  # still 3 held from 127.0.0.1
            held[0][1].write(request("GET", "/ok"))  # a held connection is served as usual
            async with asyncio.timeout(3):
                assert (await held[0][0].readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            held.pop()[1].close()
            await asyncio.sleep(0.1)  # the server sees it closed
            assert await served(port)
        finally:
            for _, writer in held + extra:
                writer.close()


async def test_a_silent_connection_is_closed_after_the_idle_timeout() -> None:
    app = base_app(BaseConfig(service="httptest"), with_redis=False)
    app.router.add_get("/ok", ok)
    async with serving(app, keepalive_timeout=0.3) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            assert await closed_by_server(reader, within=3)
        finally:
            writer.close()


def test_the_idle_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert BaseConfig.from_env("httptest").idle_timeout_seconds == 75.0
    monkeypatch.setenv("IDLE_TIMEOUT_SECONDS", "20")
    assert BaseConfig.from_env("httptest").idle_timeout_seconds == 20.0


@pytest.mark.parametrize("internal", [False, True], ids=["public", "internal"])
async def test_a_public_port_drops_the_clients_internal_headers(internal: bool) -> None:
    """The gateway's port (internal=False): a client's X-Internal-* never reaches a handler or
    the error format (`X-Internal-Errors: full` asked for the internal one); a service's port
    keeps them (its callers are ours, behind the credential)."""

    async def echo(request: web.Request) -> web.Response:
        return json_response(sorted(name for name in request.headers if name.lower().startswith("x-internal")))

    app = base_app(BaseConfig(service="httptest"), with_redis=False, internal=internal)
    app.router.add_get("/echo", echo)
    forged = {"X-Internal-Tier": "unlimited", "X-internal-subject": "user:1", "X-Internal-Errors": "full"}
    credential = {"X-Internal-Token": "checked-where-it-is-needed"}  # kept: it is checked, not believed
    async with serving(app) as port:
        echoed = await async_exchange(port, request("GET", "/echo", headers={**forged, **credential}))
        missing = await async_exchange(port, request("GET", "/nowhere", accept=PROBLEM_ACCEPT, headers=forged))
    assert echoed.json() == sorted([*forged, *credential] if internal else credential)
    assert ("violations" in missing.json()) is internal, missing.json()


async def test_addresses_left_uncapped_hold_any_number_of_connections() -> None:
    """The gateway's trusted proxies (UNCAPPED_CLIENTS_KEY) carry many clients' connections."""
    app = base_app(BaseConfig(service="httptest"), with_redis=False)
    app.router.add_get("/ok", ok)
    app[UNCAPPED_CLIENTS_KEY] = lambda client: client == "127.0.0.1"
    async with serving(app, max_connections_per_client=1) as port:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        try:
            assert await served(port)
            assert not await closed_by_server(held[-1][0], within=0.3)
            other = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
            try:
                assert not await served(port, local_host="127.0.0.2")  # capped at 1: the one above
            finally:
                other[1].close()
        finally:
            for _, writer in held:
                writer.close()
