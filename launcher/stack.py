"""Runs the whole platform as real processes: Redis, each service, the gateway.

Used by `make up` (`python -m launcher up`), the integration tests and the benchmarks,
so all three start the platform the same way.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from common.config import DEFAULT_PORTS, REPO_ROOT, env_int, env_str
from common.internal_auth import internal_headers, stored_internal_token
from common.processes import bind_error, describe_exit, signals_deferred
from common.redis import redacted
from common.supervisor import LAUNCHER_RESTARTS_ENV
from launcher.redis_server import (
    CACHE_REDIS,
    STATE_REDIS,
    password_in_url,
    redis_url,
    start_redis,
    stored_redis_password,
    wait_for_port,
)

# Start order: the gateway needs the auth service's keys, so it comes last.
SERVICES = ("auth_service", "geo_service", "route_service", "optimize_service", "job_service")
URL_ENV = {
    "auth_service": "AUTH_SERVICE_URL",
    "geo_service": "GEO_SERVICE_URL",
    "route_service": "ROUTE_SERVICE_URL",
    "optimize_service": "OPTIMIZE_SERVICE_URL",
    "job_service": "JOB_SERVICE_URL",
}
DEFAULT_REDIS_PORT = 6390
REDIS_PROCESSES = ("redis", "redis_cache")
# Where the launcher may run Redis: it starts redis-server on this machine's loopback.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# A host that means "every interface": checked from here through loopback.
ANY_HOSTS = ("", "0.0.0.0", "::")  # noqa: S104 - names to recognise, not to bind


class StartupError(RuntimeError):
    """The platform cannot start; the message says which process, and why."""


def deployed_services() -> list[str]:
    """The services that exist in this checkout (each is a package with a __main__)."""
    return [name for name in SERVICES if (REPO_ROOT / name / "__main__.py").exists()]


def redis_port_from_env(variable: str) -> int | None:
    """The port of the Redis a URL variable names, which the launcher then runs; None if unset."""
    raw = os.environ.get(variable, "")
    if not raw:
        return None
    url = urllib.parse.urlsplit(raw)
    if url.hostname not in LOOPBACK_HOSTS:
        raise StartupError(
            f"{variable}={redacted(raw)!r}: the launcher runs Redis on 127.0.0.1; name a loopback address"
        )
    return url.port or 6379


def connect_host(host: str) -> str:
    """How this machine reaches a server listening on `host`."""
    return "127.0.0.1" if host in ANY_HOSTS else host


def port_variable(name: str) -> str:
    """The variable that chooses the port of the process `name`."""
    return {"redis": "REDIS_URL", "redis_cache": "REDIS_CACHE_URL"}.get(name, f"{name.upper()}_PORT")


@dataclass
class Stack:
    data_dir: Path
    ports: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PORTS))
    redis_port: int = DEFAULT_REDIS_PORT
    # The cache Redis; 0: the port after `redis_port`.
    redis_cache_port: int = 0
    services: list[str] = field(default_factory=deployed_services)
    extra_env: dict[str, str] = field(default_factory=dict)
    startup_timeout: float = 120.0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # Where each service listens (`<SERVICE>_HOST`); 127.0.0.1 when not named.
    hosts: dict[str, str] = field(default_factory=dict)
    # Times each process was started again after it ended (launcher.supervisor).
    restarts: dict[str, int] = field(default_factory=dict)
    started_at: dict[str, float] = field(default_factory=dict)
    # The Redis password REDIS_URL names (`make up`'s environment); empty: the stored one.
    given_redis_password: str = field(default="", repr=False)

    @classmethod
    def from_env(cls, data_dir: Path, services: list[str]) -> Stack:
        """The stack `make up` runs: ports, hosts and Redis from the variables README documents
        (`<SERVICE>_PORT`, `<SERVICE>_HOST`, `REDIS_URL`, `REDIS_CACHE_URL`)."""
        names = [*services, "gateway"]
        return cls(
            data_dir=data_dir,
            ports={name: env_int(f"{name.upper()}_PORT", DEFAULT_PORTS[name]) for name in names},
            hosts={name: env_str(f"{name.upper()}_HOST", "127.0.0.1") for name in names},
            redis_port=redis_port_from_env("REDIS_URL") or DEFAULT_REDIS_PORT,
            redis_cache_port=redis_port_from_env("REDIS_CACHE_URL") or 0,
            services=services,
            given_redis_password=password_in_url(env_str("REDIS_URL", "")),
        )

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @cached_property
    def redis_password(self) -> str:
        """What both Redis servers require: the one given, else the one made at this data
        directory's first start (0600) and reused after, like the internal token."""
        return self.given_redis_password or stored_redis_password(self.data_dir)

    @property
    def redis_url(self) -> str:
        return redis_url(self.redis_port, self.redis_password)

    @property
    def redis_cache_url(self) -> str:
        return redis_url(self.redis_cache_port or self.redis_port + 1, self.redis_password)

    def host(self, name: str) -> str:
        return self.hosts.get(name, "127.0.0.1")

    def url(self, name: str) -> str:
        host = connect_host(self.host(name))
        return f"http://{f'[{host}]' if ':' in host else host}:{self.ports[name]}"

    @property
    def base_url(self) -> str:
        return self.url("gateway")

    @cached_property
    def internal_token(self) -> str:
        """The secret of every internal call: the one given (extra_env, then the environment),
        else the one made at this data directory's first start (0600) and reused after."""
        given = self.extra_env.get("INTERNAL_TOKEN") or os.environ.get("INTERNAL_TOKEN")
        return given or stored_internal_token(self.data_dir)

    def internal_headers(self) -> dict[str, str]:
        """For a call straight to a service's port, as the gateway and the services make them."""
        return internal_headers(self.internal_token)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "DATA_DIR": str(self.data_dir),
                "REDIS_URL": self.redis_url,
                "REDIS_CACHE_URL": self.redis_cache_url,
                "PYTHONPATH": str(REPO_ROOT),
                "PYTHONUNBUFFERED": "1",
                "INTERNAL_TOKEN": self.internal_token,
            }
        )
        for name, port in self.ports.items():
            env[f"{name.upper()}_PORT"] = str(port)
            env[f"{name.upper()}_HOST"] = self.host(name)
        for name in self.services:
            env[URL_ENV[name]] = self.url(name)
        env.update(self.extra_env)
        return env

    def login(self, tier: str = "unlimited") -> str:
        """A token for a new account of `tier`: made with the account console, logged in through
        the gateway. What the integration tests and the benchmarks call the API with."""
        return self.token_for(*self.add_user(tier))

    def add_user(self, tier: str = "unlimited") -> tuple[str, str]:
        """A new account of `tier` made with the account console: its e-mail and password."""
        email, password = f"user-{uuid.uuid4().hex[:12]}@example.com", uuid.uuid4().hex
        console = [sys.executable, "-m", "auth_service.console", "add-user", email, "--password", password]
        subprocess.run(
            [*console, "--tier", tier], cwd=REPO_ROOT, env=self.env(), capture_output=True, check=True, timeout=60
        )
        return email, password

    def token_for(self, email: str, password: str) -> str:
        """A token for the account, logged in through the gateway."""
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
            self.check_ports()
            with signals_deferred():  # a Redis started but not yet recorded would outlive a stop
                self.start_redis()
            self.started_at.update(dict.fromkeys(REDIS_PROCESSES, time.monotonic()))
            for name in self.services:
                self.start_process(name)
            self.start_process("gateway")
            for name in [*self.services, "gateway"]:
                self.wait_healthy(name)
        except BaseException:
            self.stop()
            raise

    def listeners(self) -> Iterator[tuple[str, str, int]]:
        """Each process this stack starts, where it listens: (name, host, port)."""
        yield "redis", "127.0.0.1", self.redis_port
        yield "redis_cache", "127.0.0.1", self.redis_cache_port or self.redis_port + 1
        for name in [*self.services, "gateway"]:
            yield name, self.host(name), self.ports[name]

    def check_ports(self) -> None:
        """Fails at once, naming the port and the cause, when one is taken (by an earlier run,
        another program) or given to two of its processes: else that process would exit and its
        port answer as something else."""
        owners: dict[int, str] = {}
        for name, _host, port in self.listeners():
            if port and port in owners:
                raise StartupError(f"{owners[port]} and {name} are both given port {port}: choose another port ({port_variable(name)})")
            owners[port] = name
        taken = []
        for name, host, port in self.listeners():
            if name in self.processes:
                continue  # started by this stack already
            reason = bind_error(host, port)
            if reason:
                taken.append(f"{name} cannot listen on {host}:{port}: {reason} (choose another: {port_variable(name)})")
        if taken:
            # Every taken port at once: beside another copy, one at a time took eight retries (issue 32).
            raise StartupError(f"{len(taken)} port(s) taken; stop what holds them, or choose others:\n  " + "\n  ".join(taken))

    def restart(self, name: str) -> None:
        """Starts a process that ended again, without waiting for it (launcher.supervisor)."""
        self.restarts[name] = self.restarts.get(name, 0) + 1
        if name in REDIS_PROCESSES:
            stopped = [redis for redis in REDIS_PROCESSES if not self.running(redis)]
            with signals_deferred():
                self.start_redis()  # starts whichever Redis is not running
            self.started_at.update(dict.fromkeys(stopped, time.monotonic()))
        else:
            self.start_process(name, wait=False)

    def start_redis(self) -> None:
        """Starts the state Redis ("redis") and the cache Redis ("redis_cache"), whichever is not running."""
        password = self.redis_password
        if not self.running("redis"):
            self.processes["redis"] = start_redis(
                self.redis_port, self.data_dir / "redis", password=password, role=STATE_REDIS
            )
        if not self.running("redis_cache"):
            port = self.redis_cache_port or self.redis_port + 1
            self.processes["redis_cache"] = start_redis(
                port, self.data_dir / "redis-cache", password=password, persist=False, role=CACHE_REDIS
            )

    def running(self, name: str) -> bool:
        process = self.processes.get(name)
        return process is not None and process.poll() is None

    def start_process(self, name: str, *, wait: bool = True) -> None:
        log_path = self.log_dir / f"{name}.log"
        env = {**self.env(), LAUNCHER_RESTARTS_ENV: str(self.restarts.get(name, 0))}
        with open(log_path, "ab") as log, signals_deferred():  # the child keeps its own copy of `log`
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", name],
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started_at[name] = time.monotonic()
        if wait:
            host = connect_host(self.host(name))
            wait_for_port_or_exit(self.processes[name], host, self.ports[name], self.startup_timeout, log_path)

    def wait_healthy(self, name: str, timeout: float | None = None) -> None:
        """Until `name` answers /health with 200 as itself: a listener that is not ours does
        not count, and our process ending fails at once with its last log lines."""
        timeout = timeout or self.startup_timeout
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            process = self.processes.get(name)
            if process is not None and process.poll() is not None:
                raise StartupError(
                    f"{name} exited during start-up ({describe_exit(process.returncode)}):\n{self.log_tail(name)}"
                )
            answer = self.health(name)
            if answer.status == 200 and is_health_of(name, answer.body):
                return
            last = answer.describe(name)
            time.sleep(0.1)
        raise StartupError(f"{name} is not healthy after {timeout}s ({last}); see {self.log_dir / (name + '.log')}")

    def health(self, name: str) -> HealthAnswer:
        try:
            with urllib.request.urlopen(self.url(name) + "/health", timeout=2) as resp:  # noqa: S310 - our own URL
                return HealthAnswer.read(resp.status, resp.read())
        except urllib.error.HTTPError as exc:
            return HealthAnswer.read(exc.code, exc.read())
        except OSError as exc:
            return HealthAnswer(None, None, str(exc))
        except http.client.HTTPException as exc:  # e.g. a Redis on the port: not HTTP, not ours
            return HealthAnswer(None, None, f"a server that is not {name} and does not speak HTTP ({exc!r:.80})")

    def log_tail(self, name: str) -> str:
        path = self.log_dir / f"{name}.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            stop_all({name: process})

    def stop(self) -> None:
        """Every process this stack started, at once: SIGTERM, then what is left of each one's
        process group (workers, pool processes) is killed."""
        names = ["gateway", *reversed(self.services), *REDIS_PROCESSES]
        names += [name for name in self.processes if name not in names]
        stop_all({name: self.processes.pop(name) for name in names if name in self.processes})

    def dead_processes(self) -> list[str]:
        return [name for name, process in self.processes.items() if process.poll() is not None]


STOP_TIMEOUT_S = 20.0  # a multi-worker service waits up to 15 s for its workers


def stop_all(processes: dict[str, subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each, a wait shared by all, then SIGKILL to each one's process group: each was
    started in a session of its own, so the group holds its workers and pool processes."""
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for process in processes.values():
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # what outlived its leader


@dataclass(frozen=True)
class HealthAnswer:
    """What a /health request got: the status and JSON body, or why there was no answer."""

    status: int | None
    body: object
    error: str = ""

    @classmethod
    def read(cls, status: int, raw: bytes) -> HealthAnswer:
        try:
            return cls(status, json.loads(raw))
        except ValueError:
            return cls(status, None)

    def describe(self, name: str) -> str:
        if self.status is None:
            return self.error
        if not is_health_of(name, self.body):
            return f"HTTP {self.status} from a server that is not {name}"
        return f"HTTP {self.status}"


def is_health_of(name: str, body: object) -> bool:
    """Whether a /health body is our `name`'s: each service names itself; the gateway lists
    its upstreams."""
    if not isinstance(body, dict):
        return False
    return body.get("service") == name or (name == "gateway" and isinstance(body.get("services"), dict))


def wait_for_port_or_exit(
    process: subprocess.Popen[bytes], host: str, port: int, timeout: float, log_path: Path
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
            raise StartupError(f"{log_path.stem} exited during start-up ({describe_exit(process.returncode)}):\n{tail}")
        try:
            wait_for_port(host, port, timeout=0.5)
            return
        except TimeoutError:
            continue
    raise StartupError(f"{log_path.stem}: nothing listens on port {port} after {timeout}s")
