"""The launcher's start-up checks (launcher.stack): where the documented variables put each
process, a taken port named before anything starts, and a /health that must be ours."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from launcher.redis_server import free_port
from launcher.stack import Stack, StartupError, is_health_of


class Answer:
    """What the foreign server below answers to every GET."""

    status = 404
    body = b"not found"


class Foreign(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(Answer.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(Answer.body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def foreign_server() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Foreign)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_the_documented_variables_place_every_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_PORT", "18080")
    monkeypatch.setenv("AUTH_SERVICE_PORT", "18081")
    monkeypatch.setenv("AUTH_SERVICE_HOST", "0.0.0.0")  # noqa: S104 - a value to read, nothing binds
    monkeypatch.setenv("REDIS_URL", "redis://localhost:16390/0")
    monkeypatch.setenv("REDIS_CACHE_URL", "redis://127.0.0.1:16391/0")
    stack = Stack.from_env(tmp_path, ["auth_service"])
    assert (stack.ports, stack.redis_port, stack.redis_cache_port) == (
        {"auth_service": 18081, "gateway": 18080},
        16390,
        16391,
    )
    env = stack.env()
    assert (env["AUTH_SERVICE_HOST"], env["GATEWAY_HOST"], env["AUTH_SERVICE_PORT"]) == ("0.0.0.0", "127.0.0.1", "18081")  # noqa: S104
    assert stack.url("auth_service") == "http://127.0.0.1:18081"  # every interface: checked through loopback
    assert env["REDIS_URL"] == f"redis://:{stack.redis_password}@127.0.0.1:16390/0"


def test_a_redis_url_elsewhere_is_refused_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://redis.example.com:6379/0")
    with pytest.raises(StartupError, match=r"REDIS_URL=.*runs Redis on 127\.0\.0\.1"):
        Stack.from_env(tmp_path, ["auth_service"])


def test_a_taken_port_is_named_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as foreign:
        foreign.bind(("127.0.0.1", 0))
        foreign.listen()
        port = foreign.getsockname()[1]
        stack = Stack(tmp_path, ports={"auth_service": port, "gateway": free_port()}, services=["auth_service"])
        stack.redis_port, stack.redis_cache_port = free_port(), free_port()
        with pytest.raises(StartupError) as refused:
            stack.start()
    assert f"auth_service cannot listen on 127.0.0.1:{port}: Address already in use" in str(refused.value)
    assert "AUTH_SERVICE_PORT" in str(refused.value) and stack.processes == {}


@pytest.mark.parametrize(
    ("status", "body"),
    [(404, b"not found"), (200, b'{"service": "geo_service", "status": "ok"}'), (200, b"<html>ok</html>")],
)
def test_a_health_that_is_not_ours_does_not_count(tmp_path: Path, foreign_server: int, status: int, body: bytes) -> None:
    Answer.status, Answer.body = status, body
    stack = Stack(tmp_path, ports={"auth_service": foreign_server}, services=["auth_service"])
    with pytest.raises(StartupError, match=f"HTTP {status} from a server that is not auth_service"):
        stack.wait_healthy("auth_service", timeout=1)


def test_our_health_counts(tmp_path: Path, foreign_server: int) -> None:
    Answer.status, Answer.body = 200, json.dumps({"service": "auth_service", "status": "ok"}).encode()
    stack = Stack(tmp_path, ports={"auth_service": foreign_server}, services=["auth_service"])
    stack.wait_healthy("auth_service", timeout=5)  # returns instead of raising StartupError
    answer = stack.health("auth_service")
    assert answer.status == 200 and is_health_of("auth_service", answer.body)


def test_two_processes_given_one_port_are_refused_before_anything_starts(tmp_path: Path) -> None:
    port = free_port()
    stack = Stack(tmp_path, ports={"auth_service": port, "gateway": free_port()}, services=["auth_service"])
    stack.redis_port, stack.redis_cache_port = free_port(), port
    with pytest.raises(StartupError, match=f"redis_cache and auth_service are both given port {port}"):
        stack.start()
    assert stack.processes == {}


@pytest.fixture
def redis_like_server() -> Iterator[int]:
    """Answers anything in Redis's protocol, as the Redis that once held a service's port did."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(b"-ERR wrong number of arguments for 'get' command\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def test_a_listener_that_does_not_speak_http_is_not_ours(tmp_path: Path, redis_like_server: int) -> None:
    stack = Stack(tmp_path, ports={"auth_service": redis_like_server}, services=["auth_service"])
    with pytest.raises(StartupError, match="a server that is not auth_service and does not speak HTTP"):
        stack.wait_healthy("auth_service", timeout=1)


def test_free_ports_are_distinct_and_outside_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(20000 <= port < 32768 for port in ports)


def test_every_taken_port_is_named_at_once(tmp_path: Path) -> None:
    with socket.socket() as first, socket.socket() as second:
        for sock in (first, second):
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        ports = first.getsockname()[1], second.getsockname()[1]
        stack = Stack(tmp_path, ports={"auth_service": ports[0], "gateway": ports[1]}, services=["auth_service"])
        stack.redis_port, stack.redis_cache_port = free_port(), free_port()
        with pytest.raises(StartupError) as refused:
            stack.start()
    text = str(refused.value)
    assert text.startswith("2 port(s) taken")
    assert f"auth_service cannot listen on 127.0.0.1:{ports[0]}" in text and f"gateway cannot listen on 127.0.0.1:{ports[1]}" in text
    assert "GATEWAY_PORT" in text and stack.processes == {}
