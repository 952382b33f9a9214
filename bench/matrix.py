"""POST /v1/matrix: 10x10, 100x100 and 1000x10 on every shared extract and on all five as one
map, in process (the OSRM provider's matrix plugin: the work itself), and end to end through
the gateway with a token on Munich (the whole platform as real processes), so the hop's cost
is the ratio of the two measured in the same run. Points: seeded random road nodes of each
map's main network (bench/maps.py). Goal (issue 14): 100x100 in ≤ 100 ms end to end.

`run()` returns the Markdown section; `python -m bench matrix` writes it to RESULTS.md.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from bench.full_stack import full_stack
from bench.maps import BenchMap, bench_map, every_map
from bench.soak import Account
from common.geo import LatLon
from route_service.model import MatrixQuery

SEED = 20261124
SHAPES = ((10, 10), (100, 100), (1000, 10))
REPEATS = int(os.environ.get("BENCH_MATRIX_REPEATS", "15"))


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


def munich_end_to_end(points: list[LatLon]) -> dict[tuple[int, int], tuple[float, float]]:
    with tempfile.TemporaryDirectory() as data, full_stack(Path(data)) as stack:
        account = Account.create(stack)
        token = asyncio.run(token_for(stack.base_url, account))
        return asyncio.run(end_to_end(stack.base_url, token, points))


def cell(figures: tuple[float, float]) -> str:
    return f"{figures[0]:.1f} / {figures[1]:.1f}"


def run() -> str:
    rows, munich_points = [], None
    for bench in every_map():
        points = bench.road_points(1010, SEED)
        if bench.name == "munich":
            munich_points = points
        measured = in_process(bench, points)
        rows.append(f"| {bench.name} | " + " | ".join(cell(measured[s]) for s in SHAPES) + " |")
    if munich_points is None:
        munich_points = bench_map("munich").road_points(1010, SEED)
    e2e = munich_end_to_end(munich_points)
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
        ]
    )


if __name__ == "__main__":
    print(run())
