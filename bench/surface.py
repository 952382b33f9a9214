"""What "a point means the surface road" costs a route (issue 56): Valhalla's `locate` asked for
both ends of every route before the engine routes (route_service/providers/surface.py).

Per map (every shared extract and all five as one), seeded pairs of main-network road points
(bench/maps.py): the surface lookup alone per route (car and truck: both ends), and OSRM's car
route bare against the same route through the registry (surface lookup, diagnostics wrapper),
alternating on the same pairs; how many ends were moved onto a surface road.

`python -m bench surface` writes the section; BENCH_SURFACE_PAIRS (default 300) sets the pairs.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from functools import partial

from bench.maps import BenchMap, every_map
from bench.scale import percentile
from common.errors import ApiError
from common.geo import LatLon
from common.vehicles import VEHICLE_TABLE
from route_service.model import RouteQuery
from route_service.providers.valhalla import ValhallaProvider

SEED = 20261202
PAIRS = int(os.environ.get("BENCH_SURFACE_PAIRS", "300"))


def timed[T](call: Callable[[], T]) -> tuple[float, T | None]:
    """(ms, the answer or None for an error)."""
    started = time.perf_counter()
    try:
        answer: T | None = call()
    except ApiError:
        answer = None
    return (time.perf_counter() - started) * 1000, answer


def surface_ends(valhalla: ValhallaProvider, vehicle: str, ends: tuple[LatLon, LatLon]) -> int:
    """Both ends' lookups, as `surface_first` makes them; how many were moved."""
    radius = VEHICLE_TABLE[vehicle].snap_radius_m
    return sum(valhalla.surface_point(vehicle, end, radius) is not None for end in ends)


def measure(bench: BenchMap) -> str:
    valhalla = bench.registry.sources["valhalla"]
    assert isinstance(valhalla, ValhallaProvider)
    points = bench.road_points(2 * PAIRS, SEED)
    pairs = list(zip(points[::2], points[1::2], strict=False))
    lookups: dict[str, list[float]] = {"car": [], "truck": []}
    moved = 0
    for vehicle, times in lookups.items():
        for pair in pairs:
            took, count = timed(partial(surface_ends, valhalla, vehicle, pair))
            times.append(took)
            moved += count or 0
    bare, wrapped = [], []
    osrm, served = bench.registry.sources["osrm"], bench.registry.providers["osrm"]
    for origin, destination in pairs:
        query = RouteQuery(origin, destination)
        bare.append(timed(partial(osrm.route, query))[0])  # type: ignore[attr-defined]
        wrapped.append(timed(partial(served.route, query))[0])
    extra = statistics.median(wrapped) - statistics.median(bare)
    return (
        f"| {bench.name} | {len(pairs)} | {statistics.median(lookups['car']):.2f} / {percentile(lookups['car'], 99):.2f}"
        f" | {statistics.median(lookups['truck']):.2f} | {statistics.median(bare):.2f} | {statistics.median(wrapped):.2f}"
        f" | {extra:+.2f} | {moved} of {4 * len(pairs)} |"
    )


def run() -> str:
    rows = [measure(bench) for bench in every_map()]
    return "\n".join(
        [
            "## A point means the surface road: its cost per route (issue 56)",
            "",
            "Valhalla's `locate` (verbose, no reachability check) for both ends of a route, and a second",
            "`locate` without tunnels for an end whose nearest road is one; in process, one thread, ms. The",
            "lookup columns are the cost; `extra` (through the registry minus bare, medians of the same pairs)",
            "also holds the diagnosis of the routes that fail (pairs in two extracts of the merged map) and",
            "the machine's noise.",
            "",
            "| map | pairs | car lookup p50 / p99 | truck lookup p50 | OSRM car route bare p50 | through the registry p50 | extra | ends moved |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    print(run())
