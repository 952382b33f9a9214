"""Scale benchmark (issue 16): the platform on 1x and 10x the Heidelberg extract.

Synthetic maps of N copies of Heidelberg side by side (`bench.synthetic_map`) are imported
with both importers as subprocesses (wall time; peak RSS of the largest process, from
wait4, and of the whole process tree, sampled every 0.2 s), then the whole platform
(`launcher.stack.Stack`: Redis, the four services, the gateway) is started on each map. Per
service: start-up time (process start → /health 200) and memory (RSS and PSS summed over the
service's processes, workers included; PSS splits the pages the workers share). Per operation:
warm latency p50/p99 through the gateway with a token, sequential requests, the maps' platforms
running at once and taking each operation's requests in turn, every request
distinct (coordinates jittered by ≤ 1 m, distinct addresses) so the answer caches never hit;
every query lies in the FIRST copy, so the work per request is the same at every scale.

Scale factors: BENCH_SCALE_FACTORS (default "1,10"; 30x takes too long on a 2-core machine).
Imports are cached under var/bench-cache/scale/x<N> with their measurements (import.json);
BENCH_SCALE_REIMPORT=1 measures them again, BENCH_SCALE_REIMPORT=geo only the geocoder's (its
index format changed, the routing import did not).

`run()` returns a Markdown section; `python -m bench scale` writes it to RESULTS.md.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.detour import boxes_of, detour_file
from bench.match import synthetic_trace
from bench.route_http import routable_pairs
from bench.synthetic_map import SHARED_OSM, write_copies
from common.areas import square_around
from common.config import DEFAULT_PORTS, REPO_ROOT
from common.geo import LatLon
from launcher.redis_server import free_port
from launcher.stack import Stack

CACHE = REPO_ROOT / "var" / "bench-cache" / "scale"
SOURCE = SHARED_OSM / "heidelberg.osm.pbf"
SERVICES = ["auth_service", "geo_service", "route_service", "optimize_service"]
TARGET_RATIO = 1.5  # per-request p50 at N x within 1.5x of 1x
RSS_LIMIT_BYTES = 4e9  # peak import RSS at 30x
# Issue 16's target: import time no worse than linear, i.e. N x the map in at most N x the time.
# After the routing import missed it (30x/1x 37.9) a second rule was added: what one more copy of
# the map costs may grow this much from 1x-10x to 10x-30x, as OSRM's extract and contract sort
# (n log n: its steps took 34-44x as long at 30x, median 36; 1e5-1e6 nodes a copy predict
# 1.08-1.10). Both are reported; the second is labelled as added after the miss (issue 31).
PER_COPY_GROWTH = 1.1
HEIDELBERG_PER_GERMANY = 1600  # ~4 GB of PBF
HEIDELBERG_PER_EUROPE = 12000  # ~30 GB of PBF
STREETS = (
    "Hauptstraße", "Bergheimer Straße", "Rohrbacher Straße", "Römerstraße", "Plöck", "Sofienstraße",
    "Brückenstraße", "Handschuhsheimer Landstraße", "Mittermaierstraße", "Kurfürsten-Anlage",
)  # fmt: skip
COUNTS = {"route": 200, "emergency route": 100, "geocode": 200, "reverse": 200, "matrix 100x100": 20,
          "optimize 100 stops": 8, "detour 1000 lines": 5, "route car shortest": 100, "route truck": 100,
          "route truck dimensions": 100, "route bicycle": 100, "route pedestrian": 100, "avoid area": 100,
          "isochrone 5 min": 50, "match": 50, "match bicycle": 50, "route at a time": 100,
          "matrix 100x100 truck dimensions": 10, "fleet 100 stops truck dimensions": 5}  # fmt: skip
# Issue 30's per-request target (p50 at 30x within 1.2x of 1x), for the operations it names;
# issue 16's TARGET_RATIO (1.5x) stays beside it for every operation.
ISSUE_30_RATIO = 1.2
# Issue 56's absolute p50 goals through the gateway, ms (its "seven-extract map" does not exist:
# five are shared; measured here on the synthetic map, at every factor).
ISSUE_56_P50_MS = {"route car shortest": 15, "route bicycle": 15, "route pedestrian": 15, "avoid area": 15,
                   "route truck dimensions": 15, "route at a time": 15, "isochrone 5 min": 60,
                   "matrix 100x100 truck dimensions": 1500, "fleet 100 stops truck dimensions": 3000}  # fmt: skip
ISSUE_30_OPERATIONS = ("route", "emergency route", "matrix 100x100", "optimize 100 stops", "route car shortest",
                       "route truck", "route truck dimensions", "route bicycle", "route pedestrian", "avoid area",
                       "isochrone 5 min", "match", "match bicycle")  # fmt: skip
TRUCK_DIMENSIONS = "&vehicle=truck&height=4.0&width=2.55&length=12&weight=18&axleLoad=10"
TRUCK = {"height": 4.0, "width": 2.55, "length": 12, "weight": 18, "axleLoad": 10}  # the same, as a body's
# A Tuesday morning in Heidelberg's time zone: its rules by time (night truck bans, delivery
# windows) are near, so routes at this time are Valhalla's (issue 56).
AT_A_TIME = "2026-12-01T10:00:00+01:00"


def factors() -> list[int]:
    raw = os.environ.get("BENCH_SCALE_FACTORS", "1,10")
    chosen = sorted({int(x) for x in raw.split(",") if x.strip()})
    return chosen if 1 in chosen else [1, *chosen]


# ---------------------------------------------------------------- pure helpers


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def linear_fit(x1: float, y1: float, x2: float, y2: float) -> tuple[float, float]:
    """(slope, intercept) of the line through two measurements."""
    slope = (y2 - y1) / (x2 - x1)
    return slope, y1 - slope * x1


def extrapolate(points: dict[int, float], at: float) -> float:
    """The value at `at` on the line through the smallest and largest measured factors."""
    low, high = min(points), max(points)
    slope, intercept = linear_fit(low, points[low], high, points[high])
    return slope * at + intercept


def linearity(seconds: dict[int, float]) -> str:
    """Whether import time grows linearly with the map: issue 16's rule, the top factor's time
    over 1x's at most the factor ratio; then, with three factors, the cost of each added copy
    between consecutive factors, which may grow by PER_COPY_GROWTH (a rule added after the first
    one missed, said beside its figure)."""
    factors = sorted(seconds)
    low, high = factors[0], factors[-1]
    ratio = seconds[high] / seconds[low]
    said = f"{high}x/{low}x {ratio:.1f} ({verdict(ratio, high / low)} ≤ {high / low:g}: issue 16's linear)"
    if len(factors) < 3:
        return said
    per_copy = [(seconds[b] - seconds[a]) / (b - a) for a, b in itertools.pairwise(factors)]
    growth = per_copy[-1] / per_copy[0]
    steps = ", ".join(f"{a}x→{b}x {c:.1f} s" for (a, b), c in zip(itertools.pairwise(factors), per_copy, strict=True))
    return (f"{said}; per added copy {steps}: growth {growth:.2f} ({verdict(growth, PER_COPY_GROWTH)} "
            f"≤ {PER_COPY_GROWTH}, a rule added after the first missed)")  # fmt: skip


def verdict(ratio: float, limit: float) -> str:
    return "meets" if ratio <= limit else "**misses**"


def human_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1e3:.0f} kB"


def human_seconds(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 120:
        return f"{s / 60:.0f} min"
    return f"{s:.1f} s"


# ---------------------------------------------------------------- processes and memory


def children(pid: int) -> list[int]:
    try:
        return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    except OSError:
        return []


def tree(pid: int) -> list[int]:
    found = [pid]
    for child in children(pid):
        found += tree(child)
    return found


def memory_kb(pid: int, field_name: str) -> int:
    """VmRSS (from status) or Pss (from smaps_rollup) of one process, in kB; 0 when gone."""
    source = "status" if field_name == "VmRSS" else "smaps_rollup"
    try:
        for line in Path(f"/proc/{pid}/{source}").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def largest_private(pid: int) -> tuple[int, int]:
    """The largest private memory of one process of the tree, in bytes: its USS (Private_Clean +
    Private_Dirty: its own memory, and the pages of mapped files no other process touched) and
    its anonymous memory alone (heap and arrays: what no file backs and no process shares)."""
    pids = tree(pid)
    uss = max(memory_kb(p, "Private_Clean") + memory_kb(p, "Private_Dirty") for p in pids)
    return uss * 1024, max(memory_kb(p, "Anonymous") for p in pids) * 1024


def tree_memory(pid: int) -> tuple[int, int, int]:
    """(processes, RSS bytes, PSS bytes) of a process and its descendants."""
    pids = tree(pid)
    return len(pids), sum(memory_kb(p, "VmRSS") for p in pids) * 1024, sum(memory_kb(p, "Pss") for p in pids) * 1024


@dataclass
class Measured:
    seconds: float
    max_rss: int  # bytes, the largest single process (wait4)
    tree_rss: int  # bytes, the largest sum over the process tree seen


def measured_run(command: list[str], log: Path, env: dict[str, str] | None = None) -> Measured:
    """Runs a command to its end (`env`: variables set over this process's): wall time, largest
    process RSS, largest tree RSS."""
    peak = [0]
    done = threading.Event()
    started = time.perf_counter()
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, **(env or {}), "PYTHONPATH": str(REPO_ROOT)})  # fmt: skip

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], tree_memory(process.pid)[1])
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        done.set()
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}); see {log}")
    return Measured(seconds, usage.ru_maxrss * 1024, peak[0])


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def current_dir(out: Path) -> Path:
    return out / json.loads((out / "current.json").read_text())["hash"]


# ---------------------------------------------------------------- imports


@dataclass
class Imported:
    factor: int
    pbf_bytes: int
    build_seconds: float
    routing: Measured
    geo: Measured
    manifest: dict[str, Any]
    maps: Path
    geo_dir: Path
    geo_bytes: int


def synthetic(factor: int) -> tuple[Path, float]:
    pbf = CACHE / f"heidelberg-{factor}.osm.pbf"
    started = time.perf_counter()
    if not pbf.exists():
        write_copies([SOURCE], factor, pbf)
    return pbf, time.perf_counter() - started


def import_factor(factor: int) -> Imported:
    base = CACHE / f"x{factor}"
    record = base / "import.json"
    pbf, build_seconds = synthetic(factor)
    if os.environ.get("BENCH_SCALE_REIMPORT") == "1" or not record.exists():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        print(f"   importing {factor}x ...", flush=True)
        routing = measured_run([sys.executable, "-m", "route_service.importing", "--osm", str(pbf),
                                "--out", str(base / "maps")], base / "route-import.log")  # fmt: skip
        print(f"   routing import {factor}x: {routing}", flush=True)
        geo = measured_run([sys.executable, "-m", "geo_service.importing", "--osm", str(pbf),
                            "--out", str(base / "geo")], base / "geo-import.log")  # fmt: skip
        print(f"   geo import {factor}x: {geo}", flush=True)
        record.write_text(json.dumps({"routing": routing.__dict__, "geo": geo.__dict__,
                                      "build_seconds": build_seconds}))  # fmt: skip
    elif os.environ.get("BENCH_SCALE_REIMPORT") == "geo":
        reimport_geo(base, pbf, factor)
    saved = json.loads(record.read_text())
    maps, geo_dir = base / "maps", base / "geo"
    manifest = json.loads((current_dir(maps) / "manifest.json").read_text())
    return Imported(factor, pbf.stat().st_size, saved["build_seconds"], Measured(**saved["routing"]),
                    Measured(**saved["geo"]), manifest, maps, geo_dir, dir_bytes(current_dir(geo_dir)))  # fmt: skip


def reimport_geo(base: Path, pbf: Path, factor: int) -> None:
    """The geocoder's import again, its measurement replacing the recorded one."""
    shutil.rmtree(base / "geo", ignore_errors=True)
    geo = measured_run([sys.executable, "-m", "geo_service.importing", "--osm", str(pbf), "--out", str(base / "geo")],
                       base / "geo-import.log")  # fmt: skip
    print(f"   geo import {factor}x: {geo}", flush=True)
    record = base / "import.json"
    record.write_text(json.dumps({**json.loads(record.read_text()), "geo": geo.__dict__}))


# ---------------------------------------------------------------- the platform


class TimedStack(Stack):
    """A Stack that records when each process first answered /health."""

    healthy_after: dict[str, float]

    def wait_healthy(self, name: str, timeout: float | None = None) -> None:
        super().wait_healthy(name, timeout)
        if not hasattr(self, "healthy_after"):
            self.healthy_after = {}
        self.healthy_after[name] = time.monotonic() - self.started_at[name]


@dataclass
class Latency:
    samples: list[float] = field(default_factory=list)
    failures: int = 0
    empty: int = 0  # 200 answers with an empty "results" list (geocoder)
    note: str = ""

    @property
    def p50(self) -> float:
        return percentile(self.samples, 50)

    @property
    def p99(self) -> float:
        return percentile(self.samples, 99)


@dataclass
class Served:
    factor: int
    startup: dict[str, float]
    memory: dict[str, tuple[int, int, int]]
    latency: dict[str, Latency]
    route_uss: int = 0  # the largest private memory of one route service process
    route_anonymous: int = 0  # the largest anonymous memory of one (its part no file backs)


def request(url: str, headers: dict[str, str], body: bytes | None = None, content_type: str = "application/json",
            timeout: float = 120) -> tuple[float, int, bytes]:  # fmt: skip
    req = urllib.request.Request(url, data=body, headers={**headers, "Content-Type": content_type})  # noqa: S310
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - loopback
            payload = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        payload, status = exc.read(), exc.code
    return (time.perf_counter() - started) * 1000, status, payload


type Call = Callable[[int], tuple[str, bytes | None, str]]  # serial -> (path, body, content type)


def jitter(rng: random.Random, value: float) -> float:
    return value + rng.uniform(-8e-6, 8e-6)


def calls(pairs: list[tuple[float, float, float, float]], traces: list[dict[str, Any]]) -> dict[str, Call]:
    """Each operation: its request for a serial number (distinct for every serial)."""
    rng = random.Random(16)
    points = [(p[0], p[1]) for p in pairs] + [(p[2], p[3]) for p in pairs]

    def coord(lat: float, lon: float) -> str:
        return urllib.parse.quote(f"{jitter(rng, lat):.7f},{jitter(rng, lon):.7f}")

    def route(i: int, extra: str = "") -> tuple[str, bytes | None, str]:
        a, b, c, d = pairs[i % len(pairs)]
        return f"/v1/route?from={coord(a, b)}&to={coord(c, d)}{extra}", None, ""

    def geocode(i: int) -> tuple[str, bytes | None, str]:
        street = STREETS[i % len(STREETS)]
        address = urllib.parse.quote(f"{street} {1 + i // len(STREETS)}, Heidelberg")
        return f"/v1/geocoder?address={address}&limit=3", None, ""

    def reverse(i: int) -> tuple[str, bytes | None, str]:
        lat, lon = points[i % len(points)]
        return f"/v1/geocoder/reverse?lat={jitter(rng, lat):.7f}&lon={jitter(rng, lon):.7f}", None, ""

    def some(i: int, count: int) -> list[dict[str, float]]:
        start = (i * 37) % len(points)
        chosen = [points[(start + k) % len(points)] for k in range(count)]
        return [{"lat": round(jitter(rng, lat), 7), "lon": round(jitter(rng, lon), 7)} for lat, lon in chosen]

    def matrix(i: int) -> tuple[str, bytes | None, str]:
        return "/v1/matrix", json.dumps({"sources": some(i, 100)}).encode(), "application/json"

    def truck_matrix(i: int) -> tuple[str, bytes | None, str]:
        body = {"sources": some(i, 100), "vehicle": "truck", "truck": TRUCK}
        return "/v1/matrix", json.dumps(body).encode(), "application/json"

    def truck_fleet(i: int) -> tuple[str, bytes | None, str]:
        """One truck with dimensions and 99 jobs: the tour of issue 56's target (the fleet API,
        whose vehicles take dimensions), at its default time limit."""
        places = some(i, 100)
        truck = {"id": "t", "kind": "truck", "start": places[0], "end": places[0], "truck": TRUCK}
        jobs = [{"id": f"j{k}", "location": place} for k, place in enumerate(places[1:])]
        return "/v1/optimize/routes", json.dumps({"vehicles": [truck], "jobs": jobs}).encode(), "application/json"

    def optimize(i: int) -> tuple[str, bytes | None, str]:
        stops: list[dict[str, Any]] = [{"name": f"s{k}", "coordinate": c} for k, c in enumerate(some(i, 100))]
        stops[0].update(start=True, destination=True)
        return "/v1/optimize/stops", json.dumps(stops).encode(), "application/json"

    def avoid(i: int) -> tuple[str, bytes | None, str]:
        """A 80 m box around the middle of the pair's straight line: the search runs with an
        avoid area whether or not the route meets it."""
        a, b, c, d = pairs[i % len(pairs)]
        box = square_around(LatLon((a + c) / 2, (b + d) / 2), 40.0)
        return route(i, "&avoid=" + urllib.parse.quote(json.dumps(box)))

    def isochrone(i: int) -> tuple[str, bytes | None, str]:
        lat, lon = points[i % len(points)]
        return f"/v1/isochrone?point={coord(lat, lon)}&time=300", None, ""

    def match(i: int, query: str = "") -> tuple[str, bytes | None, str]:
        """A car's trace along one of the pairs' routes (bench.match.synthetic_trace), moved by a
        few µ° so no two requests are alike."""
        points = [{**p, "lat": jitter(rng, p["lat"]), "lon": jitter(rng, p["lon"])} for p in traces[i % len(traces)]["points"]]
        return "/v1/match" + query, json.dumps({"points": points}).encode(), "application/json"

    def detour(i: int) -> tuple[str, bytes | None, str]:
        return (
            "/v1/detour/file?filename=trips.csv",
            detour_file(boxes_of("heidelberg"), 1000, seed=1000 + i),
            "text/csv",
        )

    return {
        "route": route,
        "emergency route": lambda i: route(i, "&emergencyRoutingRadius=2000"),
        "geocode": geocode,
        "reverse": reverse,
        "matrix 100x100": matrix,
        "optimize 100 stops": optimize,
        "detour 1000 lines": detour,
        "route car shortest": lambda i: route(i, "&type=shortest"),
        "route truck": lambda i: route(i, "&vehicle=truck"),
        "route truck dimensions": lambda i: route(i, TRUCK_DIMENSIONS),
        "route bicycle": lambda i: route(i, "&vehicle=bicycle"),
        "route pedestrian": lambda i: route(i, "&vehicle=pedestrian"),
        "avoid area": avoid,
        "isochrone 5 min": isochrone,
        "match": match,
        "match bicycle": lambda i: match(i, "?vehicle=bicycle"),
        "route at a time": lambda i: route(i, "&departureTime=" + urllib.parse.quote(AT_A_TIME)),
        "matrix 100x100 truck dimensions": truck_matrix,
        "fleet 100 stops truck dimensions": truck_fleet,
    }


def traces_of(stack: Stack, header: dict[str, str], pairs: list[tuple[float, float, float, float]],
              count: int = 20) -> list[dict[str, Any]]:  # fmt: skip
    """Traces along the routes of the first pairs, as the 1x platform routes them: the same
    requests for every map (the pairs lie in the first copy)."""
    rng = np.random.default_rng(30)
    found = []
    for a, b, c, d in pairs[:count]:
        _, status, payload = request(f"{stack.base_url}/v1/route?from={a},{b}&to={c},{d}&steps=false", header)
        if status == 200:
            route = json.loads(payload)["routes"][0]
            found.append(synthetic_trace(np.array(route["geometry"]["coordinates"]), route["duration"], rng))
    if not found:
        raise RuntimeError("no route to draw a trace along")
    return found


def is_empty(payload: bytes) -> bool:
    """An answer with an empty "results" list (the geocoder found nothing)."""
    try:
        answer = json.loads(payload)
    except ValueError:
        return False
    return isinstance(answer, dict) and answer.get("results") == []


def record(latency: Latency, measured: bool, answer: tuple[float, int, bytes]) -> None:
    ms, status, payload = answer
    if status != 200:
        latency.failures += 1
        latency.note = latency.note or f"{status}: {payload[:160].decode(errors='replace')}"
    elif measured:
        latency.samples.append(ms)
        latency.empty += is_empty(payload)


def measure_latency(stacks: list[Stack], factors: list[int],
                    pairs: list[tuple[float, float, float, float]]) -> list[dict[str, Latency]]:  # fmt: skip
    """Each operation's requests on every map in turn (1x, 10x, 1x, …): a change in the other
    work on the shared machine reaches every map alike, so their ratios hold."""
    headers = [{"Authorization": "Bearer " + stack.login()} for stack in stacks]
    found: list[dict[str, Latency]] = [{} for _ in stacks]
    for name, call in calls(pairs, traces_of(stacks[0], headers[0], pairs)).items():
        latencies = [Latency() for _ in stacks]
        warmup = 3 if COUNTS[name] >= 20 else 1
        for serial in range(COUNTS[name] + warmup):
            for stack, header, factor, latency in zip(stacks, headers, factors, latencies, strict=True):
                path, body, kind = call(factor * 100_000 + serial)
                record(
                    latency, serial >= warmup, request(stack.base_url + path, header, body, kind or "application/json")
                )
        for factor, latency, into in zip(factors, latencies, found, strict=True):
            into[name] = latency
            print(f"   {factor}x {name}: p50 {latency.p50:.1f} ms, p99 {latency.p99:.1f} ms, failures "
                  f"{latency.failures}, empty {latency.empty} {latency.note}", flush=True)  # fmt: skip
    return found


def start_stack(imported: Imported) -> TimedStack:
    data_dir = CACHE / f"run-x{imported.factor}"
    shutil.rmtree(data_dir, ignore_errors=True)
    stack = TimedStack(
        data_dir=data_dir,
        ports={name: free_port() for name in DEFAULT_PORTS},
        redis_port=free_port(),
        redis_cache_port=free_port(),
        services=list(SERVICES),
        extra_env={"MAP_DIR": str(imported.maps), "GEO_INDEX_DIR": str(imported.geo_dir), "LOG_LEVEL": "WARNING"},
        startup_timeout=600,
    )
    stack.start()
    print(f"   {imported.factor}x started: {stack.healthy_after}", flush=True)
    return stack


def service_memory(stack: Stack) -> dict[str, tuple[int, int, int]]:
    return {name: tree_memory(stack.processes[name].pid) for name in [*SERVICES, "gateway"]}


def serve(imports: list[Imported], pairs: list[tuple[float, float, float, float]]) -> list[Served]:
    """Every map's platform at once (started one after the other), their requests interleaved."""
    stacks: list[TimedStack] = []
    try:
        for imported in imports:
            stacks.append(start_stack(imported))
        memory = [service_memory(stack) for stack in stacks]
        latency = measure_latency(list(stacks), [i.factor for i in imports], pairs)
        after = [service_memory(stack) for stack in stacks]
        uss = [largest_private(stack.processes["route_service"].pid) for stack in stacks]
    finally:
        for stack in stacks:
            stack.stop()
    return [Served(i.factor, dict(stack.healthy_after), {n: max(m[n], a[n], key=lambda v: v[1]) for n in m}, lat, *u)
            for i, stack, m, a, lat, u in zip(imports, stacks, memory, after, latency, uss, strict=True)]  # fmt: skip


# ---------------------------------------------------------------- report


def import_table(imports: list[Imported]) -> list[str]:
    lines = ["| map | PBF | routing import | peak RSS (largest process / whole tree) | routing disk "
             "| geocoder import | peak RSS (largest / tree) | geocoder disk |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for i in imports:
        lines.append(
            f"| {i.factor}x | {human_bytes(i.pbf_bytes)} | {human_seconds(i.routing.seconds)} | "
            f"{human_bytes(i.routing.max_rss)} / {human_bytes(i.routing.tree_rss)} | "
            f"{human_bytes(i.manifest['disk_bytes'])} | {human_seconds(i.geo.seconds)} | "
            f"{human_bytes(i.geo.max_rss)} / {human_bytes(i.geo.tree_rss)} | {human_bytes(i.geo_bytes)} |"
        )
    return lines


def profile_table(imports: list[Imported]) -> list[str]:
    names = list(imports[0].manifest["profiles"])
    lines = ["| step (from the manifest) | " + " | ".join(f"{i.factor}x" for i in imports) + " |",
             "|---|" + "---|" * len(imports)]  # fmt: skip
    for name in names:
        cells = [f"{i.manifest['profiles'][name]['seconds']:.1f} s, {human_bytes(i.manifest['profiles'][name]['bytes'])}"
                 for i in imports]  # fmt: skip
        lines.append(f"| {name} ({imports[0].manifest['profiles'][name]['algorithm']}) | " + " | ".join(cells) + " |")
    lines.append("| whole (wall, one step at a time) | " + " | ".join(f"{i.manifest['seconds']:.1f} s"
                                                                     for i in imports) + " |")  # fmt: skip
    return lines


def service_table(served: list[Served]) -> list[str]:
    lines = ["| service | " + " | ".join(f"{s.factor}x start-up, RSS (PSS), processes" for s in served) + " |",
             "|---|" + "---|" * len(served)]  # fmt: skip
    for name in [*SERVICES, "gateway"]:
        cells = []
        for s in served:
            count, rss, pss = s.memory[name]
            cells.append(f"{s.startup.get(name, math.nan):.1f} s, {human_bytes(rss)} ({human_bytes(pss)}), {count}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def latency_table(served: list[Served]) -> list[str]:
    base = served[0]
    header = "| operation | requests | " + " | ".join(f"{s.factor}x p50 / p99 ms" for s in served)
    header += "".join(f" | {s.factor}x/1x p50" for s in served[1:]) + " |"
    lines = [header, "|---|---|" + "---|" * (2 * len(served) - 1)]
    for name in COUNTS:
        cells = []
        for s in served:
            lat = s.latency[name]
            fail = f" ({lat.failures} failed)" if lat.failures else ""
            fail += f" ({lat.empty} empty)" if lat.empty else ""
            cells.append(f"{lat.p50:.1f} / {lat.p99:.1f}{fail}")
        ratios = []
        for s in served[1:]:
            ratio = s.latency[name].p50 / base.latency[name].p50
            issue_30 = f"; ≤ {ISSUE_30_RATIO}: {verdict(ratio, ISSUE_30_RATIO)}" if name in ISSUE_30_OPERATIONS else ""
            ratios.append(f"{ratio:.2f} ({verdict(ratio, TARGET_RATIO)}{issue_30})")
        lines.append(f"| {name} | {COUNTS[name]} | " + " | ".join(cells + ratios) + " |")
    return lines


def targets(imports: list[Imported], served: list[Served]) -> list[str]:
    base, top = imports[0], imports[-1]
    k = top.factor
    lines = []
    for label, get in (("routing", lambda i: i.routing), ("geocoder", lambda i: i.geo)):
        seconds = {i.factor: get(i).seconds for i in imports}
        lines.append(f"- {label} import time: {linearity(seconds)}; "
                     f"peak RSS {human_bytes(get(top).tree_rss)} at {k}x "
                     f"({human_bytes(get(base).tree_rss)} at 1x)")  # fmt: skip
    rss_at_30 = extrapolate({i.factor: i.routing.tree_rss for i in imports}, 30)
    lines.append("- peak import RSS at 30x ≤ 4 GB: "
                 + (f"measured {human_bytes(top.routing.tree_rss)}" if k >= 30 else
                    f"not measured; linear from {k}x: ~{human_bytes(rss_at_30)}")
                 + f" ({verdict(rss_at_30, RSS_LIMIT_BYTES)})")  # fmt: skip
    missed = [n for n in COUNTS if served[-1].latency[n].p50 / served[0].latency[n].p50 > TARGET_RATIO]
    lines.append(f"- per-request p50 at {served[-1].factor}x within {TARGET_RATIO}x of 1x: "
                 + (f"missed by {', '.join(missed)}" if missed else "met by every operation"))  # fmt: skip
    missed = [n for n in ISSUE_30_OPERATIONS
              if served[-1].latency[n].p50 / served[0].latency[n].p50 > ISSUE_30_RATIO]  # fmt: skip
    lines.append(f"- issue 30: p50 at {served[-1].factor}x within {ISSUE_30_RATIO}x of 1x for "
                 f"{', '.join(ISSUE_30_OPERATIONS)}: "
                 + (f"missed by {', '.join(missed)}" if missed else "met by every one"))  # fmt: skip
    for name, goal in ISSUE_56_P50_MS.items():
        p50s = ", ".join(f"{s.latency[name].p50:.1f} at {s.factor}x" for s in served)
        worst = max(s.latency[name].p50 for s in served)
        lines.append(f"- issue 56: {name} p50 ≤ {goal} ms: {p50s} ({verdict(worst, goal)})")
    uss = served[-1].route_uss / max(1, served[0].route_uss)
    lines.append(f"- issue 30: a route service process's private memory (USS, after the requests) "
                 f"{human_bytes(served[0].route_uss)} at 1x, {human_bytes(served[-1].route_uss)} at "
                 f"{served[-1].factor}x = {uss:.2f}x (≤ 1.3x: {verdict(uss, 1.3)}); its anonymous memory "
                 f"(no file behind it) {human_bytes(served[0].route_anonymous)} at 1x, "
                 f"{human_bytes(served[-1].route_anonymous)} at {served[-1].factor}x = "
                 f"{served[-1].route_anonymous / max(1, served[0].route_anonymous):.2f}x")  # fmt: skip
    return lines


def extrapolation(imports: list[Imported], served: list[Served]) -> list[str]:
    series: dict[str, dict[int, float]] = {
        "routing import time": {i.factor: i.routing.seconds for i in imports},
        "geocoder import time": {i.factor: i.geo.seconds for i in imports},
        "routing import peak RSS (tree)": {i.factor: i.routing.tree_rss for i in imports},
        "geocoder import peak RSS (tree)": {i.factor: i.geo.tree_rss for i in imports},
        "routing dataset disk": {i.factor: i.manifest["disk_bytes"] for i in imports},
        "geocoder index disk": {i.factor: i.geo_bytes for i in imports},
        "route service RSS": {s.factor: s.memory["route_service"][1] for s in served},
        "route service PSS": {s.factor: s.memory["route_service"][2] for s in served},
    }
    lines = ["| quantity | Germany (~1600x) | Europe (~12000x) |", "|---|---|---|"]
    for label, points in series.items():
        fmt = human_seconds if "time" in label else human_bytes
        cells = [fmt(extrapolate(points, n)) for n in (HEIDELBERG_PER_GERMANY, HEIDELBERG_PER_EUROPE)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def section(imports: list[Imported], served: list[Served], pairs_rejected: int) -> str:
    chosen = ", ".join(f"{i.factor}x" for i in imports)
    return "\n".join([
        f"## Scale: {chosen} the Heidelberg extract (issue 16)",
        "",
        f"Maps: {chosen} Heidelberg (`bench.synthetic_map`: copies side by side, fresh ids). 30x is left out by "
        "default (`BENCH_SCALE_FACTORS=1,10,30` adds it): its import alone takes about half an hour on this "
        "2-core machine. Importers run as subprocesses with their defaults (issue 30: OSRM for car and truck "
        "fastest on CH, Valhalla's tiles; one step at a time); peak RSS is that of the largest single process (wait4) and the largest sum over the importer's "
        "process tree (sampled every 0.2 s). Then Redis, the four services and the gateway as real processes "
        "(`launcher.stack.Stack`, default workers), `MAP_DIR`/`GEO_INDEX_DIR` on the imported datasets. "
        "Start-up: the process started → `/health` 200 (services start one after the other and share the 2 "
        "cores). Memory after start and after the requests (the larger): RSS summed over each service's "
        "processes (workers included; shared mmapped OSRM pages count once per process), PSS splits them. "
        "Import figures are those of each map's first import, kept with it under var/bench-cache/scale "
        "(`BENCH_SCALE_REIMPORT=1` imports and measures again).",
        "",
        "Latency: sequential requests through the gateway with a token, warm (a few requests first, the "
        "same stack); every map's platform runs at once and they take each operation's requests in turn "
        "(1x, 10x, 1x, …), so a change in the shared machine's other load reaches every map alike; each "
        "request distinct so no answer cache hits (coordinates jittered by ≤ 1 m, addresses with "
        f"distinct house numbers), all inside the first copy (pairs drawn as in `route_http`, {pairs_rejected} "
        "drawn pairs not routable rejected), so the work per request is the same at every scale. Emergency "
        "route: `emergencyRoutingRadius=2000` (Valhalla); avoid area: an 80 m box around the middle of the "
        "pair's straight line; truck dimensions: 4.0 m, 2.55 m, 12 m, 18 t, 10 t axle load; isochrone: car, "
        "5 minutes, from one of the pair's points; matrix and optimize: 100 of those points; match: a trace "
        "along the 1x platform's car route of one of the first 20 pairs (`bench.match.synthetic_trace`, a point "
        "every few seconds with GPS noise), as a car (OSRM) and as a bicycle (Valhalla); "
        "detour: a 1000-case file as in `bench detour`. p99 of few requests is close to their maximum; *empty*: "
        "answers without results. Geocoding is the exception to equal work: every copy holds the same town "
        "and street names, so at 10x an address names ten places, the same-named streets the issue's target "
        "includes. Millisecond p50s move by ±1 ms between runs on this shared machine (a route's 1x/10x "
        "ratio of 0.8 to 1.5 in repeated runs).",
        "",
        "### Imports",
        "",
        *import_table(imports),
        "",
        *profile_table(imports),
        "",
        "### Services",
        "",
        *service_table(served),
        "",
        "### Requests",
        "",
        *latency_table(served),
        "",
        "### Targets",
        "",
        *targets(imports, served),
        "",
        f"### Linear extrapolation from {imports[0].factor}x and {imports[-1].factor}x",
        "",
        *extrapolation(imports, served),
    ])  # fmt: skip


def run() -> str:
    CACHE.mkdir(parents=True, exist_ok=True)
    imports = [import_factor(n) for n in factors()]
    map_osrm = current_dir(imports[0].maps) / "osrm" / "car-fastest" / "map.osrm"
    pairs, rejected = routable_pairs(map_osrm, count=300)
    served = serve(imports, pairs)
    return section(imports, served, rejected)


if __name__ == "__main__":
    print(run())
