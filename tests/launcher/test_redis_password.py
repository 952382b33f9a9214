"""The Redis servers the launcher starts (`make up`, the integration tests, the benchmarks)
require a password: made at a data directory's first start, owner-only, reused after, handed to
the services inside REDIS_URL and REDIS_CACHE_URL, and nowhere in a command line, a log or a repr."""

from __future__ import annotations

import os
import socket
import stat
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from launcher.redis_server import PASSWORD_FILE, free_port
from launcher.stack import Stack, StartupError

pytestmark = pytest.mark.timeout(60)


def new_stack(data_dir: Path) -> Stack:
    return Stack(data_dir=data_dir, redis_port=free_port(), redis_cache_port=free_port(), services=[])


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """Both Redis roles started the way `make up` starts them."""
    started = new_stack(tmp_path / "data")
    started.start_redis()
    try:
        yield started
    finally:
        started.stop()


def client(url: str, password: str) -> redis.Redis:
    """A client of the server `url` names, with `password` instead of the URL's."""
    parts = urllib.parse.urlsplit(url)
    return redis.Redis(host=parts.hostname or "", port=parts.port or 0, password=password, socket_timeout=2)


def urls(stack: Stack) -> dict[str, str]:
    env = stack.env()
    return {"state": env["REDIS_URL"], "cache": env["REDIS_CACHE_URL"]}


def unauthenticated(url: str, command: bytes) -> bytes:
    """What the server `url` names answers a bare RESP command (as anything on the machine may send)."""
    parts = urllib.parse.urlsplit(url)
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=2) as connection:
        connection.sendall(command)
        return connection.recv(200)


def test_both_redis_servers_refuse_a_client_without_the_password(stack: Stack) -> None:
    for role, url in urls(stack).items():
        assert unauthenticated(url, b"SET rate-limit:someone 0\r\n").startswith(b"-NOAUTH"), role
        assert unauthenticated(url, b"KEYS *\r\n").startswith(b"-NOAUTH"), role
        with client(url, "not-the-password") as guessing, pytest.raises(redis.AuthenticationError):
            guessing.ping()
        with redis.Redis.from_url(url, socket_timeout=2) as service:  # what every service is given
            assert service.ping() is True, role


def test_the_services_get_the_password_inside_both_urls(stack: Stack) -> None:
    password = stack.redis_password
    for url in urls(stack).values():
        parts = urllib.parse.urlsplit(url)
        assert (parts.hostname, parts.password) == ("127.0.0.1", password)
    assert len(password) >= 32


def test_the_password_is_on_no_command_line_in_no_log_and_in_no_repr(stack: Stack) -> None:
    password = stack.redis_password
    for name in ("redis", "redis_cache"):
        pid = stack.processes[name].pid
        assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes(), name
    for log in stack.data_dir.rglob("redis.log"):
        assert password not in log.read_text(errors="replace"), log
    assert password not in repr(stack)


def test_the_password_file_is_owner_only_and_reused_by_the_next_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    previous = os.umask(0)  # a permissive umask must not leak into the file's mode
    try:
        first = new_stack(data_dir).redis_password
    finally:
        os.umask(previous)
    path = data_dir / PASSWORD_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == first

    again = new_stack(data_dir)
    assert again.redis_password == first
    again.start_redis()
    try:  # the restarted state Redis answers the same password
        with redis.Redis.from_url(again.redis_url, socket_timeout=2) as service:
            assert service.ping() is True
    finally:
        again.stop()
    assert new_stack(tmp_path / "other").redis_password != first


def test_a_password_in_redis_url_is_used_for_both_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://:chosen%40pw@127.0.0.1:16390/0")
    stack = Stack.from_env(tmp_path, [])
    assert stack.redis_password == "chosen@pw"
    assert {urllib.parse.urlsplit(url).password for url in urls(stack).values()} == {"chosen%40pw"}
    assert not (tmp_path / PASSWORD_FILE).exists()


def test_a_refused_redis_url_is_named_without_its_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://:s3cret-pw@redis.example.com:6379/0")
    with pytest.raises(StartupError) as refused:
        Stack.from_env(tmp_path, [])
    assert "s3cret" not in str(refused.value) and "redis.example.com:6379" in str(refused.value)
