"""POST /v1/matrix: 10x10, 100x100 and 1000x10 on every shared extract and on all five as one
map, in process (the OSRM provider's matrix plugin: the work itself), and end to end through
the gateway with a token on Munich (the whole platform as real processes), so the hop's cost
is the ratio of the two measured in the same run. Points: seeded random road nodes of each
map's main network (bench/maps.py). Goal (issue 14): 100x100 in ≤ 100 ms end to end.

Restricted matrices (issue 56): Valhalla's 100x100 (providers.valhalla_matrix) for a truck 3.8 m
high, a car avoiding a 200 m box and a bicycle, on every map in process (parsing included: the
wall time and the process's CPU), and the car's with the box end to end through the gateway on Munich.
Goal: ≤ 1.5 s end to end.

`run()` returns the Markdown section; `python -m bench matrix` writes it to RESULTS.md.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import shapely

from bench.full_stack import full_stack
from bench.maps import BenchMap, bench_map, every_map
from bench.soak import Account
from common.areas import square_around
from common.errors import PointNotRoutable
from common.geo import LatLon
from route_service.model import MatrixQuery
from route_service.parsing import parse_matrix
from route_service.providers.base import MatrixRequest

SEED = 20261124
SHAPES = ((10, 10), (100, 100), (1000, 10))
REPEATS = int(os.environ.get("BENCH_MATRIX_REPEATS", "15"))
RESTRICTED_REPEATS = int(os.environ.get("BENCH_MATRIX_RESTRICTED_REPEATS", "3"))
RESTRICTED_SIDE = 100
TRUCK = {"vehicle": "truck", "truck": {"height": 3.8}}


def percentiles(times_ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(times_ms, 50)), float(np.percentile(times_ms, 99))


def timed(call: Callable[[], object], repeats: int) -> list[float]:
    call()  # warm: the first call pages the map in
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def split(points: list[LatLon], sources: int, destinations: int) -> tuple[list[LatLon], list[LatLon]]:
    if sources == destinations:
        return points[:sources], points[:sources]
    return points[:sources], points[sources : sources + destinations]


def in_process(bench: BenchMap, points: list[LatLon]) -> dict[tuple[int, int], tuple[float, float]]:
    plugin = bench.registry.providers["osrm"].matrix
    assert plugin is not None
    found = {}
    for shape in SHAPES:
        sources, destinations = split(points, *shape)
        query = MatrixQuery(sources, destinations)
        found[shape] = percentiles(timed(lambda q=query: plugin(q), REPEATS))  # type: ignore[misc]
    return found


async def end_to_end(base_url: str, token: str, points: list[LatLon]) -> dict[tuple[int, int], tuple[float, float]]:
    headers = {"Authorization": f"Bearer {token}"}
    found = {}
    async with aiohttp.ClientSession() as session:
        for shape in SHAPES:
            sources, destinations = split(points, *shape)
            body: dict[str, Any] = {"sources": [{"lat": p.lat, "lon": p.lon} for p in sources]}
            if shape[0] != shape[1]:
                body["destinations"] = [{"lat": p.lat, "lon": p.lon} for p in destinations]
            times = []
            for attempt in range(REPEATS + 1):
                started = time.perf_counter()
                async with session.post(base_url + "/v1/matrix", json=body, headers=headers) as resp:
                    await resp.read()
                    assert resp.status == 200, await resp.text()
                if attempt:  # the first one warms up
                    times.append((time.perf_counter() - started) * 1000)
            found[shape] = percentiles(times)
    return found


async def token_for(base_url: str, account: Account) -> str:
    async with aiohttp.ClientSession() as session:
        credentials = {"user": account.email, "password": account.password}
        async with session.post(base_url + "/v1/authenticate", json=credentials) as resp:
            return str((await resp.json())["token"])


def munich_end_to_end(points: list[LatLon]) -> tuple[dict[tuple[int, int], tuple[float, float]], tuple[float, float]]:
    """OSRM's shapes, and a car's 100x100 avoiding a box (Valhalla's)."""
    with tempfile.TemporaryDirectory() as data, full_stack(Path(data)) as stack:
        account = Account.create(stack)
        token = asyncio.run(token_for(stack.base_url, account))
        return asyncio.run(end_to_end(stack.base_url, token, points)), asyncio.run(
            avoid_end_to_end(stack.base_url, token, points)
        )


async def avoid_end_to_end(base_url: str, token: str, points: list[LatLon]) -> tuple[float, float]:
    """A car's 100x100 avoiding a 200 m box (Valhalla's; the bench stack's map serves cars only)."""
    box, outside = avoided(points)
    body = {"sources": [{"lat": p.lat, "lon": p.lon} for p in outside[:RESTRICTED_SIDE]], "avoid": box}
    times = []
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session:
        for attempt in range(RESTRICTED_REPEATS + 1):
            started = time.perf_counter()
            async with session.post(base_url + "/v1/matrix", json=body) as resp:
                answer = await resp.json()
                assert resp.status == 200 and answer["provider"] == "valhalla", answer
            if attempt:
                times.append((time.perf_counter() - started) * 1000)
    return percentiles(times)


def avoided(points: list[LatLon]) -> tuple[dict[str, Any], list[LatLon]]:
    """A 200 m box around a point past the first RESTRICTED_SIDE, and the points outside it."""
    box = square_around(points[RESTRICTED_SIDE], 100.0)
    shape = shapely.Polygon(box["coordinates"][0])
    return box, [p for p in points[: RESTRICTED_SIDE + 10] if not shape.contains(shapely.Point(p.lon, p.lat))]


def restricted(bench: BenchMap, points: list[LatLon]) -> list[str]:
    """Valhalla's 100x100 for each restricted profile: wall p50 / p99 ms, CPU ms (median), null cells."""
    box, outside = avoided(points)
    cells = []
    for profile in (TRUCK, {"vehicle": "car", "avoid": box}, {"vehicle": "bicycle"}):
        body: dict[str, Any] = {"sources": [{"lat": p.lat, "lon": p.lon} for p in outside[:RESTRICTED_SIDE]], **profile}
        body["destinations"] = body["sources"]
        request = routable_request(bench, body)
        assert request.provider == "valhalla", request.provider
        request.plugin(request.query)  # warm
        walls, cpus, nulls = [], [], 0
        for _ in range(RESTRICTED_REPEATS):
            wall, cpu = time.perf_counter(), time.process_time()
            result = request.plugin(parse_matrix(body, bench.registry).query)
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            nulls = int(np.isnan(np.asarray(result.durations_s, dtype=np.float64)).sum())
        p50, p99 = percentiles(walls)
        cells.append(f"{p50:.0f} / {p99:.0f} / {float(np.median(cpus)):.0f} / {nulls}")
    return cells


def routable_request(bench: BenchMap, body: dict[str, Any]) -> MatrixRequest:
    """The request without the points its vehicle has no road near (named by the plugin's 400)."""
    while True:
        request = parse_matrix(body, bench.registry)
        try:
            request.plugin(replace(request.query, destinations=request.query.destinations[:1]))
            return request
        except PointNotRoutable as exc:
            index = int(re.findall(r"\[(\d+)\]", exc.violations[0].parameter or "")[0])
            body["sources"] = body["destinations"] = [p for i, p in enumerate(body["sources"]) if i != index]


def cell(figures: tuple[float, float]) -> str:
    return f"{figures[0]:.1f} / {figures[1]:.1f}"


def run() -> str:
    rows, munich_points, valhalla_rows = [], None, []
    for bench in every_map():
        points = bench.road_points(1010, SEED)
        if bench.name == "munich":
            munich_points = points
        measured = in_process(bench, points)
        rows.append(f"| {bench.name} | " + " | ".join(cell(measured[s]) for s in SHAPES) + " |")
        valhalla_rows.append(f"| {bench.name} | " + " | ".join(restricted(bench, points)) + " |")
    if munich_points is None:
        munich_points = bench_map("munich").road_points(1010, SEED)
    e2e, avoid_e2e = munich_end_to_end(munich_points)
    munich = in_process(bench_map("munich"), munich_points)
    ratio = " | ".join(f"{e2e[s][0] / munich[s][0]:.2f}x" for s in SHAPES)
    shapes = " | ".join(f"{a}x{b} p50 / p99 ms" for a, b in SHAPES)
    return "\n".join(
        [
            "## Matrix (POST /v1/matrix)",
            "",
            f"Command: `python -m bench matrix` (BENCH_MATRIX_REPEATS={REPEATS}). Car fastest, OSRM provider; points are "
            "seeded random road nodes of each map's main network (bench/maps.py), durations and distances both asked.",
            "",
            "In process (the route service's matrix plugin, no HTTP):",
            "",
            f"| map | {shapes} |",
            "|---|---|---|---|",
            *rows,
            "",
            "End to end through the gateway with a token (Munich, every service a real process, the answer read whole):",
            "",
            f"| | {shapes} |",
            "|---|---|---|---|",
            "| end to end | " + " | ".join(cell(e2e[s]) for s in SHAPES) + " |",
            "| in process, same run | " + " | ".join(cell(munich[s]) for s in SHAPES) + " |",
            f"| end to end / in process (p50) | {ratio} |",
            "",
            "Goal: 100x100 ≤ 100 ms end to end.",
            "",
            f"Restricted 100x100, Valhalla (issue 56; BENCH_MATRIX_RESTRICTED_REPEATS={RESTRICTED_REPEATS}): in process, "
            "parsing included, wall p50 / p99 ms / CPU ms (median; two threads, so CPU > wall on an idle machine) / "
            "null cells; points a vehicle has no road near are left out, as are those in the avoided box:",
            "",
            "| map | truck 3.8 m high | car avoiding a 200 m box | bicycle |",
            "|---|---|---|---|",
            *valhalla_rows,
            "",
            f"End to end through the gateway, Munich, a car's 100x100 avoiding the box: p50 / p99 {cell(avoid_e2e)} ms. "
            "Goal: ≤ 1.5 s.",
        ]
    )


if __name__ == "__main__":
    print(run())
