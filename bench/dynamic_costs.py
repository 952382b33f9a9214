"""Routes with per-request costs: an avoid area and a truck's dimensions, on every shared
extract and on all five as one map, against the same routes without them (Valhalla)
and OSRM's plain route, measured in the same run. Goal (issue 14): p50 ≤ 50 ms for a city route
with them.

Pairs: seeded random road nodes of each map's main network (bench/maps.py), at least 500 m
apart. The area: a box of 80 m across the middle of the pair's plain Valhalla route, so it always
forces a detour. The truck: 4.0 m high, 2.55 m wide, 12 m long, 18 t, 10 t axle load. Timed in
process: parsing (the GeoJSON included) and the provider's route call.

`run()` returns the Markdown section; `python -m bench dynamic_costs` writes it to RESULTS.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

import numpy as np
import orjson

from bench.maps import BenchMap, every_map
from common.areas import square_around
from common.errors import ApiError
from common.geo import LatLon, haversine_m
from route_service.parsing import parse_route

SEED = 20261125
PAIRS = int(os.environ.get("BENCH_DYNAMIC_PAIRS", "40"))
TRUCK = {"vehicle": "truck", "height": "4.0", "width": "2.55", "length": "12", "weight": "18", "axleLoad": "10"}


def text(point: LatLon) -> str:
    return f"{point.lat},{point.lon}"


def pairs_of(bench: BenchMap) -> list[tuple[LatLon, LatLon]]:
    points = bench.road_points(4 * PAIRS, SEED)
    found = [(a, b) for a, b in zip(points[::2], points[1::2], strict=False) if haversine_m(a, b) >= 500]
    return found[:PAIRS]


def timed(bench: BenchMap, params: Mapping[str, str]) -> tuple[float, bool]:
    started = time.perf_counter()
    try:
        request = parse_route(params, bench.registry)
        request.plugin(request.query)
        ok = True
    except ApiError:
        ok = False
    return (time.perf_counter() - started) * 1000, ok


def measure(bench: BenchMap) -> dict[str, tuple[float, float, int]]:
    times: dict[str, list[float]] = {"osrm": [], "valhalla": [], "avoid": [], "truck": []}
    failed = dict.fromkeys(times, 0)
    for origin, destination in pairs_of(bench):
        base = {"from": text(origin), "to": text(destination), "steps": "false"}
        plain = parse_route({**base, "provider": "valhalla"}, bench.registry)
        try:
            geometry = plain.plugin(plain.query).routes[0].geometry
        except ApiError:  # Valhalla may leave a pair OSRM joins (a ferry) unjoined
            continue
        lon, lat = geometry[len(geometry) // 2]
        area = orjson.dumps(square_around(LatLon(float(lat), float(lon)), 40.0)).decode()
        cases = {
            "osrm": base,
            "valhalla": {**base, "provider": "valhalla"},
            "avoid": {**base, "avoid": area},
            "truck": {**base, **TRUCK},
        }
        for name, params in cases.items():
            timed(bench, params)  # warm: the first call of a kind pages its data in
            ms, ok = timed(bench, params)
            times[name].append(ms)
            failed[name] += 0 if ok else 1
    return {k: (float(np.percentile(v, 50)), float(np.percentile(v, 99)), failed[k]) for k, v in times.items()}


def run() -> str:
    rows = []
    for bench in every_map():
        m = measure(bench)
        cells = " | ".join(f"{m[k][0]:.1f} / {m[k][1]:.1f}" for k in ("osrm", "valhalla", "avoid", "truck"))
        ratio = m["avoid"][0] / m["valhalla"][0]
        rows.append(f"| {bench.name} | {cells} | {ratio:.2f}x | {m['avoid'][2]} / {m['truck'][2]} |")
    return "\n".join(
        [
            "## Per-request costs: avoid areas and truck dimensions",
            "",
            f"Command: `python -m bench dynamic_costs` (BENCH_DYNAMIC_PAIRS={PAIRS}). In process, parsing included, "
            "car fastest unless a truck; warm (each case run once before it is timed).",
            "",
            "| map | OSRM plain p50 / p99 ms | Valhalla plain | Valhalla + avoid box | Valhalla truck with dimensions "
            "| avoid / plain (p50) | no route: avoid / truck |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Goal: p50 ≤ 50 ms with avoid areas or truck dimensions.",
        ]
    )


if __name__ == "__main__":
    print(run())
