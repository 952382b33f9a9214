"""The worker supervisor (common.supervisor): a killed worker is started again after a back-off
and counted in every worker's /health and /metrics; a signal still stops everything; a port
another program holds, or a worker that cannot start, ends the service at once."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from common.config import REPO_ROOT
from common.processes import Backoff, describe_exit
from launcher.redis_server import free_port, wait_for_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_REUSEPORT, /proc, PDEATHSIG")

# A service with one extra route that tells which process answered; FAIL_AT_START makes every
# worker's app fail while it starts.
APP = """
import os
from common.config import BaseConfig
from common.service import base_app, json_response, run

async def whoami(request):
    return json_response({"pid": os.getpid()})

async def fail(app):
    raise RuntimeError("this worker cannot start")

def create_app(config):
    app = base_app(config, with_redis=False)
    app.router.add_get("/whoami", whoami)
    if os.environ.get("FAIL_AT_START"):
        app.on_startup.append(fail)
    return app

run(create_app, BaseConfig.from_env("demo_service"))
"""
# The new worker answers within this time of the kill: 0.5 s back-off, a fork, an app.
REPLACED_WITHIN_S = 5.0


@dataclass
class Supervisor:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
            body = resp.read()
            return json.loads(body) if resp.headers.get("Content-Type", "").startswith("application/json") else body

    def answering_pids(self, attempts: int = 60) -> set[int]:
        # A new connection each time, so the kernel picks a worker each time.
        return {int(self.get("/whoami")["pid"]) for _ in range(attempts)}

    def log_lines(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]


def start_supervisor(log: Path, port: int, **env: str) -> subprocess.Popen[bytes]:
    environment = {
        **os.environ,
        "DEMO_SERVICE_PORT": str(port),
        "DEMO_SERVICE_WORKERS": "2",
        "PYTHONPATH": str(REPO_ROOT),
        "INTERNAL_AUTH": "off",  # no internal credential: this app has no internal callers
        **env,
    }
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", APP], cwd=REPO_ROOT, env=environment, stderr=out, start_new_session=True
        )


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"  # a zombie is dead too
    except FileNotFoundError:
        return False


def gone(pid: int) -> bool:
    """Ended and collected by its parent. Not just a zombie: the zombie of a thread group's
    first thread shows while its other threads, and so its listening socket, still live."""
    return not os.path.exists(f"/proc/{pid}")


def children(pid: int) -> set[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return {int(child) for child in listing.read().split()}


def wait_until(condition: Any, timeout: float, step: float = 0.05) -> float:
    """Seconds until `condition()` held; fails after `timeout`."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"not within {timeout} s"
        time.sleep(step)
    return time.monotonic() - started


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    port = free_port()
    process = start_supervisor(tmp_path / "supervisor.log", port)
    try:
        wait_for_port("127.0.0.1", port, timeout=30)
        running = Supervisor(process, port, tmp_path / "supervisor.log")
        wait_until(lambda: len(running.answering_pids(20)) == 2, timeout=10)
        yield running
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_a_killed_worker_is_started_again_and_counted(supervisor: Supervisor) -> None:
    first = children(supervisor.process.pid)
    assert len(first) == 2 and supervisor.get("/health")["checks"]["workerRestarts"] == 0
    victim, survivor = sorted(first)
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: gone(victim), timeout=5)

    # The survivor serves every request meanwhile; a new worker joins it within the bound.
    assert supervisor.answering_pids(10) == {survivor}
    seconds = wait_until(lambda: len(supervisor.answering_pids(10)) == 2, timeout=REPLACED_WITHIN_S)
    print(f"replaced and answering after {seconds:.2f} s")
    replacement = children(supervisor.process.pid) - {survivor}
    assert len(replacement) == 1 and replacement != {victim}
    assert supervisor.answering_pids() == {survivor, *replacement}

    # Every worker, old and new, reads the same count.
    for _ in range(10):
        checks = supervisor.get("/health")["checks"]
        assert (checks["workers"], checks["workerRestarts"], checks["serviceRestarts"]) == (2, 1, 0)
    metrics = supervisor.get("/metrics").decode()
    assert 'worker_restarts_total{service="demo_service"} 1.0' in metrics
    assert 'service_workers{service="demo_service"} 2.0' in metrics
    restarts = [line for line in supervisor.log_lines() if "starting it again" in line["msg"]]
    assert len(restarts) == 1, restarts
    assert "killed by SIGKILL" in restarts[0]["msg"] and restarts[0]["level"] == "ERROR"

    # SIGTERM still stops every worker, the replacement included, and the supervisor.
    supervisor.process.send_signal(signal.SIGTERM)
    assert supervisor.process.wait(timeout=20) == 0
    assert not any(alive(pid) for pid in {survivor, *replacement})


def test_a_worker_that_keeps_dying_waits_longer_each_time(supervisor: Supervisor) -> None:
    survivor, victim = sorted(children(supervisor.process.pid))
    for restarts in range(1, 4):
        os.kill(victim, signal.SIGKILL)
        known = {survivor, victim}
        wait_until(lambda known=known: len(children(supervisor.process.pid) - known) == 1, timeout=REPLACED_WITHIN_S)
        (victim,) = children(supervisor.process.pid) - {survivor}
        wait_until(lambda: len(supervisor.answering_pids(10)) == 2, timeout=REPLACED_WITHIN_S)
        assert supervisor.get("/health")["checks"]["workerRestarts"] == restarts
    waits = [line["msg"] for line in supervisor.log_lines() if "starting it again" in line["msg"]]
    # The same worker, each time soon after its start: the wait doubles.
    assert [wait.split(" in ")[1].split(" s")[0] for wait in waits] == ["0.5", "1.0", "2.0"]
    assert alive(survivor)


def test_a_port_held_by_another_program_ends_the_service_at_once(tmp_path: Path) -> None:
    with socket.socket() as foreign:
        foreign.bind(("127.0.0.1", 0))
        foreign.listen()
        port = foreign.getsockname()[1]
        started = time.monotonic()
        process = start_supervisor(tmp_path / "supervisor.log", port)
        try:
            code = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    elapsed = time.monotonic() - started
    text = (tmp_path / "supervisor.log").read_text()
    assert code == 1 and f"127.0.0.1:{port}" in text and "Address already in use" in text
    assert elapsed < 10, elapsed  # python's start-up, then the check: no restart loop


def test_a_worker_that_cannot_start_ends_the_service_instead_of_looping(tmp_path: Path) -> None:
    port = free_port()
    process = start_supervisor(tmp_path / "supervisor.log", port, FAIL_AT_START="1")
    try:
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    text = (tmp_path / "supervisor.log").read_text()
    assert code == 1 and "could not start" in text and "this worker cannot start" in text
    assert "starting it again" not in text


def test_the_back_off_doubles_up_to_its_cap_and_restarts_after_a_healthy_run() -> None:
    backoff = Backoff(first_s=0.5, max_s=30.0, stable_after_s=60.0)
    assert [backoff.next_delay(lived_s=1.0) for _ in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert backoff.next_delay(lived_s=61.0) == 0.5
    assert backoff.next_delay(lived_s=0.2) == 1


def test_exits_are_described_by_code_or_signal() -> None:
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"
    assert describe_exit(3) == "exit code 3"



def test_only_a_stop_signal_stops_the_workers() -> None:
    """py-spy attaching to a route service once ended its supervisor with a ValueError: the
    interrupted wait returned a siginfo whose number (47567936) is no signal at all."""
    from common.supervisor import asks_to_stop

    assert asks_to_stop(signal.SIGTERM) and asks_to_stop(signal.SIGINT)
    assert not asks_to_stop(signal.SIGCHLD)
    assert not asks_to_stop(47567936)
