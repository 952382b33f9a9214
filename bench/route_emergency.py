"""Benchmark of the graph provider on Heidelberg: graph build time and route latency
(normal and emergency routes, R = 500 m and 2000 m) for 200 seeded OD pairs in the dense city.

`run()` returns a Markdown section; `python -m bench.route_emergency` prints it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from common.config import REPO_ROOT
from common.errors import ApiError
from common.geo import LatLon
from route_service.importing.graph_build import build_graph
from route_service.model import RouteQuery
from route_service.providers.graph import GRAPH_DIR, GraphProvider

PBF = REPO_ROOT.parent / "shared" / "osm" / "heidelberg.osm.pbf"
DENSE_BOX = (49.37, 49.43, 8.62, 8.75)  # lat min, lat max, lon min, lon max
PAIRS = 200
SEED = 20240601
CASES = [  # label, vehicle, route type, emergency radius
    ("car fastest, normal (R = 0)", "car", "fastest", 0),
    ("car fastest, emergency R = 500 m", "car", "fastest", 500),
    ("car fastest, emergency R = 2000 m", "car", "fastest", 2000),
    ("car shortest, normal (R = 0)", "car", "shortest", 0),
    ("car shortest, emergency R = 2000 m", "car", "shortest", 2000),
]


def od_pairs(count: int = PAIRS, seed: int = SEED) -> list[tuple[LatLon, LatLon]]:
    rng = np.random.default_rng(seed)
    lat0, lat1, lon0, lon1 = DENSE_BOX
    points = np.column_stack([rng.uniform(lat0, lat1, 2 * count), rng.uniform(lon0, lon1, 2 * count)])
    return [(LatLon(*points[2 * i]), LatLon(*points[2 * i + 1])) for i in range(count)]


def timed(call: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    try:
        result: object = call()
    except ApiError as error:
        result = error
    return (time.perf_counter() - started) * 1000, result


def measure(provider: GraphProvider, pairs: list[tuple[LatLon, LatLon]], vehicle: str, route_type: str,
            radius: int) -> dict[str, float]:  # fmt: skip
    times, failures, relaxed = [], 0, 0
    for origin, dest in pairs:
        query = RouteQuery(origin, dest, vehicle=vehicle, route_type=route_type, emergency_radius_m=radius)
        ms, result = timed(lambda q=query: provider.route(q))  # type: ignore[misc]
        times.append(ms)
        if isinstance(result, ApiError):
            failures += 1
        elif result.routes[0].emergency_segments:  # type: ignore[attr-defined]
            relaxed += 1
    return {
        "p50": float(np.percentile(times, 50)),
        "p99": float(np.percentile(times, 99)),
        "mean": float(np.mean(times)),
        "failures": failures,
        "relaxed": relaxed,
    }


def table(provider: GraphProvider, pairs: list[tuple[LatLon, LatLon]]) -> list[str]:
    lines = ["| case | p50 ms | p99 ms | mean ms | routes using relaxations | errors |", "|---|---|---|---|---|---|"]
    for label, vehicle, route_type, radius in CASES:
        m = measure(provider, pairs, vehicle, route_type, radius)
        lines.append(f"| {label} | {m['p50']:.1f} | {m['p99']:.1f} | {m['mean']:.1f} | "
                     f"{m['relaxed']:.0f}/{len(pairs)} | {m['failures']:.0f} |")  # fmt: skip
    return lines


def search_comparison(provider: GraphProvider, pairs: list[tuple[LatLon, LatLon]]) -> list[str]:
    """The region search (the tiles near both ends, proven against the rest; fallback the whole
    graph) against a plain unlimited search of the whole graph."""
    lines = ["| search (car fastest, R = 2000 m) | p50 ms | p99 ms |", "|---|---|---|"]
    for label, bounded in (("region search (kept)", True), ("unbounded Dijkstra, whole graph", False)):
        provider.engine.use_limit = bounded
        m = measure(provider, pairs, "car", "fastest", 2000)
        lines.append(f"| {label} | {m['p50']:.1f} | {m['p99']:.1f} |")
    provider.engine.use_limit = True
    return lines


def run() -> str:
    pairs = od_pairs()
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        dataset = Path(tmp)
        started = time.perf_counter()
        stats = build_graph(PBF, dataset / GRAPH_DIR)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        provider = GraphProvider.load(dataset)
        load_s = time.perf_counter() - started
        for origin, dest in pairs[:10]:  # warm-up: snapping trees are built lazily on first use
            timed(lambda o=origin, d=dest: provider.route(RouteQuery(o, d, emergency_radius_m=500)))  # type: ignore[misc]
        lines = [
            "## Graph provider: emergency routing (Heidelberg)",
            "",
            f"Graph build from `heidelberg.osm.pbf` (osmium + networkx + export): **{build_s:.1f} s** "
            f"({stats['nodes']} nodes, {stats['edges']} directed edges, {stats['pieces']} road pieces); "
            f"load {load_s * 1000:.0f} ms.",
            "",
            f"{len(pairs)} seeded OD pairs (seed {SEED}) uniform in lat {DENSE_BOX[0]} to {DENSE_BOX[1]}, "
            f"lon {DENSE_BOX[2]} to {DENSE_BOX[3]}; time per `GraphProvider.route` call, single thread, "
            "snapping and result building included.",
            "",
            *table(provider, pairs),
            "",
            *search_comparison(provider, pairs),
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
