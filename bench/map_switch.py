"""A new map into service under load (issue 56, item 6): memory during the switch against steady state.

The whole platform (`launcher.stack.Stack`) serves map A (BENCH_SWITCH_COPIES, default "4,5":
4 copies of Heidelberg, `bench.synthetic_map`) while one client sends routes, isochrones, 10x10
matrices and geocodes through the gateway without pause. Map B (5 copies: every query lies in the
first copy, on both maps) is imported and staged for both services as `make import` does, then
made current at once (`common.datasets.switch_staged`). Sampled every 0.1 s over the route and geo
services' process trees: RSS, PSS and USS (Private_Clean + Private_Dirty: the pages only that
process holds, which a second map held at once would add). Phases: steady on A (after a warm-up),
the switch (from making B current until both services serve B and the route service ended its
switch, then SETTLE_S more), steady on B. The goal: the switch's peak at most 1.3x the larger
steady peak, and no request failed.

Imports are cached under var/bench-cache/map_switch (PBFs and the two staged datasets are made
again each run: a staged dataset is consumed by the switch).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.scale import TimedStack, memory_kb, request, tree
from bench.synthetic_map import SHARED_OSM, write_copies
from common.config import DEFAULT_PORTS, REPO_ROOT
from common.datasets import read_current, switch_staged
from launcher.redis_server import free_port

CACHE = REPO_ROOT / "var" / "bench-cache" / "map_switch"
SERVICES = ["auth_service", "geo_service", "route_service", "optimize_service"]
WATCHED = ("route_service", "geo_service")
IMPORTERS = {"route_service": "maps", "geo_service": "geo"}
STEADY_S = 20.0
WARMUP_S = 8.0
SETTLE_S = 5.0
GOAL_RATIO = 1.3
POINT_A, POINT_B = (49.4093, 8.6940), (49.3988, 8.6724)  # Heidelberg's old town and Bergheim (copy 0)
ADDRESS = "Hauptstraße 100, Heidelberg"


@dataclass
class Phase:
    name: str
    peak: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # service → (RSS, PSS, USS) bytes

    def add(self, service: str, sample: tuple[int, int, int]) -> None:
        old = self.peak.get(service, (0, 0, 0))
        self.peak[service] = (max(old[0], sample[0]), max(old[1], sample[1]), max(old[2], sample[2]))


def tree_sample(pid: int) -> tuple[int, int, int]:
    pids = tree(pid)
    rss = sum(memory_kb(p, "VmRSS") for p in pids)
    pss = sum(memory_kb(p, "Pss") for p in pids)
    uss = sum(memory_kb(p, "Private_Clean") + memory_kb(p, "Private_Dirty") for p in pids)
    return rss * 1024, pss * 1024, uss * 1024


def copies_of(count: int) -> Path:
    pbf = CACHE / f"heidelberg-{count}.osm.pbf"
    if not pbf.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        write_copies([SHARED_OSM / "heidelberg.osm.pbf"], count, pbf)
    return pbf


def import_map(data: Path, pbf: Path, stage: bool) -> None:
    """Both services' importers on one map, as `launcher import` runs them."""
    for service, folder in IMPORTERS.items():
        command = [sys.executable, "-m", f"{service}.importing", "--osm", str(pbf), "--out", str(data / folder)]
        subprocess.run([*command, *(["--stage"] if stage else [])], cwd=REPO_ROOT, check=True,
                       stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})  # fmt: skip


class Load:
    """One client's requests without pause, each answer's status counted."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url, self.header = base_url, {"Authorization": f"Bearer {token}"}
        self.statuses: Counter[int] = Counter()
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def paths(self) -> list[tuple[str, bytes | None]]:
        (a, b), (c, d) = POINT_A, POINT_B
        points = [{"lat": a + 0.001 * i, "lon": b + 0.001 * i} for i in range(10)]
        matrix = json.dumps({"sources": points, "destinations": points}).encode()
        return [(f"/v1/route?from={a},{b}&to={c},{d}&steps=false", None),
                (f"/v1/isochrone?point={a},{b}&time=300", None),
                ("/v1/matrix", matrix),
                (f"/v1/geocoder?address={urllib.parse.quote(ADDRESS)}", None)]  # fmt: skip

    def run(self) -> None:
        paths = self.paths()
        while not self.stop.is_set():
            for path, body in paths:
                try:
                    _, status, payload = request(self.base_url + path, self.header, body)
                except OSError as exc:  # refused or reset: a failure as any other
                    status, payload = 0, str(exc).encode()
                self.statuses[status] += 1
                if status != 200:
                    self.failures.append(f"{path.split('?')[0]} {status}: {payload[:120].decode(errors='replace')}")


def sample_for(stack: TimedStack, phase: Phase, until: threading.Event | float) -> None:
    """Samples the watched services into `phase` every 0.1 s until the event is set or the time passes."""
    end = until if isinstance(until, float) else None
    while (end is None or time.monotonic() < end) and not (isinstance(until, threading.Event) and until.is_set()):
        for name in WATCHED:
            phase.add(name, tree_sample(stack.processes[name].pid))
        time.sleep(0.1)


def checks(stack: TimedStack, service: str) -> dict[str, Any]:
    """A service's /health checks ({} while it answers otherwise)."""
    answer = json.loads(request(stack.url(service) + "/health", stack.internal_headers())[2])
    return dict(answer.get("checks", {})) if isinstance(answer, dict) else {}


def switched(stack: TimedStack, digests: dict[str, str]) -> bool:
    route, geo = checks(stack, "route_service"), checks(stack, "geo_service")
    return route.get("dataset") == digests["maps"] and route.get("mapSwitches", 0) >= 1 \
        and geo.get("dataset") == digests["geo"]  # fmt: skip


def measure(copies: tuple[int, int]) -> tuple[list[Phase], Load, float]:
    data = CACHE / "run"
    shutil.rmtree(data, ignore_errors=True)
    import_map(data, copies_of(copies[0]), stage=False)
    stack = TimedStack(data_dir=data, ports={name: free_port() for name in DEFAULT_PORTS}, redis_port=free_port(),
                       redis_cache_port=free_port(), services=list(SERVICES),
                       extra_env={"LOG_LEVEL": "WARNING"}, startup_timeout=600)  # fmt: skip
    stack.start()
    load = Load(stack.base_url, stack.login())
    load.thread.start()
    try:
        time.sleep(WARMUP_S)
        phases = [Phase("steady on A"), Phase("switch A -> B"), Phase("steady on B")]
        sample_for(stack, phases[0], time.monotonic() + STEADY_S)
        import_map(data, copies_of(copies[1]), stage=True)  # under load: its memory is the importers'
        started = time.monotonic()
        digests = {root.name: digest for root, digest in switch_staged([data / f for f in IMPORTERS.values()]).items()}
        done = threading.Event()
        watcher = threading.Thread(target=sample_for, args=(stack, phases[1], done), daemon=True)
        watcher.start()
        while not switched(stack, digests) and time.monotonic() - started < 300:
            time.sleep(0.1)
        switch_s = time.monotonic() - started
        time.sleep(SETTLE_S)
        done.set()
        watcher.join()
        sample_for(stack, phases[2], time.monotonic() + STEADY_S)
        assert read_current(data / "maps") == digests["maps"]
    finally:
        load.stop.set()
        load.thread.join()
        stack.stop()
    return phases, load, switch_s


def section(copies: tuple[int, int], phases: list[Phase], load: Load, switch_s: float) -> str:
    mb = 1 / 1e6
    rows = ["| service | phase | RSS MB | PSS MB | USS MB |", "|---|---|---|---|---|"]
    verdicts = []
    for name in WATCHED:
        for phase in phases:
            rss, pss, uss = phase.peak[name]
            rows.append(f"| {name} | {phase.name} | {rss * mb:.0f} | {pss * mb:.0f} | {uss * mb:.0f} |")
        steady = [max(phases[0].peak[name][i], phases[2].peak[name][i]) for i in range(3)]
        ratios = [phases[1].peak[name][i] / steady[i] for i in range(3)]
        verdicts.append(f"{name}: switch peak / steady peak RSS {ratios[0]:.2f}x, PSS {ratios[1]:.2f}x, "
                        f"USS {ratios[2]:.2f}x (goal <= {GOAL_RATIO}x: {'met' if ratios[1] <= GOAL_RATIO else 'MISSED'} on PSS)")  # fmt: skip
    failed = sum(n for status, n in load.statuses.items() if status != 200)
    return "\n".join([
        "## A new map into service under load (issue 56, item 6)", "",
        f"Maps: A = {copies[0]} copies of Heidelberg, B = {copies[1]} copies; the switch took {switch_s:.1f} s "
        f"(B made current -> both services on B). Requests under load: {sum(load.statuses.values())}, "
        f"failed {failed}{(' (' + '; '.join(load.failures[:3]) + ')') if failed else ''}.", "", *rows, "",
        *[f"- {v}" for v in verdicts],
    ])  # fmt: skip


def run() -> str:
    first, second = (int(c) for c in os.environ.get("BENCH_SWITCH_COPIES", "4,5").split(","))
    phases, load, switch_s = measure((first, second))
    return section((first, second), phases, load, switch_s)
