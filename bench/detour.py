"""Benchmark of `POST /v1/detour/file` on every shared extract and on all five as one map,
over HTTP against the route service.

Each map is imported once (`bench.maps`, car fastest, cached); Redis and the route service run
as real processes (`launcher.stack.Stack`, free loopback ports). Measured end to end (request
sent → whole JSON answer read), several times each, medians:
- files of 1000 and of 20 000 detour cases (the documented maximum; goal ≤ 15 s, issue 17):
  seeded random from/to/via points in a box of the city (on the five-city map each line in one
  city, the cities in turn);
- Heidelberg only: a driven track of 5000 points: a real route through 4 places in the city,
  sampled evenly, with seeded GPS noise (±4 m) and one point per second.
In the same run, in-process, on the first 5000 of those lines: the lines through the provider's detour plugin
(OSRM: one CH Table call per line) against two lean `cost()` Route calls per line on MLD (the
path before issue 17), and whether their numbers agree; on Heidelberg's 1000 lines also full
`route()` calls (overview geometry, no steps), to show what the lean path saves.

`run()` returns a Markdown section; `python -m bench detour` writes it to RESULTS.md.
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bench.full_stack import one_service
from bench.maps import EVERY_MAP, BenchMap, bench_map
from bench.processes import cpu_seconds
from common.geo import LatLon, haversine_m_arrays
from launcher.stack import Stack
from route_service.dataset import Dataset
from route_service.detour.csvfile import DetourCase
from route_service.detour.engine import DetourResult, Router, answer_cases
from route_service.model import RouteQuery
from route_service.providers.base import Capabilities
from route_service.providers.leg_by_leg import LegByLeg
from route_service.providers.osrm_provider import OsrmProvider

Box = tuple[float, float, float, float]  # lat min, lat max, lon min, lon max
# Where each city's roads are: Heidelberg's dense centre; the small Munich and Helsinki
# extracts whole; Monaco without the French hills around it; Andorra's valley towns.
BOXES: dict[str, Box] = {
    "heidelberg": (49.37, 49.43, 8.62, 8.75),
    "munich": (48.1269, 48.1454, 11.5612, 11.5895),
    "helsinki": (60.1642, 60.1791, 24.9352, 24.9534),
    "monaco": (43.725, 43.752, 7.405, 7.44),
    "andorra": (42.49, 42.57, 1.48, 1.60),
}
CASES = 1000
MAX_CASES = 20_000  # route_service.detour.csvfile.MAX_DETOUR_LINES
TRACK_POINTS = 5000
SEED = 20240601
REPEATS = 5
MAX_REPEATS = 3  # the 20 000-line files: ~5-15 s each, six maps
AGREEMENT_CASES = 5000  # in process, each way: the first lines of the 20 000 (the bench stays under 10 min)
TARGET_S = 2.0  # 1000 lines
MAX_TARGET_S = 15.0  # 20 000 lines (issue 17)
TRACK_STOPS = [LatLon(49.4093, 8.6724), LatLon(49.4120, 8.7200), LatLon(49.3800, 8.6900), LatLon(49.4000, 8.6400)]
DETOUR_HEADER = "id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon"


# ---------------------------------------------------------------- files


def boxes_of(name: str) -> list[Box]:
    return list(BOXES.values()) if name == "all" else [BOXES[name]]


def detour_file(boxes: Sequence[Box], count: int = CASES, seed: int = SEED) -> bytes:
    """`count` lines of uniform random points, line i's three in box i mod len(boxes)."""
    rng = np.random.default_rng(seed)
    lats, lons = rng.uniform(0, 1, (count, 3)), rng.uniform(0, 1, (count, 3))
    lines = [DETOUR_HEADER]
    for i in range(count):
        lat0, lat1, lon0, lon1 = boxes[i % len(boxes)]
        points = [(lat0 + (lat1 - lat0) * lats[i, k], lon0 + (lon1 - lon0) * lons[i, k]) for k in range(3)]
        lines.append(f"c{i}," + ",".join(f"{lat:.6f},{lon:.6f}" for lat, lon in points))
    return ("\n".join(lines) + "\n").encode()


def cases_of(body: bytes) -> list[DetourCase]:
    cases = []
    for line, text in enumerate(body.decode().splitlines()[1:], start=2):
        parts = text.split(",")
        values = [float(x) for x in parts[1:]]
        points = [LatLon(values[k], values[k + 1]) for k in (0, 2, 4)]
        cases.append(DetourCase(line, parts[0], points[0], points[1], points[2]))
    return cases


def track_geometry(provider: OsrmProvider) -> list[tuple[float, float]]:
    """(lon, lat) along the car route through TRACK_STOPS."""
    coords: list[tuple[float, float]] = []
    for origin, destination in itertools.pairwise(TRACK_STOPS):
        coords.extend(provider.route(RouteQuery(origin, destination, steps=False)).routes[0].geometry)
    return coords


def track_file(geometry: list[tuple[float, float]], count: int = TRACK_POINTS, seed: int = SEED) -> tuple[bytes, float]:
    """`count` points evenly along the geometry, ±4 m of noise, 1 s apart; and its length (m)."""
    lon, lat = np.array(geometry).T
    along = np.concatenate([[0.0], np.cumsum(haversine_m_arrays(lat[:-1], lon[:-1], lat[1:], lon[1:]))])
    at = np.linspace(0, along[-1], count)
    rng = np.random.default_rng(seed)
    noise = rng.uniform(-4, 4, (count, 2)) / 111_000
    lats = np.interp(at, along, lat) + noise[:, 0]
    lons = np.interp(at, along, lon) + noise[:, 1] / np.cos(np.radians(49.4))
    lines = ["lat,lon,time", *(f"{lats[i]:.7f},{lons[i]:.7f},{1_700_000_000 + i}" for i in range(count))]
    return ("\n".join(lines) + "\n").encode(), float(along[-1])


# ---------------------------------------------------------------- measuring over HTTP


def post(url: str, body: bytes, filename: str, headers: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """`headers`: the internal credential, as the route service's own port asks for it."""
    request = urllib.request.Request(  # noqa: S310 - loopback
        url + f"/v1/detour/file?filename={filename}",
        data=body,
        headers={"Content-Type": "text/csv", **headers},
        method="POST",
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 - loopback
        answer: dict[str, Any] = orjson.loads(response.read())
    return time.perf_counter() - started, answer


def start_route_service(dataset: Dataset, data_dir: Path) -> Stack:
    return one_service(data_dir, "route_service", MAP_DIR=str(dataset.path.parent))


@dataclass
class Posted:
    """One file posted REPEATS (or MAX_REPEATS) times: the seconds, the route service's CPU
    seconds (all its processes) and the load average around them, and the last answer."""

    size: int
    times: list[float]
    cpu: list[float]
    load: float
    answer: dict[str, Any]

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def over_http(dataset: Dataset, files: dict[str, bytes]) -> dict[str, Posted]:
    """Each file posted to one route service started for the map (the first a few lines, to warm up)."""
    with tempfile.TemporaryDirectory(prefix="bench-detour-") as tmp:
        stack = start_route_service(dataset, Path(tmp))
        try:
            url, internal = stack.url("route_service"), stack.internal_headers()
            post(url, next(iter(files.values()))[:2000], "warmup.csv", internal)
            service = stack.processes["route_service"].pid
            return {label: post_repeatedly(url, internal, label, body, service) for label, body in files.items()}
        finally:
            stack.stop()


def post_repeatedly(url: str, internal: dict[str, str], label: str, body: bytes, service: int) -> Posted:
    times: list[float] = []
    cpu: list[float] = []
    answer: dict[str, Any] = {}
    load = os.getloadavg()[0]
    for _ in range(MAX_REPEATS if label == "max" else REPEATS):
        before = cpu_seconds(service)
        took, answer = post(url, body, f"{label}.csv", internal)
        times.append(took)
        cpu.append(cpu_seconds(service) - before)
    return Posted(len(body), times, cpu, (load + os.getloadavg()[0]) / 2, answer)


# ---------------------------------------------------------------- in process


@dataclass
class Agreement:
    """The detour plugin's answers against two `cost()` calls per line, on the same lines."""

    lines: int
    same_failures: bool  # the same lines failed, with the same errors
    durations_equal: int  # lines whose direct and via durations agree to 0.1 s
    distances_equal: int  # ... whose distances agree to 0.1 m
    max_distance_m: float  # the largest distance difference (routes that tie on time)
    max_duration_s: float  # the largest duration difference
    fast_s: float
    routes_s: float


def routes_only(capabilities: Capabilities) -> Capabilities:
    """Without the detour plugin: two lean `cost()` calls per line (OSRM: Route on MLD)."""
    return replace(capabilities, detour=None)


def full_routes(capabilities: Capabilities) -> Capabilities:
    """Without the lean plugins: costs come leg by leg from the provider's full routes."""
    return replace(capabilities, detour=None, cost=LegByLeg(capabilities.route).cost)


def timed(capabilities: Capabilities, cases: list[DetourCase]) -> tuple[float, list[DetourResult], list[Any]]:
    started = time.perf_counter()
    results, errors = answer_cases(Router(capabilities, "car", "fastest"), cases)
    return time.perf_counter() - started, results, errors


def agreement(capabilities: Capabilities, cases: list[DetourCase]) -> Agreement:
    fast_s, fast, fast_errors = timed(capabilities, cases)
    routes_s, routes, route_errors = timed(routes_only(capabilities), cases)
    pairs = list(zip(fast, routes, strict=False))
    same = fast_errors == route_errors and [f.case for f in fast] == [r.case for r in routes]
    durations = sum(same_cost(f, r, "duration_s") for f, r in pairs)
    distances = sum(same_cost(f, r, "distance_m") for f, r in pairs)
    return Agreement(
        len(cases),
        same,
        durations,
        distances,
        largest(pairs, "distance_m"),
        largest(pairs, "duration_s"),
        fast_s,
        routes_s,
    )


def largest(pairs: list[tuple[DetourResult, DetourResult]], field: str) -> float:
    differences = (
        abs(getattr(getattr(f, leg), field) - getattr(getattr(r, leg), field))
        for f, r in pairs
        for leg in ("direct", "via")
    )
    return max(differences, default=0.0)


def same_cost(fast: DetourResult, routes: DetourResult, field: str) -> bool:
    return all(
        round(getattr(getattr(fast, leg), field), 1) == round(getattr(getattr(routes, leg), field), 1)
        for leg in ("direct", "via")
    )


# ---------------------------------------------------------------- the section


@dataclass
class MapRun:
    name: str
    posted: dict[str, Posted]
    agreement: Agreement


def run_map(bench: BenchMap) -> MapRun:
    boxes = boxes_of(bench.name)
    files = {"cases": detour_file(boxes), "max": detour_file(boxes, MAX_CASES)}
    local = agreement(bench.registry.providers["osrm"], cases_of(files["max"])[:AGREEMENT_CASES])
    return MapRun(bench.name, over_http(bench.dataset, files), local)


def run() -> str:
    started = time.perf_counter()
    runs = []
    for name in EVERY_MAP:
        runs.append(run_map(bench_map(name)))
    heidelberg = bench_map("heidelberg")
    capabilities = heidelberg.registry.providers["osrm"]
    cases = cases_of(detour_file(boxes_of("heidelberg")))
    paths = {"detour plugin": timed(capabilities, cases)[0], "lean cost()": timed(routes_only(capabilities), cases)[0]}
    paths["full route()"] = timed(full_routes(capabilities), cases)[0]
    provider = OsrmProvider.load(heidelberg.dataset.path, heidelberg.dataset.manifest)
    track_body, track_length = track_file(track_geometry(provider))
    track = over_http(heidelberg.dataset, {"track": track_body})["track"]
    return report(runs, paths, track, track_length, time.perf_counter() - started)


def row(run: MapRun) -> str:
    cases, most, local = run.posted["cases"], run.posted["max"], run.agreement
    summary = most.answer["summary"]
    verdict = "yes" if cases.median <= TARGET_S and most.median <= MAX_TARGET_S else "**no**"
    return (
        f"| {run.name} | {cases.median:.2f} | {most.median:.2f} ({min(most.times):.2f}-{max(most.times):.2f}) "
        f"| {statistics.median(most.cpu):.1f} | {most.load:.1f} | {verdict} | {summary['answered']} / {summary['failed']} "
        f"| {local.fast_s:.2f} | {local.routes_s:.2f} | {local.routes_s / local.fast_s:.1f} | {local.durations_equal} "
        f"| {local.distances_equal} | {local.max_duration_s:.1f} | {local.max_distance_m:.1f} "
        f"| {'yes' if local.same_failures else '**no**'} |"
    )


def report(runs: list[MapRun], paths: dict[str, float], track: Posted, track_length: float, took_s: float) -> str:
    answer = track.answer["results"][0]
    lean, full = paths["lean cost()"], paths["full route()"]
    return "\n".join(
        [
            "## Detour files (`POST /v1/detour/file`)",
            "",
            f"Command: `python -m bench detour` ({took_s / 60:.1f} min).",
            "",
            "Every shared extract and all five as one map (`all`), car fastest, route service as its own process "
            "(Redis beside it), called over HTTP on loopback; time from sending the request to having read the "
            f"whole JSON answer, median of {REPEATS} posts ({MAX_REPEATS} for {MAX_CASES} lines). Detour cases: "
            f"seeded random from/to/via points in a box of the city (seed {SEED}; on `all` the five cities in turn, "
            "each line in one city); failed lines are points with no road within 1000 m. Goals: "
            f"{CASES} lines ≤ {TARGET_S:g} s, {MAX_CASES} lines (the documented maximum) ≤ {MAX_TARGET_S:g} s.",
            "Files of 2000 lines or more are shared between the route worker and its large-call process "
            "(`route_service/detour_handlers.py`): two cores when the machine has them free. *Its CPU s*: the "
            f"median CPU time of the route service's processes for one {MAX_CASES}-line file (worker and "
            "large-call process together), which other work on the machine does not change; *load*: the "
            "1-minute load average while the file was posted (2 cores: above 2, other work takes CPU time from "
            "the route service and the wall time grows with it).",
            f"In process on the first {AGREEMENT_CASES} of the 20 000 lines, one process: the OSRM detour plugin "
            "(one CH Table call per line: sources [from, via], destinations [via, to]; a second Table for the "
            "direct route when from and to are less than 2 km apart) against two lean `cost()` Route calls per "
            "line on MLD (the path before issue 17, still used for profiles without a CH graph and for every line "
            "the plugin cannot answer, so failed lines get the same errors), and how many lines give the same "
            "numbers to 0.1 (direct and via alike).",
            "",
            f"| map | {CASES} lines s | {MAX_CASES} lines s (min-max) | its CPU s | load | goals met "
            "| answered / failed | plugin s | 2 cost() calls s | speed-up | durations equal | distances equal "
            "| max duration diff s | max distance diff m | same failed lines |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *(row(r) for r in runs),
            "",
            "Where the numbers differ: a distance where two routes tie on time (the engines may pick either); "
            "0.1 s or 0.1 m where the via route's two legs are rounded one by one; a via route a few seconds "
            "shorter where the Table's legs turn around at the via point and OSRM's Route did not.",
            f"Heidelberg's {CASES} lines in process: detour plugin {paths['detour plugin']:.2f} s, lean `cost()` "
            f"(no geometry, no steps) {lean:.2f} s, full `route()` calls {full:.2f} s ({full / lean:.1f} times the "
            "lean path).",
            "",
            f"Track (Heidelberg): a {track_length / 1000:.1f} km car route through 4 places, {TRACK_POINTS} points "
            f"({track.size / 1e3:.0f} kB) with ±4 m noise and 1 s apart: median {track.median:.2f} s "
            f"(min {min(track.times):.2f}, max {max(track.times):.2f}); method `{answer['method']}`, "
            f"{answer['matchedPoints']} of {answer['pointsUsed']} points matched, driven "
            f"{answer['driven']['distance'] / 1000:.2f} km against the best route's "
            f"{answer['best']['distance'] / 1000:.2f} km from its first to its last point (extra "
            f"{answer['extraPercent']} %: the 4 places make it a deliberate detour). Map matching runs on the track "
            "thinned to points at least 10 m apart, in OSRM Match calls of up to 2000 points.",
        ]
    )


if __name__ == "__main__":
    print(run())
