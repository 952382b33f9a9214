"""Benchmark of `POST /v1/detour/file` on Heidelberg, over HTTP against the route service.

Heidelberg (car fastest only) is imported into a temporary directory; Redis and the route
service run as real processes (`launcher.stack.Stack`, free loopback ports). Measured end to
end (request sent → whole JSON answer read), several times each:
- a file of 1000 detour cases: seeded random from/to/via points in the dense city box;
- a driven track of 5000 points: a real route through 4 places in the city, sampled evenly,
  with seeded GPS noise (±4 m) and one point per second.
In the same run, in-process: the same detour cases through the provider's lean `cost()` and
through full `route()` calls (overview geometry, no steps), to show what the lean path saves.

`run()` returns a Markdown section; `python -m bench detour` writes it to RESULTS.md.
"""

from __future__ import annotations

import itertools
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from common.config import DEFAULT_PORTS, REPO_ROOT
from common.geo import LatLon, haversine_m_arrays
from launcher.redis_server import free_port
from launcher.stack import Stack
from route_service.detour.csvfile import DetourCase
from route_service.detour.engine import Router, answer_cases
from route_service.importer import ImportResult, Progress, import_maps
from route_service.model import RouteQuery
from route_service.providers.base import Capabilities
from route_service.providers.leg_by_leg import LegByLeg
from route_service.providers.osrm_provider import OsrmProvider
from route_service.providers.registry import resolve

PBF = REPO_ROOT.parent / "shared" / "osm" / "heidelberg.osm.pbf"
DENSE_BOX = (49.37, 49.43, 8.62, 8.75)  # lat min, lat max, lon min, lon max
CASES = 1000
TRACK_POINTS = 5000
SEED = 20240601
REPEATS = 5
TARGET_S = 2.0
TRACK_STOPS = [LatLon(49.4093, 8.6724), LatLon(49.4120, 8.7200), LatLon(49.3800, 8.6900), LatLon(49.4000, 8.6400)]
DETOUR_HEADER = "id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon"


# ---------------------------------------------------------------- files


def detour_file(count: int = CASES, seed: int = SEED) -> bytes:
    rng = np.random.default_rng(seed)
    lat0, lat1, lon0, lon1 = DENSE_BOX
    lats, lons = rng.uniform(lat0, lat1, (count, 3)), rng.uniform(lon0, lon1, (count, 3))
    lines = [DETOUR_HEADER]
    for i in range(count):
        f, t, v = ((lats[i, k], lons[i, k]) for k in range(3))
        lines.append(f"c{i},{f[0]:.6f},{f[1]:.6f},{t[0]:.6f},{t[1]:.6f},{v[0]:.6f},{v[1]:.6f}")
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


# ---------------------------------------------------------------- measuring


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


def repeated(call: Callable[[], tuple[float, dict[str, Any]]]) -> tuple[list[float], dict[str, Any]]:
    times: list[float] = []
    answer: dict[str, Any] = {}
    for _ in range(REPEATS):
        seconds, answer = call()
        times.append(seconds)
    return times, answer


def full_routes(provider: OsrmProvider) -> Capabilities:
    """The OSRM provider without its lean cost plugin: costs come leg by leg from its routes."""
    lean = resolve(provider)
    return replace(lean, cost=LegByLeg(lean.route).cost)


def in_process(provider: OsrmProvider, cases: list[DetourCase]) -> dict[str, float]:
    timings = {}
    for label, routed in (("lean cost()", resolve(provider)), ("full route()", full_routes(provider))):
        started = time.perf_counter()
        answer_cases(Router(routed, "car", "fastest"), cases)
        timings[label] = time.perf_counter() - started
    return timings


def row(label: str, times: list[float]) -> str:
    verdict = "yes" if statistics.median(times) <= TARGET_S else "**no**"
    return f"| {label} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} | {verdict} |"


# ---------------------------------------------------------------- the section


def start_route_service(maps: ImportResult, data_dir: Path) -> Stack:
    stack = Stack(
        data_dir=data_dir,
        ports={name: free_port() for name in DEFAULT_PORTS},
        redis_port=free_port(),
        services=["route_service"],
        extra_env={"MAP_DIR": str(maps.dataset_dir.parent), "LOG_LEVEL": "WARNING"},
    )
    stack.log_dir.mkdir(parents=True, exist_ok=True)
    stack.start_redis()
    try:
        stack.start_process("route_service")
        stack.wait_healthy("route_service")
    except BaseException:
        stack.stop()
        raise
    return stack


def run() -> str:
    with tempfile.TemporaryDirectory(prefix="bench-detour-") as tmp:
        maps = import_maps([PBF], Path(tmp) / "maps", profiles=["car-fastest"], progress=Progress(emit=lambda _l: None))
        provider = OsrmProvider.load(maps.dataset_dir, maps.manifest)
        cases_body = detour_file()
        track_body, track_length = track_file(track_geometry(provider))
        local = in_process(provider, cases_of(cases_body))
        stack = start_route_service(maps, Path(tmp) / "stack")
        try:
            url, internal = stack.url("route_service"), stack.internal_headers()
            post(url, cases_body[:2000], "warmup.csv", internal)
            case_times, case_answer = repeated(lambda: post(url, cases_body, "cases.csv", internal))
            track_times, track_answer = repeated(lambda: post(url, track_body, "track.csv", internal))
        finally:
            stack.stop()
    return report(cases_body, case_times, case_answer, track_body, track_length, track_times, track_answer, local)


def report(cases_body: bytes, case_times: list[float], case_answer: dict[str, Any], track_body: bytes,
           track_length: float, track_times: list[float], track_answer: dict[str, Any],
           local: dict[str, float]) -> str:  # fmt: skip
    summary = case_answer["summary"]
    track = track_answer["results"][0]
    lean, full = local["lean cost()"], local["full route()"]
    return "\n".join(
        [
            "## Detour files (`POST /v1/detour/file`)",
            "",
            "Heidelberg, car fastest, route service as its own process (Redis beside it), called over HTTP "
            f"on loopback; each file posted {REPEATS} times, time from sending the request to having read the "
            "whole JSON answer.",
            "",
            f"| File | median s | min s | max s | ≤ {TARGET_S:g} s |",
            "|---|---|---|---|---|",
            row(f"{CASES} detour cases ({len(cases_body) / 1e3:.0f} kB)", case_times),
            row(f"track of {TRACK_POINTS} points ({len(track_body) / 1e3:.0f} kB)", track_times),
            "",
            f"Detour cases: seeded random from/to/via points in the dense box (seed {SEED}); "
            f"{summary['answered']} answered, {summary['failed']} failed (points with no road within 1000 m). "
            f"Each answered line costs two OSRM route calls (direct, and via as a stop).",
            f"In-process on the same {CASES} lines: the lean `cost()` path (no geometry, no steps) "
            f"{lean:.2f} s, full `route()` calls {full:.2f} s ({full / lean:.1f} times as long).",
            "",
            f"Track: a {track_length / 1000:.1f} km car route through 4 places, {TRACK_POINTS} points with ±4 m noise "
            f"and 1 s apart: method `{track['method']}`, {track['matchedPoints']} of {track['pointsUsed']} points "
            f"matched, driven {track['driven']['distance'] / 1000:.2f} km against the best route's "
            f"{track['best']['distance'] / 1000:.2f} km from its first to its last point (extra "
            f"{track['extraPercent']} %: the 4 places make it a deliberate detour). Map matching runs on the track "
            "thinned to points at least 10 m apart, in OSRM Match calls of up to 2000 points.",
        ]
    )


if __name__ == "__main__":
    print(run())
