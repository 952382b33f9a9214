"""Runs the whole platform as real processes: Redis, each service, the gateway.

Used by `make up` (`python -m launcher up`), the integration tests and the benchmarks,
so all three start the platform the same way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from common.config import DEFAULT_PORTS, REPO_ROOT
from launcher.redis_server import start_redis, wait_for_port

# Start order: the gateway needs the auth service's keys, so it comes last.
SERVICES = ("auth_service", "geo_service", "route_service", "optimize_service")
URL_ENV = {
    "auth_service": "AUTH_SERVICE_URL",
    "geo_service": "GEO_SERVICE_URL",
    "route_service": "ROUTE_SERVICE_URL",
    "optimize_service": "OPTIMIZE_SERVICE_URL",
}
DEFAULT_REDIS_PORT = 6390


def deployed_services() -> list[str]:
    """The services that exist in this checkout (each is a package with a __main__)."""
    return [name for name in SERVICES if (REPO_ROOT / name / "__main__.py").exists()]


@dataclass
class Stack:
    data_dir: Path
    ports: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PORTS))
    redis_port: int = DEFAULT_REDIS_PORT
    services: list[str] = field(default_factory=deployed_services)
    extra_env: dict[str, str] = field(default_factory=dict)
    startup_timeout: float = 120.0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    @property
    def base_url(self) -> str:
        return self.url("gateway")

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "DATA_DIR": str(self.data_dir),
                "REDIS_URL": self.redis_url,
                "PYTHONPATH": str(REPO_ROOT),
                "PYTHONUNBUFFERED": "1",
            }
        )
        for name, port in self.ports.items():
            env[f"{name.upper()}_PORT"] = str(port)
            env[f"{name.upper()}_HOST"] = "127.0.0.1"
        for name in self.services:
            env[URL_ENV[name]] = self.url(name)
        env.update(self.extra_env)
        return env

    def login(self, tier: str = "unlimited") -> str:
        """A token for a new account of `tier`: made with the account console, logged in through
        the gateway. What the integration tests and the benchmarks call the API with."""
        email, password = f"user-{uuid.uuid4().hex[:12]}@example.com", uuid.uuid4().hex
        console = [sys.executable, "-m", "auth_service.console", "add-user", email, "--password", password]
        subprocess.run(
            [*console, "--tier", tier], cwd=REPO_ROOT, env=self.env(), capture_output=True, check=True, timeout=60
        )
        request = urllib.request.Request(  # noqa: S310 - loopback
            self.base_url + "/v1/authenticate",
            data=json.dumps({"user": email, "password": password}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
            return str(json.loads(answer.read())["token"])

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.start_redis()
            for name in self.services:
                self.start_process(name)
            self.start_process("gateway")
            for name in [*self.services, "gateway"]:
                self.wait_healthy(name)
        except BaseException:
            self.stop()
            raise

    def start_redis(self) -> None:
        self.processes["redis"] = start_redis(self.redis_port, self.data_dir / "redis")

    def start_process(self, name: str) -> None:
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", name],
            cwd=REPO_ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_for_port_or_exit(
            self.processes[name], self.ports[name], self.startup_timeout, self.log_dir / f"{name}.log"
        )

    def wait_healthy(self, name: str, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.startup_timeout)
        last = ""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url(name) + "/health", timeout=2) as resp:  # noqa: S310 - loopback
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = str(exc)
            time.sleep(0.1)
        raise TimeoutError(f"{name} is not healthy after {timeout or self.startup_timeout}s ({last})")

    def stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop(self) -> None:
        for name in ["gateway", *reversed(self.services), "redis"]:
            self.stop_process(name)

    def dead_processes(self) -> list[str]:
        return [name for name, process in self.processes.items() if process.poll() is not None]


def wait_for_port_or_exit(process: subprocess.Popen[bytes], port: int, timeout: float, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
            raise RuntimeError(f"process exited with {process.returncode} during start-up:\n{tail}")
        try:
            wait_for_port("127.0.0.1", port, timeout=0.5)
            return
        except TimeoutError:
            continue
    raise TimeoutError(f"nothing listens on port {port} after {timeout}s")
