"""Hostile HTTP against the real processes, over raw sockets: every client-caused failure is
a 4xx in the format the Accept header asks for (problem detail or legacy), never a 500 and
never a text/plain echo of the input; stalled heads and bodies end in 408; nothing hangs.

The stack: Redis, the auth service, the optimize service (solver threads; one stop needs no
route service) and the gateway, with 1 s read timeouts so the stalls are quick.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from common.errors import (
    ApiError,
    InvalidCredentials,
    InvalidParameter,
    MalformedBody,
    MalformedRequest,
    NotFound,
    RequestTimeout,
    Unauthorized,
    UnsupportedMediaType,
)
from launcher.stack import Stack
from tests.integration.conftest import console_ok, make_stack
from tests.raw_http import (
    LEGACY_ACCEPT,
    PROBLEM_ACCEPT,
    Answer,
    assert_error_format,
    exchange,
    gzip_bomb,
    parse,
    request,
)

READ_TIMEOUT_S = 1
MARKER = "HOSTILE-MARKER"
STOP = b'[{"name": "HOSTILE-MARKER", "coordinate": {"lat": 43.7384, "lon": 7.4246}}]'
def wrong_login() -> bytes:
    """A wrong password for a new e-mail each time: failed logins are paced per account (five
    free), and these tests are about the answer's format, not the pacing."""
    return json.dumps({"user": f"nobody-{uuid.uuid4().hex[:8]}@example.com", "password": "HOSTILE-MARKER"}).encode()
# Format: request bytes for an Accept value and a valid token.
Build = Callable[[str, str], bytes]


@dataclass(frozen=True)
class Hostile:
    build: Build
    error: type[ApiError]
    service: str = "gateway"
    parameter: str | None = None  # the message must name it
    quick: bool = True  # answered at once (not after a read timeout)


def post_login(accept: str, *, headers: dict[str, str] | None = None, body: bytes | None = None) -> bytes:
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return request("POST", "/v1/authenticate", accept=accept, headers=all_headers, body=body or wrong_login())


CASES: dict[str, Hostile] = {
    "request-line-over-8k": Hostile(
        lambda a, t: request("GET", "/v1/route?q=" + MARKER * 700, accept=a), MalformedRequest
    ),
    "header-over-8k": Hostile(
        lambda a, t: request("GET", "/v1/route", accept=a, headers={"X-Big": MARKER * 700}), MalformedRequest
    ),
    "header-over-8k-at-a-service": Hostile(
        lambda a, t: request("GET", "/health", accept=a, headers={"X-Big": MARKER * 700}),
        MalformedRequest,
        "auth_service",
    ),
    "bad-content-length": Hostile(
        lambda a, t: request("POST", "/v1/authenticate", accept=a, headers={"Content-Length": f"12{MARKER}"}),
        MalformedRequest,
    ),
    "two-content-lengths": Hostile(
        lambda a, t: request("POST", "/v1/authenticate", accept=a, body=b"{}", headers={"Content-Length": "2"}),
        MalformedRequest,
    ),
    "unknown-method": Hostile(lambda a, t: request(MARKER, "/v1/route", accept=a), MalformedRequest),
    "content-encoding-br": Hostile(
        lambda a, t: post_login(a, headers={"Content-Encoding": "br"}), UnsupportedMediaType
    ),
    "content-encoding-unknown": Hostile(
        lambda a, t: post_login(a, headers={"Content-Encoding": "x-hostile"}), UnsupportedMediaType
    ),
    "gzip-body-not-compressed": Hostile(
        lambda a, t: post_login(a, headers={"Content-Encoding": "gzip"}), MalformedBody
    ),
    "deflate-body-not-compressed": Hostile(
        lambda a, t: post_login(a, headers={"Content-Encoding": "deflate"}), MalformedBody
    ),
    "absolute-form-target": Hostile(
        lambda a, t: request(
            "POST",
            "http://example.com/v1/authenticate",
            accept=a,
            headers={"Content-Type": "application/json"},
            body=wrong_login(),
        ),
        InvalidCredentials,  # served as its path: the auth service checked the login
    ),
    "authorization-not-utf8": Hostile(
        lambda a, t: request(
            "GET", "/v1/route", accept=a, extra=b"Authorization: Bearer \xff\xfe\x80HOSTILE-MARKER\r\n"
        ),
        Unauthorized,
    ),
    "two-authorization-headers": Hostile(
        lambda a, t: request(
            "GET",
            "/v1/providers",
            accept=a,
            extra=f"Authorization: Bearer {t}\r\nAuthorization: Bearer HOSTILE-MARKER\r\n".encode(),
        ),
        MalformedRequest,
        parameter="Authorization",
    ),
    "start-time-year-9999": Hostile(
        lambda a, t: request(
            "POST",
            "/v1/optimize/stops?startTime=9999-12-31T23:59:59Z",
            accept=a,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {t}"},
            body=STOP,
        ),
        InvalidParameter,
        parameter="startTime",
    ),
    "headers-stall": Hostile(
        lambda a, t: f"GET /v1/route HTTP/1.1\r\nHost: x\r\nAccept: {a}\r\n".encode(), RequestTimeout, quick=False
    ),
    "headers-stall-at-a-service": Hostile(
        lambda a, t: f"GET /health HTTP/1.1\r\nHost: x\r\nAccept: {a}\r\n".encode(),
        RequestTimeout,
        "optimize_service",
        quick=False,
    ),
    "body-stalls": Hostile(
        lambda a, t: request(
            "POST",
            "/v1/authenticate",
            accept=a,
            headers={"Content-Type": "application/json"},
            body=b"{",
            content_length=1000,
        ),
        RequestTimeout,
        quick=False,
    ),
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = make_stack(
        tmp_path_factory.mktemp("hostile"),
        ["auth_service", "optimize_service"],
        HEADER_READ_TIMEOUT_SECONDS=str(READ_TIMEOUT_S),
        BODY_READ_TIMEOUT_SECONDS=str(READ_TIMEOUT_S),
        OPTIMIZE_SOLVER_PROCESSES="0",
        OPTIMIZE_SMALL_PROCESSES="0",
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


SERVED = ("gateway", "auth_service", "optimize_service")


def server_errors(stack: Stack) -> dict[str, int]:
    """Per service, the 5xx answers its metrics counted."""
    pattern = r'http_requests_total\{[^}]*status="5\d\d"[^}]*\} ([0-9.e+]+)'
    return {s: int(sum(float(n) for n in re.findall(pattern, metrics_text(stack, s)))) for s in SERVED}


def error_lines(stack: Stack, service: str, start: int) -> list[str]:
    text = (stack.log_dir / f"{service}.log").read_bytes()[start:].decode(errors="replace")
    return [line for line in text.splitlines() if '"level":"ERROR"' in line or '"level":"CRITICAL"' in line]


@pytest.fixture(autouse=True)
def no_500_and_no_error_line(stack: Stack) -> Iterator[None]:
    """Every case here, whatever ran before it: no 500 in any service's metrics, no error line
    in any log."""
    before = server_errors(stack)
    sizes = {s: (stack.log_dir / f"{s}.log").stat().st_size for s in SERVED}
    yield
    assert server_errors(stack) == before
    for service in SERVED:
        assert error_lines(stack, service, sizes[service]) == [], service


@pytest.fixture(scope="module")
def token(stack: Stack) -> str:
    return stack.login("unlimited")


def gateway(stack: Stack, data: bytes, **kwargs: float | bool) -> Answer:
    return exchange(stack.ports["gateway"], data, **kwargs)  # type: ignore[arg-type]


def assert_standard_headers(answer: Answer) -> None:
    server = answer.headers.get("server", "").lower()
    assert "aiohttp" not in server and "python" not in server, answer.headers
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"]


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_is_a_4xx_in_our_format(stack: Stack, token: str, name: str, legacy: bool) -> None:
    case = CASES[name]
    data = case.build(LEGACY_ACCEPT if legacy else PROBLEM_ACCEPT, token)
    answer = exchange(stack.ports[case.service], data, timeout=READ_TIMEOUT_S + 9)
    error = case.error
    assert_error_format(answer, legacy=legacy, status=error.status, code=error.code, problem_type=error.type)
    assert MARKER.encode() not in answer.raw, answer.raw[:600]
    assert_standard_headers(answer)
    assert answer.headers["cache-control"] == "no-store"
    if case.parameter:
        assert case.parameter in json.dumps(answer.json())
    # Answered at once, or right after the read timeout: nothing waits for the client to give up.
    assert answer.seconds < (3 if case.quick else READ_TIMEOUT_S + 3), answer.seconds
    if not case.quick:
        assert answer.seconds >= READ_TIMEOUT_S * 0.9


def test_accept_with_q_0_does_not_select_the_legacy_format(stack: Stack) -> None:
    answer = gateway(stack, request("GET", "/v1/route", accept="application/json;q=0"))
    assert_error_format(answer, legacy=False, status=401, code=Unauthorized.code, problem_type=Unauthorized.type)


@pytest.mark.parametrize("legacy", [False, True], ids=["problem", "legacy"])
def test_one_trailing_slash_rule_everywhere(stack: Stack, token: str, legacy: bool) -> None:
    accept = LEGACY_ACCEPT if legacy else PROBLEM_ACCEPT
    bearer = {"Authorization": f"Bearer {token}"}
    for path in ("/v1/authenticate", "/v1/authenticate/"):
        answer = gateway(
            stack, request("POST", path, accept=accept, headers={"Content-Type": "application/json"}, body=wrong_login())
        )
        assert_error_format(
            answer, legacy=legacy, status=401, code=InvalidCredentials.code, problem_type=InvalidCredentials.type
        )
    for path in ("/v1/providers", "/v1/providers/", "/health/"):
        assert gateway(stack, request("GET", path, accept=accept, headers=bearer)).status == 200, path
    stops = {"Content-Type": "application/json", **bearer}
    for path in ("/v1/optimize/stops", "/v1/optimize/stops/"):  # forwarded to the service as its path
        answer = gateway(stack, request("POST", path, accept=accept, headers=stops, body=STOP))
        assert answer.status == 200, answer.raw[:600]
    assert exchange(stack.ports["auth_service"], request("GET", "/health/")).status == 200
    missing = gateway(stack, request("GET", "/v1/nowhere/", accept=accept, headers=bearer))
    assert_error_format(missing, legacy=legacy, status=404, code=NotFound.code, problem_type=NotFound.type)


def test_every_answer_carries_the_standard_headers(stack: Stack, token: str) -> None:
    login = request("POST", "/v1/authenticate", headers={"Content-Type": "application/json"}, body=wrong_login())
    answers = {
        "providers": gateway(stack, request("GET", "/v1/providers", headers={"Authorization": f"Bearer {token}"})),
        "401": gateway(stack, request("GET", "/v1/route")),
        "login-refused": gateway(stack, login),
        "health": gateway(stack, request("GET", "/health")),
        "spec": gateway(stack, request("GET", "/v1/openapi.json")),
        "service": exchange(stack.ports["auth_service"], request("GET", "/health")),
    }
    for answer in answers.values():
        assert_standard_headers(answer)
    assert answers["providers"].headers["cache-control"] == "no-store"
    assert answers["login-refused"].headers["cache-control"] == "no-store"
    assert answers["spec"].headers["cache-control"].startswith("public")


def test_a_token_answer_is_not_stored(stack: Stack) -> None:
    email, password = f"h{uuid.uuid4().hex[:10]}@example.com", uuid.uuid4().hex
    console_ok(stack, "add-user", email, "--password", password)
    login = json.dumps({"user": email, "password": password}).encode()
    answer = gateway(
        stack, request("POST", "/v1/authenticate", headers={"Content-Type": "application/json"}, body=login)
    )
    assert answer.status == 200, answer.raw[:600]
    assert "token" in answer.json()
    assert answer.headers["cache-control"] == "no-store"


def test_a_cors_preflight_needs_no_token(stack: Stack) -> None:
    headers = {"Origin": "https://maps.example.org", "Access-Control-Request-Method": "GET"}
    answer = gateway(stack, request("OPTIONS", "/v1/route", headers=headers))
    assert answer.status == 204, answer.raw[:600]
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "Authorization" in answer.headers["access-control-allow-headers"]
    refused = gateway(stack, request("GET", "/v1/route", headers={"Origin": "https://maps.example.org"}))
    assert refused.status == 401
    assert refused.headers["access-control-allow-origin"] == "*"


def test_the_429_names_the_sustained_rate_and_the_burst(stack: Stack) -> None:
    demo = stack.login("demo")  # TEST_ENV: demo=2/5
    answers = [
        gateway(stack, request("GET", "/v1/providers", headers={"Authorization": f"Bearer {demo}"})) for _ in range(8)
    ]
    refused = [a for a in answers if a.status == 429]
    assert refused, [a.status for a in answers]
    assert "2 requests per second, in bursts of up to 5" in refused[0].json()["detail"]


def test_a_client_that_leaves_mid_body_is_counted_499_not_500(stack: Stack) -> None:
    with socket.create_connection(("127.0.0.1", stack.ports["gateway"]), timeout=5) as sock:
        sock.sendall(
            request(
                "POST", "/v1/authenticate", headers={"Content-Type": "application/json"}, body=b"{", content_length=1000
            )
        )
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        statuses = served_statuses(stack, "gateway", "/v1/authenticate")
        if "499" in statuses:
            break
        time.sleep(0.1)
    assert "499" in statuses, statuses
    assert "500" not in statuses


def metrics_text(stack: Stack, service: str) -> str:
    # Every port, the gateway's too, shows its metrics only to a holder of the credential.
    metrics = urllib.request.Request(stack.url(service) + "/metrics", headers=stack.internal_headers())  # noqa: S310
    with urllib.request.urlopen(metrics, timeout=5) as answer:  # noqa: S310 - loopback
        return str(answer.read().decode())


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process has used (Linux: /proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send_until_refused(sock: socket.socket, data: bytes, sent: list[int]) -> None:
    """Sends `data` in 64 KiB pieces until done or the server no longer takes them."""
    try:
        for start in range(0, len(data), 1 << 16):
            sock.sendall(data[start : start + (1 << 16)])
            sent[0] = min(len(data), start + (1 << 16))
    except OSError:
        pass


def test_an_unauthenticated_gzip_bomb_is_refused_without_decompressing_it(stack: Stack) -> None:
    """The campaign's: 4 GiB of zeros gzipped into 4.2 MB, POSTed without a token, cost the
    gateway 2.9-3.4 CPU-seconds after its 6 ms 401, as aiohttp drained (decompressed) the body
    to keep the connection. Now: the 401, `Connection: close`, the connection ended by the
    server, and the gateway's CPU time for it all a small fraction of a second."""
    bomb = gzip_bomb(4096)
    head = request(
        "POST",
        "/v1/optimize/stops",
        accept=PROBLEM_ACCEPT,
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        content_length=len(bomb),
    )
    pid = stack.processes["gateway"].pid
    before = cpu_seconds(pid)
    sent = [0]
    with socket.create_connection(("127.0.0.1", stack.ports["gateway"]), timeout=10) as sock:
        sock.sendall(head)
        sender = threading.Thread(target=send_until_refused, args=(sock, bomb, sent))
        sender.start()
        raw = b""
        try:
            while chunk := sock.recv(65536):  # to the server's end of the connection
                raw += chunk
        except ConnectionError:
            pass  # a reset after the answer is the server closing too
        sender.join(timeout=10)
    used = cpu_seconds(pid) - before
    print(f"\ngzip bomb: {sent[0]} of {len(bomb)} bytes sent, gateway CPU {used:.3f} s")
    answer = parse(raw, 0.0)
    assert_error_format(answer, legacy=False, status=401, code=Unauthorized.code, problem_type=Unauthorized.type)
    assert answer.headers["connection"] == "close"
    assert used < 0.5, used


def test_a_clients_internal_headers_are_ignored_by_the_gateway(stack: Stack) -> None:
    """`X-Internal-Errors: full` used to get the internal error format (codes and violations
    for our services); the gateway now answers every client in the public formats."""
    forged = {"X-Internal-Errors": "full", "X-Internal-Tier": "unlimited", "X-Internal-Subject": "user:1"}
    answer = gateway(stack, request("GET", "/v1/route", accept=PROBLEM_ACCEPT, headers=forged))
    assert_error_format(answer, legacy=False, status=401, code=Unauthorized.code, problem_type=Unauthorized.type)
    assert "violations" not in answer.json() and "code" not in answer.json(), answer.json()


def served_statuses(stack: Stack, service: str, route: str) -> dict[str, float]:
    text = metrics_text(stack, service)
    pattern = rf'http_requests_total\{{[^}}]*route="{re.escape(route)}"[^}}]*status="(\d+)"\}} (\S+)'
    return {status: float(count) for status, count in re.findall(pattern, text)}
