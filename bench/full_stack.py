"""The whole platform on one real map, for the fuzz run (bench/fuzz.py) and the soak (bench/soak.py).

Munich (../shared/osm) serves routing (car fastest), optimization and geocoding alike, so every
operation has data behind it. Its imports are cached under var/bench-cache/platform (a no-op after
the first run); accounts, keys, Redis and logs live in a fresh directory per run. Redis, the four
services and the gateway run as real processes on free loopback ports (`launcher.stack.Stack`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common.config import DEFAULT_PORTS, REPO_ROOT
from geo_service.importing.importer import run_import
from launcher.redis_server import free_port
from launcher.stack import Stack
from route_service.importing.importer import Progress, import_maps

PBF = REPO_ROOT.parent / "shared" / "osm" / "munich.osm.pbf"
CACHE_DIR = REPO_ROOT / "var" / "bench-cache" / "platform"
SERVICES = ["auth_service", "geo_service", "route_service", "optimize_service", "job_service"]


def import_munich() -> tuple[Path, Path]:
    """The maps and geocoding index directories (each with current.json), imported when missing."""
    maps, geo = CACHE_DIR / "maps", CACHE_DIR / "geo"
    import_maps([PBF], maps, profiles=["car-fastest"], progress=Progress(emit=lambda _line: None))
    run_import([PBF], geo, emit=lambda _line: None)
    return maps, geo


def loopback_stack(data_dir: Path, services: list[str], **extra_env: str) -> Stack:
    """`services` and the gateway on free loopback ports, the state and cache Redis beside them
    (not started yet)."""
    return Stack(
        data_dir=data_dir,
        ports={name: free_port() for name in DEFAULT_PORTS},
        redis_port=free_port(),
        redis_cache_port=free_port(),
        services=list(services),
        extra_env={"LOG_LEVEL": "WARNING", **extra_env},
        startup_timeout=90,
    )


def one_service(data_dir: Path, name: str, **env: str) -> Stack:
    """`name` alone (no gateway) with its Redis, started and healthy: asked on its own port with
    the internal credential (`Stack.internal_headers`). The caller stops it."""
    stack = Stack(data_dir=data_dir, ports={service: free_port() for service in DEFAULT_PORTS},
                  redis_port=free_port(), services=[name], extra_env={"LOG_LEVEL": "WARNING", **env})  # fmt: skip
    stack.log_dir.mkdir(parents=True, exist_ok=True)
    stack.start_redis()
    try:
        stack.start_process(name)
        stack.wait_healthy(name)
    except BaseException:
        stack.stop()
        raise
    return stack


@contextmanager
def full_stack(data_dir: Path, **extra_env: str) -> Iterator[Stack]:
    """Every service and the gateway on Munich, started and healthy; stopped on exit."""
    maps, geo = import_munich()
    stack = loopback_stack(data_dir, SERVICES, MAP_DIR=str(maps), GEO_INDEX_DIR=str(geo), **extra_env)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()
