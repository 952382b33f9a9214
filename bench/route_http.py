"""End-to-end benchmark of `GET /v1/route`: gateway → route service → OSRM, against bare
osrm-routed on the same MLD dataset, and the route service alone (no gateway).

Heidelberg (car fastest only) is imported into a temporary DATA_DIR; Redis, the auth
service, the route service and the gateway run as real processes (`launcher.stack.Stack`,
free loopback ports); a user of tier `unlimited` (no rate limit) has a token. 1000 seeded
origin/destination pairs in the dense city box, each checked to be routable, are cycled by
wrk (Lua script) at several connection counts for a fixed time each.

`run()` returns a Markdown section; `python -m bench route_http` writes it to RESULTS.md.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import osrm

from bench.http_load import Coords, Load, LoadResult, find_wrk, run_load
from bench.maps import EVERY_MAP, BenchMap, bench_map
from bench.processes import cpu_seconds
from common.config import DEFAULT_PORTS, REPO_ROOT
from common.vehicles import VEHICLE_TABLE
from launcher.redis_server import free_port, wait_for_port
from launcher.stack import Stack
from route_service.importing.importer import Progress, import_maps

PBF = REPO_ROOT.parent / "shared" / "osm" / "heidelberg.osm.pbf"
PROFILE = "car-fastest"
DENSE_BOX = (49.37, 49.43, 8.62, 8.75)  # lat min, lat max, lon min, lon max
PAIRS = 1000
SEED = 20240601
CONNECTIONS = (8, 32, 64)
WATCHED = {"gateway": "gateway", "route service": "route_service", "redis": "redis"}  # label -> Stack name
SECONDS = 10.0
SNAP_RADIUS_M = VEHICLE_TABLE["car"].snap_radius_m  # the route service's car radius: a kept pair routes there too
# Same answer detail everywhere: our default answer (full GeoJSON overview geometry and
# turn-by-turn steps), which is what the goal is about.
GATEWAY_PATH = "/v1/route?from=%.7f%%2C%.7f&to=%.7f%%2C%.7f"
OSRM_PATH = "/route/v1/driving/%.7f,%.7f;%.7f,%.7f?overview=full&geometries=geojson&steps=true"


@dataclass(frozen=True)
class Row:
    target: str
    cache: str
    result: LoadResult
    # CPU milliseconds per request of each watched process (with its children): unlike
    # req/s, this hardly depends on what else the shared machine runs at the time.
    cpu_ms: dict[str, float]


# ---------------------------------------------------------------- data


def routes_on(map_osrm: Path) -> str:
    """The algorithm a profile's routes use, as the route service reads it: MLD where its MLD
    graph exists, else CH (the default import contracts car and truck only)."""
    return "mld" if Path(f"{map_osrm}.mldgr").is_file() else "ch"


def routable_pairs(map_osrm: Path, count: int = PAIRS, seed: int = SEED) -> tuple[list[Coords], int]:
    """`count` seeded pairs in the dense box that OSRM routes (the rejected count too), so
    the load measures routes, not 400s."""
    engine = osrm.OSRM(storage_config=str(map_osrm), algorithm=routes_on(map_osrm).upper(), use_shared_memory=False)
    rng = random.Random(seed)
    lat0, lat1, lon0, lon1 = DENSE_BOX
    pairs: list[Coords] = []
    rejected = 0
    while len(pairs) < count:
        pair = (rng.uniform(lat0, lat1), rng.uniform(lon0, lon1), rng.uniform(lat0, lat1), rng.uniform(lon0, lon1))
        params = osrm.RouteParameters(coordinates=[(pair[1], pair[0]), (pair[3], pair[2])],
                                      radiuses=[SNAP_RADIUS_M, SNAP_RADIUS_M], overview="false")  # fmt: skip
        try:
            engine.Route(params)
        except RuntimeError:
            rejected += 1
            continue
        pairs.append(pair)
    return pairs, rejected


def http_json(url: str, body: dict[str, object] | None = None, headers: dict[str, str] | None = None) -> object:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 - loopback
        return json.loads(resp.read())


def check_all(load: Load) -> tuple[int, str]:
    """Requests every path once (this also fills the route cache): non-200 count, X-Cache seen."""
    failures, cache = 0, ""
    for serial in range(len(load.coords)):
        request = urllib.request.Request(load.base_url + load.path(serial), headers=load.headers)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 - loopback
                resp.read()
                cache = resp.headers.get("X-Cache", cache)
        except urllib.error.HTTPError:
            failures += 1
    return failures, cache


# ---------------------------------------------------------------- processes


@contextmanager
def platform(data_dir: Path, env: dict[str, str]) -> Iterator[Stack]:
    stack = Stack(
        data_dir=data_dir,
        ports={name: free_port() for name in DEFAULT_PORTS},
        redis_port=free_port(),
        services=["auth_service", "route_service"],
        extra_env={"LOG_LEVEL": "WARNING", **env},
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@contextmanager
def osrm_routed(map_osrm: Path, log: Path) -> Iterator[tuple[str, int]]:
    port = free_port()
    command = [sys.executable, "-m", "osrm", "routed", "--algorithm", routes_on(map_osrm), "-i", "127.0.0.1", "-p", str(port),
               "-t", "2", "-l", "WARNING", str(map_osrm)]  # fmt: skip
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port("127.0.0.1", port, timeout=60)
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """`python -m osrm routed` is a wrapper that starts the binary as its child: signal the
    whole process group (its own session), or the server outlives the benchmark."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


# ---------------------------------------------------------------- measuring


class Runner:
    """Runs loads with one generator; each cold run gets its own jitter salt."""

    def __init__(self, wrk: str | None, seconds: float) -> None:
        self.wrk = wrk
        self.seconds = seconds
        self.runs = 0
        self.rows: list[Row] = []
        self.watched: dict[str, int] = {}  # process label -> pid, for CPU per request

    def sweep(self, target: str, cache: str, load: Load, connections: tuple[int, ...] = CONNECTIONS) -> None:
        for count in connections:
            self.runs += 1
            salted = Load(load.base_url, load.template, load.coords, load.headers, load.lonlat, load.jitter,
                          salt=self.runs * 1_000_000)  # fmt: skip
            before = {name: cpu_seconds(pid) for name, pid in self.watched.items()}
            result = run_load(self.wrk, salted, count, self.seconds)
            used = {name: cpu_seconds(pid) - before[name] for name, pid in self.watched.items()}
            cpu_ms = {name: 1000 * seconds / max(1, result.requests) for name, seconds in used.items()}
            self.rows.append(Row(target, cache, result, cpu_ms))
            print(f"   {target} ({cache}) c={count}: {result.rps:.0f} req/s, CPU ms/request {cpu_ms}", flush=True)


def measure(stack: Stack, routed: tuple[str, int], coords: list[Coords], runner: Runner) -> dict[str, int]:
    """All sweeps; returns the failures of the one-by-one check of each target."""
    auth = {"Authorization": "Bearer " + stack.login()}
    gateway = Load(stack.base_url, GATEWAY_PATH, coords, auth)
    direct = Load(stack.url("route_service"), GATEWAY_PATH, coords, stack.internal_headers())
    reference = Load(routed[0], OSRM_PATH, coords, {}, lonlat=True)
    failures = {"osrm-routed": check_all(reference)[0], "gateway": check_all(gateway)[0]}
    runner.watched = {"osrm-routed": routed[1]}
    runner.sweep("osrm-routed", "none", reference)
    runner.watched = {label: stack.processes[key].pid for label, key in WATCHED.items()}
    runner.sweep("gateway", "warm", gateway)
    runner.sweep("route service", "warm", direct)
    for target, load in (("gateway", gateway), ("route service", direct)):
        cold = Load(load.base_url, load.template, coords, load.headers, jitter=True)
        runner.sweep(target, "cold", cold)
    return failures


# ---------------------------------------------------------------- report


def table(rows: list[Row]) -> list[str]:
    reference = {r.result.connections: r.result for r in rows if r.target == "osrm-routed"}
    lines = ["| target | cache | connections | req/s | p50 ms | p99 ms | errors | socket errors "
             "| req/s ÷ osrm-routed | CPU ms/request |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        r, ref = row.result, reference.get(row.result.connections)
        ratio = f"{r.rps / ref.rps:.2f}" if ref and ref.rps else "-"
        cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in row.cpu_ms.items())
        lines.append(f"| {row.target} | {row.cache} | {r.connections} | {r.rps:.0f} | {r.p50_ms:.2f} | "
                     f"{r.p99_ms:.2f} | {r.errors} | {r.socket_errors} | {ratio} | {cpu} |")  # fmt: skip
    return lines


def goals(rows: list[Row]) -> str:
    def find(target: str, cache: str, connections: int) -> LoadResult | None:
        return next((r.result for r in rows if (r.target, r.cache, r.result.connections) == (target, cache,
                     connections)), None)  # fmt: skip

    parts = []
    ref = find("osrm-routed", "none", 32)
    for cache in ("cold", "warm"):
        got = find("gateway", cache, 32)
        if got and ref and ref.rps:
            ratio = got.rps / ref.rps
            parts.append(f"gateway {cache} at 32 connections: {ratio:.2f} x osrm-routed's throughput "
                         f"({'meets' if ratio >= 0.5 else 'misses'} ≥ 0.5), p99 {got.p99_ms:.1f} ms "
                         f"({'meets' if got.p99_ms < 50 else 'misses'} < 50 ms)")  # fmt: skip
    return "; ".join(parts) + "."


def section(rows: list[Row], generator: str, rejected: int, failures: dict[str, int], seconds: float) -> str:
    return "\n".join(
        [
            "## Route over HTTP (gateway → route service → OSRM, end to end)",
            "",
            f"Heidelberg, `{PROFILE}` MLD dataset; Redis, auth service, route service and gateway as real processes "
            "(`launcher.stack.Stack`, default settings: two route service workers on this 2-core machine, one "
            "process for the others), a user of tier `unlimited`. "
            f"{PAIRS} origin/destination pairs drawn uniformly (seed {SEED}) in lat 49.37 to 49.43, lon 8.62 to 8.75, "
            f"keeping only pairs OSRM routes with a {SNAP_RADIUS_M} m snapping radius ({rejected} drawn pairs "
            f"rejected); checked one by one before the load: {failures.get('gateway')} failed through the gateway, "
            f"{failures.get('osrm-routed')} on osrm-routed.",
            "",
            f"Load: {generator}, 2 threads, {seconds:g} s per row, keep-alive, the pairs cycled. Answer detail "
            "equal everywhere: our default answer, full overview geometry as GeoJSON and turn-by-turn steps "
            "(osrm-routed `overview=full&geometries=geojson&steps=true`). Reference: `python -m osrm routed --algorithm mld "
            "-t 2` on the same files. *warm*: every answer comes from the route service's Redis cache (`X-Cache: "
            "hit`; each path requested once beforehand); *cold*: every request's coordinates differ by a few "
            "µ° (≤ 1.3 m) so every request misses the cache (lookup, OSRM, store). Errors: non-2xx answers; "
            "socket errors: mostly keep-alive connections the server closed (osrm-routed does so after a number "
            "of requests), which wrk counts as read errors. CPU ms/request: user + system time of each process "
            "over the requests answered. Everything shares the same 2 cores with the load generator.",
            "",
            *table(rows),
            "",
            "Goals (issue: end-to-end throughput ≥ half of bare osrm-routed, p99 < 50 ms at 32 connections): "
            + goals(rows),
        ]
    )


# ---------------------------------------------------------------- variants (the performance work)


def variants_text(lines: list[str], seconds: float) -> str:
    return "\n".join(
        [
            "### Request path settings (cold gateway path, 32 connections)",
            "",
            "Each setting is its own stack, all running at once; the load alternates between them "
            f"({VARIANT_ROUNDS} rounds of {seconds:g} s, medians), so the shared machine's noise hits each alike. "
            "CPU ms/request is the processes' user + system time over the requests answered: it hardly depends on "
            "the other load on the machine, unlike req/s. `ROUTE_INLINE_PROVIDERS` (default `osrm`) runs OSRM calls "
            "on the event loop instead of the thread pool (the binding holds the GIL, so the pool only adds a hop "
            "and GIL hand-offs); `<SERVICE>_WORKERS` forks that many processes sharing the port (SO_REUSEPORT); "
            "the route service defaults to 2 on a machine with 2 or more cores. `GATEWAY_QUEUED_CONCURRENCY` "
            "(default 8) is how many `/v1/route` requests a gateway process has at the route service at once, the "
            "others waiting in arrival order (common.client.ArrivalQueue); 0 sends every one on at once.",
            "",
            *lines,
        ]
    )


# Settings compared on the cold gateway path at 32 connections; each runs as its own stack
# at the same time, and the load alternates between them, so a noisy moment hits all alike.
VARIANTS = {
    "1 route service worker, OSRM in the thread pool": {"ROUTE_SERVICE_WORKERS": "1", "ROUTE_INLINE_PROVIDERS": ""},
    "1 route service worker, OSRM inline": {"ROUTE_SERVICE_WORKERS": "1"},
    "2 route service workers, OSRM inline (default)": {},
    "2 route service + 2 gateway workers": {"GATEWAY_WORKERS": "2"},
    # Every /v1/route sent on at once, as before the arrival queue (GATEWAY_QUEUED_CONCURRENCY).
    "2 route service workers, no gateway arrival queue": {"GATEWAY_QUEUED_CONCURRENCY": "0"},
}
VARIANT_ROUNDS = 3


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def measure_variants(data_dir: Path, coords: list[Coords], wrk: str | None, seconds: float) -> list[str]:
    runners: dict[str, Runner] = {}
    loads: dict[str, Load] = {}
    with ExitStack() as stacks:
        for index, (label, env) in enumerate(VARIANTS.items()):
            extra = {"MAP_DIR": str(data_dir / "maps"), **env}
            stack = stacks.enter_context(platform(data_dir / f"variant-{index}", extra))
            auth = {"Authorization": "Bearer " + stack.login()}
            loads[label] = Load(stack.base_url, GATEWAY_PATH, coords, auth, jitter=True)
            runners[label] = Runner(wrk, seconds)
            runners[label].runs = 100 * (index + 1)  # distinct jitter salts: no stack sees another's keys
            runners[label].watched = {name: stack.processes[key].pid for name, key in WATCHED.items()}
        for round_ in range(VARIANT_ROUNDS):
            for label in VARIANTS if round_ % 2 == 0 else reversed(VARIANTS):
                runners[label].sweep("gateway", "cold", loads[label], (32,))
    lines = ["| setting | req/s | p50 ms | p99 ms | CPU ms/request |", "|---|---|---|---|---|"]
    for label, runner in runners.items():
        results = [row.result for row in runner.rows]
        cpu = {name: median([row.cpu_ms[name] for row in runner.rows]) for name in runner.watched}
        lines.append(
            f"| {label} | {median([r.rps for r in results]):.0f} | {median([r.p50_ms for r in results]):.1f} | "
            f"{median([r.p99_ms for r in results]):.1f} | {', '.join(f'{n} {v:.2f}' for n, v in cpu.items())} |"
        )
    return lines


# ---------------------------------------------------------------- every map

EVERY_MAP_PAIRS = 300


def map_pairs(loaded: BenchMap, count: int = EVERY_MAP_PAIRS) -> list[Coords]:
    """Pairs of seeded road nodes of the map's (largest) main network: every pair routes."""
    points = loaded.road_points(2 * count, SEED)
    return [(a.lat, a.lon, b.lat, b.lon) for a, b in zip(points[::2], points[1::2], strict=False)]


def measure_every_map(wrk: str | None, seconds: float, work: Path) -> list[str]:
    """Cold gateway against osrm-routed at 32 connections on each shared extract and on all five
    loaded as one map (bench/maps.py, car-fastest): the goal's row, not one city's."""
    lines = [
        "| map | pairs | failed (gateway / osrm-routed) | osrm-routed req/s | gateway req/s | ratio | gateway p99 ms "
        "| CPU ms/request: osrm-routed | gateway + route service |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in EVERY_MAP:
        loaded = bench_map(name)
        coords = map_pairs(loaded)
        map_osrm = loaded.dataset.path / "osrm" / PROFILE / "map.osrm"
        runner = Runner(wrk, seconds)
        runner.runs = 500
        with (
            platform(work / f"every-{name}", {"MAP_DIR": str(loaded.dataset.path.parent)}) as stack,
            osrm_routed(map_osrm, work / f"osrm-routed-{name}.log") as routed,
        ):
            reference = Load(routed[0], OSRM_PATH, coords, {}, lonlat=True)
            gateway = Load(stack.base_url, GATEWAY_PATH, coords, {"Authorization": "Bearer " + stack.login()})
            failed = (check_all(gateway)[0], check_all(reference)[0])
            runner.watched = {"osrm-routed": routed[1]}
            runner.sweep("osrm-routed", "none", reference, (32,))
            runner.watched = {label: stack.processes[key].pid for label, key in WATCHED.items()}
            cold = Load(gateway.base_url, gateway.template, coords, gateway.headers, jitter=True)
            runner.sweep("gateway", "cold", cold, (32,))
        ref, ours = runner.rows
        ratio = ours.result.rps / ref.result.rps if ref.result.rps else 0.0
        ours_cpu = ours.cpu_ms.get("gateway", 0.0) + ours.cpu_ms.get("route service", 0.0)
        lines.append(
            f"| {name} | {len(coords)} | {failed[0]} / {failed[1]} | {ref.result.rps:.0f} | {ours.result.rps:.0f} | "
            f"{ratio:.2f} | {ours.result.p99_ms:.1f} | {ref.cpu_ms['osrm-routed']:.2f} | {ours_cpu:.2f} |"
        )
    return lines


def every_map_text(lines: list[str], seconds: float) -> str:
    return "\n".join(
        [
            "### Every shared extract, and all five as one map (cold gateway, 32 connections)",
            "",
            f"Each map's car-fastest dataset (`bench/maps.py`), {EVERY_MAP_PAIRS} pairs of seeded road nodes of its "
            "largest main network (on all five as one map: Heidelberg's), a platform and osrm-routed on it, "
            f"{seconds:g} s per row, wrk as above; every gateway request's coordinates jittered (cache misses). "
            "The goal's figures on every map, not on Heidelberg alone.",
            "",
            *lines,
        ]
    )


def run(seconds: float = SECONDS, env: dict[str, str] | None = None) -> str:
    wrk, generator = find_wrk()
    with tempfile.TemporaryDirectory(prefix="bench-route-http-") as tmp:
        data_dir = Path(tmp)
        imported = import_maps([PBF], data_dir / "maps", profiles=[PROFILE], progress=Progress(emit=lambda _l: None))
        map_osrm = imported.path / "osrm" / PROFILE / "map.osrm"
        coords, rejected = routable_pairs(map_osrm)
        runner = Runner(wrk, seconds)
        with platform(data_dir, env or {}) as stack, osrm_routed(map_osrm, data_dir / "osrm-routed.log") as routed:
            failures = measure(stack, routed, coords, runner)
        variants = measure_variants(data_dir, coords, wrk, seconds * 0.6)
        every = measure_every_map(wrk, seconds, data_dir)
    return "\n\n".join(
        [
            section(runner.rows, generator, rejected, failures, seconds),
            variants_text(variants, seconds * 0.6),
            every_map_text(every, seconds),
        ]
    )


if __name__ == "__main__":
    started = time.perf_counter()
    print(run())
    print(f"\n({time.perf_counter() - started:.0f} s)")
