"""POST /v1/match on every shared extract and on all five as one map: GPS traces made from
drives of five real routes (OSRM, through seeded main-network road points at least 300 m apart), one point
every ~8 s of driving, each moved 10-30 m in a random direction, times jittered by up to 1 s.
A point is on the right road when its matched location lies within 8 m of the true route.
Latency of 100- and 1000-point traces in process (parsing, chunked matching, the answer's JSON).
Goal (issue 14): ≥ 95 % of points on the right road.

`run()` returns the Markdown section; `python -m bench match` writes it to RESULTS.md.
"""

from __future__ import annotations

import os
import time
from itertools import pairwise
from typing import Any

import numpy as np
import shapely

from bench.maps import BenchMap, every_map
from common.errors import ParameterErrors
from common.geo import METRES_PER_DEGREE, haversine_m
from common.service import dump_json
from route_service.formatter import match_body
from route_service.matching import match_in_chunks
from route_service.model import MatchResult, WaypointsQuery
from route_service.parsing import parse_match
from route_service.traces import trace_from_json

SEED = 20261126
ROUTES = int(os.environ.get("BENCH_MATCH_ROUTES", "10"))  # drives per map
LEGS = 5
RIGHT_ROAD_M = 8.0
SAMPLE_SECONDS = 8.0
NOISE_M = (10.0, 30.0)


def synthetic_trace(geometry: np.ndarray, duration_s: float, rng: np.random.Generator, start: int = 1_700_000_000
                    ) -> dict[str, Any]:  # fmt: skip
    """The body of a /v1/match request: the route sampled every SAMPLE_SECONDS, with noise."""
    line = shapely.LineString(geometry)
    count = max(3, int(duration_s / SAMPLE_SECONDS))
    points = []
    for i in range(count):
        where = line.interpolate(i / (count - 1), normalized=True)
        metres, angle = rng.uniform(*NOISE_M), rng.uniform(0, 2 * np.pi)
        lat = where.y + metres * np.sin(angle) / METRES_PER_DEGREE
        lon = where.x + metres * np.cos(angle) / (METRES_PER_DEGREE * np.cos(np.radians(where.y)))
        points.append({"lat": lat, "lon": lon, "time": start + int(i * SAMPLE_SECONDS + rng.uniform(-1, 1))})
    points.sort(key=lambda p: p["time"])
    return {"points": points}


def matched(bench: BenchMap, body: dict[str, Any], provider: str | None = None) -> MatchResult:
    if provider is not None:
        body = {**body, "provider": provider}
    errors = ParameterErrors()
    request = parse_match(trace_from_json(body, errors), bench.registry, errors)
    q = request.query
    return match_in_chunks(
        request.plugin, q.points, q.timestamps, q.vehicle, q.route_type, detail=True, gps_accuracy_m=q.gps_accuracy_m
    )


def on_route(result: MatchResult, geometry: np.ndarray) -> tuple[int, int]:
    """(points on the right road, points)."""
    line = shapely.LineString(geometry)
    right = sum(
        1
        for s in result.snapped
        if s is not None
        and line.distance(shapely.Point(s.location.lon, s.location.lat)) * METRES_PER_DEGREE < RIGHT_ROAD_M
    )
    return right, len(result.snapped)


def drives(bench: BenchMap, count: int, seed: int, legs: int = LEGS) -> list[tuple[np.ndarray, float]]:
    """`count` drives of `legs` consecutive OSRM routes between seeded road points, each leg at
    least 300 m: a trace is a drive of a few km, whose two ends are a small share of its points
    (an end point has no neighbour to tell which of two near roads it was on)."""
    waypoints = bench.registry.providers["osrm"].waypoints
    points = bench.road_points((legs + 1) * count * 2, seed)
    found = []
    for first in range(0, len(points) - legs, legs + 1):
        stops = points[first : first + legs + 1]
        if any(haversine_m(a, b) < 300 for a, b in pairwise(stops)):
            continue
        drive = waypoints(WaypointsQuery(stops)).route
        found.append((drive.geometry, drive.duration_s))
        if len(found) == count:
            break
    return found


def right_road_share(bench: BenchMap, count: int, seed: int, provider: str | None = None) -> tuple[int, int]:
    """(points matched onto the road driven, points) of `count` noisy drives; `provider`: the
    one that matches (None: the default)."""
    rng = np.random.default_rng(seed)
    right = total = 0
    for geometry, duration in drives(bench, count, seed):
        r, t = on_route(matched(bench, synthetic_trace(geometry, duration, rng), provider), geometry)
        right, total = right + r, total + t
    return right, total


def chained_trace(bench: BenchMap, points: int) -> dict[str, Any]:
    """A /v1/match body of `points` points along a chain of drives."""
    rng = np.random.default_rng(SEED)
    chain: list[np.ndarray] = []
    seconds = 0.0
    for geometry, duration in drives(bench, 60, SEED + 1):
        chain.append(geometry)
        seconds += duration
        if seconds >= points * SAMPLE_SECONDS * 1.2:
            break
    body = synthetic_trace(np.concatenate(chain), seconds, rng)
    body["points"] = body["points"][:points]
    return body


def latency(bench: BenchMap, points: int, repeats: int = 5) -> tuple[float, float]:
    """p50 / p99 ms of a trace of `points` points along a chain of routes."""
    body = chained_trace(bench, points)
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        errors = ParameterErrors()
        request = parse_match(trace_from_json(body, errors), bench.registry, errors)
        q = request.query
        result = match_in_chunks(
            request.plugin,
            q.points,
            q.timestamps,
            q.vehicle,
            q.route_type,
            detail=True,
            gps_accuracy_m=q.gps_accuracy_m,
        )
        dump_json(match_body(result, q, request.provider, bench.dataset.hash))
        times.append((time.perf_counter() - started) * 1000)
    return float(np.percentile(times[1:], 50)), float(np.percentile(times[1:], 99))


def run() -> str:
    rows = []
    for bench in every_map():
        right, total = right_road_share(bench, ROUTES, SEED)
        short, long = latency(bench, 100), latency(bench, 1000)
        rows.append(
            f"| {bench.name} | {right}/{total} = {100 * right / max(1, total):.1f} % | "
            f"{short[0]:.0f} / {short[1]:.0f} | {long[0]:.0f} / {long[1]:.0f} |"
        )
    return "\n".join(
        [
            "## Map matching (POST /v1/match)",
            "",
            f"Command: `python -m bench match` (BENCH_MATCH_ROUTES={ROUTES}). Traces from real OSRM car routes, a point "
            f"every {SAMPLE_SECONDS:g} s moved {NOISE_M[0]:g}-{NOISE_M[1]:g} m at random, times jittered ±1 s; right "
            f"road: the matched location within {RIGHT_ROAD_M:g} m of the true route. In process, default GPS accuracy "
            "(20 m). A chained trace is wrapped for the latency (warm, 5 runs).",
            "",
            "| map | points on the right road | 100 points p50 / p99 ms | 1000 points p50 / p99 ms |",
            "|---|---|---|---|",
            *rows,
            "",
            "Goal: ≥ 95 % of points on the right road.",
        ]
    )


if __name__ == "__main__":
    print(run())
