"""`python -m launcher up`: import the map, start everything on loopback, say how to use it,
and keep it running: a process that ends is started again (launcher.supervisor) until
SIGTERM or Ctrl-C, which stop every process started, at any moment, start-up included."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from common.config import REPO_ROOT, data_dir
from common.datasets import switch_staged
from launcher.stack import Stack, StartupError, deployed_services
from launcher.supervisor import Supervisor

# Each service that prepares data from the map, and where its datasets go under DATA_DIR.
IMPORTERS = {"route_service": "maps", "geo_service": "geo"}


class StopRequested(BaseException):
    """SIGTERM or SIGINT: raised wherever the launcher is, start-up included, so that the
    `finally` of `up` stops what was started. Not an Exception: no `except Exception` eats it."""


def stop_on_signals() -> None:
    def request_stop(signum: int, _frame: object) -> None:
        ignore_signals()  # once: a second signal must not cut the stopping short
        raise StopRequested(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)


def ignore_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def import_map(data: Path, services: list[str]) -> None:
    """Runs each service's importer on the same map (a no-op when already imported), each
    staging its dataset, then makes them all current at once: a running platform's routing and
    geocoding switch to the new map together (each service watches its current.json), not the
    geocoder minutes before the routing.

    The inputs come from OSM_FILE, else the default map (see common.osm_inputs)."""
    roots = []
    for service, folder in IMPORTERS.items():
        if service in services and (REPO_ROOT / service / "importing").is_dir():
            run_to_the_end([sys.executable, "-m", f"{service}.importing", "--out", str(data / folder), "--stage"])
            roots.append(data / folder)
    for root, digest in switch_staged(roots).items():
        print(f"{root.name}: dataset {digest} is current", flush=True)


def run_to_the_end(command: list[str]) -> None:
    """Runs a command in a process group of its own, so that a stop ends it with everything it
    started (the importers run OSRM's tools)."""
    process = subprocess.Popen(command, cwd=REPO_ROOT, start_new_session=True)
    try:
        code = process.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        raise
    if code != 0:
        raise subprocess.CalledProcessError(code, command)


def console(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "auth_service.console", *args],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip()


def demo_credentials() -> tuple[str, str | None]:
    """The demo user, made on the first start; its password as stored then."""
    from auth_service.config import AuthConfig
    from auth_service.console import ensure_demo_user, read_demo_credentials

    config = AuthConfig.from_env("auth_service")
    email, password = ensure_demo_user(config)
    stored = read_demo_credentials(config)
    return email, password or (stored[1] if stored else None)


def example_route(stack: Stack, token: str, tries: int = 8) -> tuple[str, str] | None:
    """Two points of the loaded map that the platform routes between, 0.5 to 5 km apart, for
    the welcome's example (a fixed Helsinki pair failed on any other map): the map's sampled
    road nodes in its largest area, each pair asked once (within a demo token's burst)."""
    from common.geo import haversine_m
    from route_service.dataset import current_dataset

    try:
        dataset = current_dataset(stack.data_dir / IMPORTERS["route_service"])
    except Exception:  # no example rather than no welcome
        return None
    area = dataset.areas[0] if dataset.areas else None
    points = [p for p in dataset.sample_points if area is None or area.contains(p)]
    pairs = [(a, b) for a, b in itertools.pairwise(points) if 500 <= haversine_m(a, b) <= 5000]
    for a, b in pairs[:tries]:
        text = f"{a.lat:.5f},{a.lon:.5f}", f"{b.lat:.5f},{b.lon:.5f}"
        url = f"{stack.base_url}/v1/route?from={text[0]}&to={text[1]}"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})  # noqa: S310 - loopback
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            if answer.status == 200:
                return text
    return None


def print_welcome(stack: Stack) -> None:
    base = stack.base_url
    print(f"\nThe platform is up: {base}  (docs: {base}/docs, map: {base}/map, spec: {base}/v1/openapi.json)")
    print(f"Logs: {stack.log_dir}")
    if "auth_service" in stack.services:
        email, password = demo_credentials()
        token = console("demo-token", "--duration", "86400")
        print(f"\nDemo user: {email}  password: {password or '(set earlier; see demo-credentials.txt)'}")
        print(f"  curl -s -X POST {base}/v1/authenticate -H 'Content-Type: application/json' \\")
        print(f'       -d \'{{"user": "{email}", "password": "{password or "..."}"}}\'')
        print(f"\nA demo token (1 day, demo rate limits):\n  {token}")
        pair = example_route(stack, token) if "route_service" in stack.services else None
        if pair is not None:
            print(f"  curl -s '{base}/v1/route?from={pair[0]}&to={pair[1]}' -H 'Authorization: Bearer {token[:16]}...'")
        print("\nMore accounts: .venv/bin/python -m auth_service.console --help")
    print("\nCtrl-C stops everything.", flush=True)


def up(services: list[str]) -> int:
    """Runs the platform until a signal (0), a start-up failure or the parent's end (1)."""
    stop_on_signals()  # first: a signal during the map import or the start stops cleanly too
    parent = os.getppid()
    data = data_dir()
    os.environ.setdefault("DATA_DIR", str(data))
    stack: Stack | None = None
    try:
        stack = Stack.from_env(data, services)
        stack.check_ports()  # before the import, which may take minutes
        import_map(data, services)
        print(f"starting redis and {', '.join(stack.services)} and the gateway ...", flush=True)
        stack.start()
        print_welcome(stack)
        return keep_running(stack, parent)
    except StopRequested:
        return 0
    except StartupError as exc:
        print(f"the platform could not start: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        try:
            ignore_signals()
        finally:  # even when a signal lands just before the line above
            if stack is not None and stack.processes:
                print("stopping ...", flush=True)
                stack.stop()


def keep_running(stack: Stack, parent: int) -> int:
    """Restarts what ends until a signal stops the launcher or its parent (make) goes away."""
    supervisor = Supervisor(stack)
    while os.getppid() == parent:
        supervisor.check()
        time.sleep(0.5)
    print("the parent process (make) went away", file=sys.stderr)
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m launcher", description=__doc__)
    parser.add_argument(
        "command",
        choices=["up", "import"],
        help="up: import the map and run the platform in the foreground; import: only prepare the map data "
        "(a running platform switches to it, routing and geocoding together)",
    )
    parser.add_argument(
        "--services",
        nargs="+",
        choices=deployed_services(),
        default=deployed_services(),
        help="run (or import for) only these services, with Redis and the gateway (default: every one)",
    )
    args = parser.parse_args()
    services = [name for name in deployed_services() if name in args.services]  # in start order
    if args.command == "import":
        import_map(data_dir(), services)
        return 0
    try:
        return up(services)
    except StopRequested:  # one that landed while `up` was already stopping
        return 0


if __name__ == "__main__":
    sys.exit(main())
