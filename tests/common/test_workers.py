"""`<SERVICE>_WORKERS`: several processes serve one port (SO_REUSEPORT) under one supervisor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest

from common.config import REPO_ROOT
from launcher.redis_server import free_port, wait_for_port

# A service with one extra route that tells which process answered.
APP = """
import os, sys
from aiohttp import web
from common.config import BaseConfig
from common.service import base_app, json_response, run

async def whoami(request):
    return json_response({"pid": os.getpid()})

def create_app(config):
    app = base_app(config, with_redis=False)
    app.router.add_get("/whoami", whoami)
    return app

run(create_app, BaseConfig.from_env("demo_service"))
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too: only its parent has not collected it yet.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rpartition(")")[2].split()[0] != "Z"


def answering_pids(port: int, attempts: int = 60) -> set[int]:
    pids = set()
    for _ in range(attempts):  # a new connection each time, so the kernel picks a worker
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/whoami", timeout=5) as resp:
            pids.add(int(json.loads(resp.read())["pid"]))
    return pids


@pytest.fixture
def supervisor() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    env = {**os.environ, "DEMO_SERVICE_PORT": str(port), "DEMO_SERVICE_WORKERS": "2", "PYTHONPATH": str(REPO_ROOT)}
    env["INTERNAL_AUTH"] = "off"  # a demo without the secret: what is tested here is the workers
    process = subprocess.Popen([sys.executable, "-c", APP], cwd=REPO_ROOT, env=env, start_new_session=True)
    try:
        wait_for_port("127.0.0.1", port, timeout=30)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_REUSEPORT spreading and /proc are Linux")
def test_two_workers_share_the_port_and_stop_with_sigterm(supervisor: tuple[subprocess.Popen[bytes], int]) -> None:
    process, port = supervisor
    time.sleep(0.5)  # the second worker may bind a moment after the first
    pids = answering_pids(port)
    assert len(pids) == 2
    assert process.pid not in pids, "the supervisor only supervises"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    assert not any(alive(pid) for pid in pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_workers_stop_when_the_supervisor_is_killed(supervisor: tuple[subprocess.Popen[bytes], int]) -> None:
    process, port = supervisor
    time.sleep(0.5)
    pids = answering_pids(port)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids)
