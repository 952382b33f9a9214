"""Crashes survived and start-up made safe, on real processes.

- A route-service worker killed by SIGKILL: routes through the gateway answer 200 again within
  ROUTE_RECOVERY_S and the service's /health counts the restart (common.supervisor).
- `python -m launcher up` (what `make up` runs): a service or Redis killed is started again and
  serving within LAUNCHER_RECOVERY_S; a taken port fails start-up within seconds naming it; a
  SIGTERM during start-up or after it leaves no process behind; the documented variables place
  every process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from common.config import REPO_ROOT
from common.internal_auth import TOKEN_FILE, internal_headers
from launcher.redis_server import free_port
from launcher.stack import Stack
from route_service.importing.importer import Progress, import_maps
from tests.integration.conftest import TEST_ENV, make_stack

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PDEATHSIG are Linux")

# Bounds asserted below; measured on 2 busy cores: see the figures each test prints.
ROUTE_RECOVERY_S = 5.0  # the other worker serves meanwhile; only pooled connections to the dead one fail
LAUNCHER_RECOVERY_S = 15.0  # 0.5 s back-off, then a fresh Python process imports and opens its data
START_FAILURE_S = 10.0  # Python's start and the port check; nothing is waited for
STOP_S = 30.0  # each process gets 20 s after SIGTERM, all at once
WELCOME = "Ctrl-C stops everything."
ROUTE = "/v1/route?from=43.7394,7.4276&to=43.7347,7.4217"


def http_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """A status and a JSON body (None when not JSON); status 0 when nothing answered."""
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:  # noqa: S310 - loopback
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (OSError, orjson.JSONDecodeError):
        return 0, None


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds until `condition()` held."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - started


def children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found.update(int(child) for child in listing.read().split())
    except (FileNotFoundError, ProcessLookupError):
        pass
    return found


def descendants(pid: int) -> set[int]:
    found = children(pid)
    for child in list(found):
        found |= descendants(child)
    return found


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except FileNotFoundError:
        return ""


def gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def redis_answers(port: int) -> bool:
    """A Redis server answers on `port`: without the password it refuses the PING (NOAUTH), which
    is an answer all the same."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


# ---------------------------------------------------------------- a route worker killed


@pytest.fixture(scope="module")
def route_stack(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> Iterator[Stack]:
    """Auth, a two-worker route service on Monaco (one profile) and the gateway."""
    data_dir = tmp_path_factory.mktemp("supervised-route")
    import_maps([shared_osm / "monaco.osm.pbf"], data_dir / "maps", profiles=["car-fastest"],
                progress=Progress(emit=lambda _line: None))  # fmt: skip
    stack = make_stack(
        data_dir, ["auth_service", "route_service"], ROUTE_SERVICE_WORKERS="2", ROUTE_LARGE_PROCESSES="0"
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def test_a_killed_route_worker_is_replaced_and_routes_answer_again(route_stack: Stack) -> None:
    headers = {"Authorization": f"Bearer {route_stack.login()}"}
    assert http_get(route_stack.base_url + ROUTE, headers)[0] == 200
    supervisor = route_stack.processes["route_service"].pid
    workers = children(supervisor)
    assert len(workers) == 2
    victim = min(workers)
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    wait_for(lambda: gone(victim), 5, "the killed worker collected")

    statuses: list[int] = []

    def route_answers() -> bool:
        statuses.append(http_get(route_stack.base_url + ROUTE, headers)[0])
        return statuses[-1] == 200

    wait_for(route_answers, ROUTE_RECOVERY_S, "a route through the gateway")
    answered = time.monotonic() - killed
    # From then on every request is served, by the survivor and then by both.
    assert all(http_get(route_stack.base_url + ROUTE, headers)[0] == 200 for _ in range(20))

    def replaced_and_counted() -> bool:
        status, body = http_get(route_stack.url("route_service") + "/health", route_stack.internal_headers())
        return len(children(supervisor) - {victim}) == 2 and status == 200 and body["checks"]["workerRestarts"] == 1

    wait_for(replaced_and_counted, ROUTE_RECOVERY_S, "a new worker counted in /health")
    replaced = time.monotonic() - killed
    print(f"\nroute worker killed: first 200 after {answered:.2f} s ({statuses}); replaced in {replaced:.2f} s")
    assert all(http_get(route_stack.base_url + ROUTE, headers)[0] == 200 for _ in range(20))
    lines = (route_stack.log_dir / "route_service.log").read_text().splitlines()
    (restart,) = [line for line in lines if "starting it again" in line]  # logged once
    assert "killed by SIGKILL" in restart and "starting it again in 0.5 s" in restart


# ---------------------------------------------------------------- `python -m launcher up`


@dataclass
class Launcher:
    process: subprocess.Popen[bytes]
    data_dir: Path
    ports: dict[str, int]

    @property
    def output(self) -> str:
        return (self.data_dir / "launcher.out").read_text(errors="replace")

    @property
    def errors(self) -> str:
        return (self.data_dir / "launcher.err").read_text(errors="replace")

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    def internal_headers(self) -> dict[str, str]:
        """The credential `make up` made under DATA_DIR: /health shows its checks only with it."""
        return internal_headers((self.data_dir / TOKEN_FILE).read_text(encoding="utf-8").strip())

    def child(self, marker: str) -> int:
        (pid,) = [pid for pid in children(self.process.pid) if marker in command_line(pid)]
        return pid

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=STOP_S)


def start_launcher(data_dir: Path, **env: str) -> Launcher:
    """`python -m launcher up --services auth_service` (no map to import) on free ports, given
    through the variables README documents."""
    ports = {"gateway": free_port(), "auth_service": free_port(), "redis": free_port(), "redis_cache": free_port()}
    environment = {
        **os.environ,
        **TEST_ENV,
        "DATA_DIR": str(data_dir),
        "GATEWAY_PORT": str(ports["gateway"]),
        "AUTH_SERVICE_PORT": str(ports["auth_service"]),
        "REDIS_URL": f"redis://127.0.0.1:{ports['redis']}/0",
        "REDIS_CACHE_URL": f"redis://127.0.0.1:{ports['redis_cache']}/0",
        **env,
    }
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / "launcher.out").open("wb") as out, (data_dir / "launcher.err").open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "launcher", "up", "--services", "auth_service"],
            cwd=REPO_ROOT,
            env=environment,
            stdout=out,
            stderr=err,
        )
    return Launcher(process, data_dir, ports)


def end(launcher: Launcher) -> None:
    """After a test: nothing of this launcher may be left, whatever the test did."""
    if launcher.process.poll() is None:
        leftovers = descendants(launcher.process.pid)
        launcher.process.kill()
        launcher.process.wait()
        for pid in leftovers:  # the tests check that there are none; this only cleans up
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    running = start_launcher(tmp_path_factory.mktemp("launcher"))
    try:
        wait_for(lambda: WELCOME in running.output or running.process.poll() is not None, 90, "the platform up")
        assert running.process.poll() is None, running.errors
        yield running
    finally:
        end(running)


def test_the_documented_variables_place_every_process(launcher: Launcher) -> None:
    assert http_get(launcher.url("gateway") + "/health")[0] == 200
    status, body = http_get(launcher.url("auth_service") + "/health")
    assert status == 200 and body["service"] == "auth_service"
    assert redis_answers(launcher.ports["redis"]) and redis_answers(launcher.ports["redis_cache"])
    assert f"The platform is up: http://127.0.0.1:{launcher.ports['gateway']}" in launcher.output


def test_a_killed_service_is_started_again_and_serves(launcher: Launcher) -> None:
    victim = launcher.child("-m auth_service")
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()

    def serving_again() -> bool:
        status, body = http_get(launcher.url("auth_service") + "/health", launcher.internal_headers())
        return status == 200 and body["checks"]["serviceRestarts"] == 1

    wait_for(serving_again, LAUNCHER_RECOVERY_S, "auth_service serving again")
    wait_for(lambda: http_get(launcher.url("gateway") + "/health")[0] == 200, 5, "the gateway healthy")
    print(f"\nauth_service killed: serving again after {time.monotonic() - killed:.2f} s")
    assert launcher.child("-m auth_service") != victim and launcher.process.poll() is None
    assert launcher.errors.count("auth_service stopped unexpectedly (killed by SIGKILL)") == 1


def test_a_killed_redis_is_started_again(launcher: Launcher) -> None:
    port = launcher.ports["redis"]
    victim = launcher.child(f"127.0.0.1:{port}")
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    wait_for(lambda: gone(victim), 5, "the killed Redis collected")
    wait_for(lambda: redis_answers(port), LAUNCHER_RECOVERY_S, "Redis answering again")
    print(f"\nredis killed: answering again after {time.monotonic() - killed:.2f} s")
    assert launcher.errors.count("redis stopped unexpectedly (killed by SIGKILL)") == 1
    assert http_get(launcher.url("auth_service") + "/health")[0] == 200 and launcher.process.poll() is None


def test_sigterm_stops_every_process_started(launcher: Launcher) -> None:
    started = descendants(launcher.process.pid)
    assert len(started) >= 4  # two Redis, the auth service, the gateway
    assert launcher.stop() == 0
    wait_for(lambda: all(gone(pid) for pid in started), 5, "every process gone")


def test_a_taken_port_fails_start_up_within_seconds_naming_it(tmp_path: Path) -> None:
    with socket.socket() as foreign:
        foreign.bind(("127.0.0.1", 0))
        foreign.listen()
        port = foreign.getsockname()[1]
        started = time.monotonic()
        launcher = start_launcher(tmp_path, AUTH_SERVICE_PORT=str(port))
        try:
            code = launcher.process.wait(timeout=60)
            elapsed = time.monotonic() - started
        finally:
            end(launcher)
    print(f"\ntaken port: start-up failed after {elapsed:.2f} s")
    assert code == 1 and elapsed < START_FAILURE_S
    assert f"auth_service cannot listen on 127.0.0.1:{port}: Address already in use" in launcher.errors
    assert "AUTH_SERVICE_PORT" in launcher.errors
    assert not redis_answers(launcher.ports["redis"])  # checked before anything started


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_start_up_leaves_no_process(tmp_path: Path, signum: signal.Signals) -> None:
    launcher = start_launcher(tmp_path)
    seen: set[int] = set()
    try:

        def auth_service_starting() -> bool:
            seen.update(descendants(launcher.process.pid))
            return any("-m auth_service" in command_line(pid) for pid in seen)

        wait_for(auth_service_starting, 60, "the auth service started")
        launcher.process.send_signal(signum)
        seen.update(descendants(launcher.process.pid))
        assert launcher.process.wait(timeout=STOP_S) == 0
    finally:
        end(launcher)
    assert WELCOME not in launcher.output  # it was still starting
    assert len(seen) >= 3, seen  # two Redis and the auth service at least
    wait_for(lambda: all(gone(pid) for pid in seen), 5, "every process gone")
