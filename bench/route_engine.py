"""Benchmark of the OSRM provider on Heidelberg: import time and peak memory (MLD and CH),
and in-process route latency for 1000 seeded OD pairs in the dense city.

`run()` returns a Markdown section; `python -m bench.route_engine` prints it.
"""

from __future__ import annotations

import resource
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from common.config import REPO_ROOT
from common.errors import ApiError
from common.geo import LatLon
from route_service.importing.importer import ImportResult, Progress, import_maps
from route_service.model import RouteQuery
from route_service.providers.osrm_provider import OsrmProvider

PBF = REPO_ROOT.parent / "shared" / "osm" / "heidelberg.osm.pbf"
DENSE_BOX = (49.37, 49.43, 8.62, 8.75)  # lat min, lat max, lon min, lon max
PAIRS = 1000
SEED = 20240601
CASES = [  # label, vehicle, route type, alternatives, steps
    ("car fastest, no steps", "car", "fastest", 0, False),
    ("car fastest, steps", "car", "fastest", 0, True),
    ("car fastest, steps, 2 alternatives", "car", "fastest", 2, True),
    ("car shortest, steps", "car", "shortest", 0, True),
    ("truck fastest, steps", "truck", "fastest", 0, True),
    ("bicycle fastest, steps", "bicycle", "fastest", 0, True),
    ("pedestrian fastest, steps", "pedestrian", "fastest", 0, True),
]


def od_pairs(count: int = PAIRS, seed: int = SEED) -> list[tuple[LatLon, LatLon]]:
    rng = np.random.default_rng(seed)
    lat0, lat1, lon0, lon1 = DENSE_BOX
    points = np.column_stack([rng.uniform(lat0, lat1, 2 * count), rng.uniform(lon0, lon1, 2 * count)])
    return [(LatLon(*points[2 * i]), LatLon(*points[2 * i + 1])) for i in range(count)]


def children_peak_mb() -> float:
    # ru_maxrss is in KiB on Linux: the largest child process so far (osrm-extract etc.).
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def timed_import(out: Path, algorithm: str) -> tuple[ImportResult, float]:
    started = time.perf_counter()
    result = import_maps([PBF], out, algorithm=algorithm, progress=Progress(emit=lambda _line: None))
    return result, time.perf_counter() - started


def route_times(provider: OsrmProvider, pairs: list[tuple[LatLon, LatLon]], vehicle: str, route_type: str,
                alternatives: int, steps: bool) -> tuple[list[float], int, int]:  # fmt: skip
    times, failures, routes = [], 0, 0
    for origin, dest in pairs:
        query = RouteQuery(origin, dest, vehicle, route_type, alternatives, 0, steps)
        started = time.perf_counter()
        try:
            routes += len(provider.route(query).routes)
        except ApiError:
            failures += 1
        times.append((time.perf_counter() - started) * 1000)
    return times, failures, routes


def thread_speedup(provider: OsrmProvider, pairs: list[tuple[LatLon, LatLon]]) -> float:
    """Throughput with 2 threads / with 1: about 1.0 when the binding holds the GIL."""

    def work(chunk: list[tuple[LatLon, LatLon]]) -> None:
        route_times(provider, chunk, "car", "fastest", 0, False)

    half = len(pairs) // 2
    one = timed_seconds(lambda: work(pairs))
    with ThreadPoolExecutor(2) as pool:
        two = timed_seconds(lambda: list(pool.map(work, [pairs[:half], pairs[half:]])))
    return one / two


def gil_share(provider: OsrmProvider, pairs: list[tuple[LatLon, LatLon]]) -> float:
    """How fast a pure-Python thread counts while OSRM works, relative to when it is idle:
    near 0 means the GIL is held during the call."""
    import osrm

    params = osrm.TableParameters(coordinates=[(p.lon, p.lat) for pair in pairs[:200] for p in pair])
    count, stop = [0], threading.Event()

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    time.sleep(0.2)
    idle_start = count[0]
    time.sleep(0.2)
    idle_rate = (count[0] - idle_start) / 0.2
    busy_start = count[0]
    busy = timed_seconds(lambda: provider._engine("car-fastest").Table(params))
    busy_rate = (count[0] - busy_start) / busy
    stop.set()
    thread.join()
    return busy_rate / idle_rate if idle_rate else 0.0


def timed_seconds(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def import_section(out: Path) -> tuple[list[str], ImportResult]:
    lines = ["| algorithm | import (8 profiles + Valhalla) | disk | peak RSS of a tool |", "|---|---|---|---|"]
    result: ImportResult | None = None
    for algorithm in ("mld+ch", "mld", "ch"):  # the default first: the latencies below use it
        imported, seconds = timed_import(out / algorithm, algorithm)
        disk = imported.record["disk_bytes"] / 1e6
        lines.append(f"| {algorithm.upper()} | {seconds:.1f} s | {disk:.0f} MB | {children_peak_mb():.0f} MB |")
        result = result or imported
    assert result is not None
    slowest = max(result.record["profiles"].items(), key=lambda item: item[1]["seconds"])
    lines.append(f"\nSlowest profile of the default (MLD+CH: car and truck contracted too): {slowest[0]} "
                 f"({slowest[1]['seconds']:.1f} s). CH contraction of the bicycle/pedestrian graphs is what "
                 "makes CH slow.")  # fmt: skip
    return lines, result


def latency_section(provider: OsrmProvider, pairs: list[tuple[LatLon, LatLon]]) -> list[str]:
    lines = ["| case | p50 ms | p99 ms | mean ms | routes | failures |", "|---|---|---|---|---|---|"]
    route_times(provider, pairs[:50], "car", "fastest", 0, True)  # warm the page cache
    for label, vehicle, route_type, alternatives, steps in CASES:
        times, failures, routes = route_times(provider, pairs, vehicle, route_type, alternatives, steps)
        p50, p99 = np.percentile(times, [50, 99])
        lines.append(f"| {label} | {p50:.2f} | {p99:.2f} | {np.mean(times):.2f} | {routes} | {failures} |")
    return lines


def run() -> str:
    pairs = od_pairs()
    with tempfile.TemporaryDirectory(prefix="bench-route-engine-") as tmp:
        import_lines, imported = import_section(Path(tmp))
        provider = OsrmProvider.load(imported.path, imported.record)
        load_s = timed_seconds(provider.preload)
        latency = latency_section(provider, pairs)
        speedup = thread_speedup(provider, pairs[:400])
        share = gil_share(provider, pairs)
    return "\n".join(
        [
            "## Route engine (OSRM, in-process)",
            "",
            f"Heidelberg extract ({PBF.stat().st_size / 1e6:.1f} MB PBF), imported with "
            "`route_service.importing.importer` into a temporary directory.",
            "",
            *import_lines,
            "",
            f"Opening the 8 MLD datasets: {load_s * 1000:.0f} ms. Route latency of `OsrmProvider.route` "
            f"(engine call + conversion) for {PAIRS} OD pairs drawn uniformly (seed {SEED}) in the dense "
            "box lat 49.37 to 49.43, lon 8.62 to 8.75; failures are points with no road within the snapping radius.",
            "",
            *latency,
            "",
            f"GIL: 2 threads run {speedup:.2f} times the throughput of 1; a Python thread runs at "
            f"{share:.0%} of its idle speed during an OSRM table call, so the binding holds the GIL "
            "and the service scales with processes, not threads.",
        ]
    )


if __name__ == "__main__":
    print(run())
