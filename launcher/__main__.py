"""`python -m launcher up`: import the map, start everything on loopback, say how to use it."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from common.config import REPO_ROOT, data_dir
from launcher.stack import Stack, deployed_services

# Each service that prepares data from the map, and where its datasets go under DATA_DIR.
IMPORTERS = {"route_service": "maps", "geo_service": "geo"}


def import_map(data: Path) -> None:
    """Runs each service's importer on the same map (a no-op when already imported).

    The inputs come from OSM_FILE, else the default map (see common.osm_inputs)."""
    for service, folder in IMPORTERS.items():
        if service in deployed_services() and (REPO_ROOT / service / "importer.py").exists():
            command = [sys.executable, "-m", f"{service}.importer", "--out", str(data / folder)]
            subprocess.run(command, cwd=REPO_ROOT, check=True)


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


def print_welcome(stack: Stack) -> None:
    base = stack.base_url
    print(f"\nThe platform is up: {base}  (docs: {base}/docs, spec: {base}/v1/openapi.json)")
    print(f"Logs: {stack.log_dir}")
    if "auth_service" in stack.services:
        email, password = demo_credentials()
        token = console("demo-token", "--duration", "86400")
        print(f"\nDemo user: {email}  password: {password or '(set earlier; see demo-credentials.txt)'}")
        print(f"  curl -s -X POST {base}/v1/authenticate -H 'Content-Type: application/json' \\")
        print(f'       -d \'{{"user": "{email}", "password": "{password or "..."}"}}\'')
        print(f"\nA demo token (1 day, demo rate limits):\n  {token}")
        print(
            f"  curl -s '{base}/v1/route?from=60.1699,24.9384&to=60.1640,24.9460' -H 'Authorization: Bearer {token[:16]}...'"
        )
        print("\nMore accounts: .venv/bin/python -m auth_service.console --help")
    print("\nCtrl-C stops everything.", flush=True)


def up() -> int:
    data = data_dir()
    os.environ.setdefault("DATA_DIR", str(data))
    import_map(data)
    stack = Stack(data_dir=data, services=deployed_services())
    print(f"starting redis and {', '.join(stack.services)} and the gateway ...", flush=True)
    stack.start()
    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    parent = os.getppid()
    try:
        print_welcome(stack)
        while not stopping:
            if os.getppid() != parent:
                print("the parent process (make) went away", file=sys.stderr)
                return 1
            dead = stack.dead_processes()
            if dead:
                print(f"stopped unexpectedly: {', '.join(dead)}; see {stack.log_dir}", file=sys.stderr)
                return 1
            time.sleep(0.5)
        return 0
    finally:
        print("stopping ...", flush=True)
        stack.stop()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m launcher", description=__doc__)
    parser.add_argument(
        "command",
        choices=["up", "import"],
        help="up: import the map and run the platform in the foreground; import: only prepare the map data",
    )
    args = parser.parse_args()
    if args.command == "import":
        import_map(data_dir())
        return 0
    return up()


if __name__ == "__main__":
    sys.exit(main())
