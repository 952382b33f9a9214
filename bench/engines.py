"""One road graph for every vehicle (issue 30): `valhalla` on every shared extract and on all of
them as one map, and Valhalla's tiles at 1x, 10x and 30x (our own graph's column went with it,
issue 56 item 2).

Per request, in process, on the same seeded pairs of main-network
points at least 500 m apart (bench/maps.py): a 5-minute car isochrone, a car route around an
80 m box across the middle of its plain route, a truck with dimensions (4.0 m, 2.55 m, 12 m,
18 t, 10 t axle load), a pedestrian, a bicycle and a car's shortest route. Isochrone agreement: the 10-minute
area judged like `tests/route_service/test_isochrone.py` against the routes OSRM answers
(recall: of the points OSRM's car reaches in time, the share inside; precision: of the area,
the share near a road reached in 10 % more), and the recall of road points alone
(`on_road_recall`).

Clock: Valhalla's own durations of car and truck fastest routes against OSRM's on the same pairs,
which OSRM_DURATION_RATIO and OSRM_PACE (route_service/providers/valhalla.py) rest on.

Tiles: the synthetic maps of `bench/synthetic_map.py` (Heidelberg, 10 and 30 copies), each built
alone with 2 threads; wall time, the tar's size against the PBF, the build's peak RSS (its whole
process tree, sampled every 0.2 s).

`python -m bench engines` writes the section; BENCH_ENGINE_PAIRS (default 40) sets the pairs.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import psutil
import shapely
import shapely.geometry

from bench.isochrone import map_quality, osrm_seconds
from bench.maps import SHARED_OSM, BenchMap, every_map
from bench.scale import percentile
from bench.synthetic_map import write_copies
from common.areas import square_around
from common.errors import ApiError, NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from route_service import valhalla_tiles
from route_service.importing import valhalla_build
from route_service.model import IsochroneQuery
from route_service.parsing import parse_isochrone, parse_route
from route_service.providers.valhalla import OSRM_DURATION_RATIO, ValhallaProvider
from route_service.providers.valhalla_areas import OSRM_PACE

SEED = 20261126
PAIRS = int(os.environ.get("BENCH_ENGINE_PAIRS", "40"))
PROVIDERS = ("valhalla",)
TRUCK = {"vehicle": "truck", "height": "4.0", "width": "2.55", "length": "12", "weight": "18", "axleLoad": "10"}
OPERATIONS = ("isochrone 5 min", "avoid area", "truck dimensions", "pedestrian", "bicycle", "car shortest")
CLOCK_VEHICLES = ("car", "truck")
SCALES = (1, 10, 30)


def text(point: LatLon) -> str:
    return f"{point.lat},{point.lon}"


def timed_ms(call: Callable[[], object]) -> float:
    """Milliseconds of one call, parsing included; a routing refusal (no route, no road near a
    point) is timed too, a refused request (a 400: a vehicle the map does not serve) stops the
    bench: it timed those as 0.0 ms answers once."""
    started = time.perf_counter()
    with contextlib.suppress(NoRouteFound, PointNotRoutable):
        call()
    return (time.perf_counter() - started) * 1000


def calls(bench: BenchMap, a: LatLon, b: LatLon, provider: str) -> dict[str, Callable[[], object]]:
    ends = {"from": text(a), "to": text(b), "steps": "false", "provider": provider}
    plain = parse_route({**ends, "provider": "valhalla"}, bench.registry)
    geometry = plain.plugin(plain.query).routes[0].geometry
    lon, lat = geometry[len(geometry) // 2]
    area = orjson.dumps(square_around(LatLon(float(lat), float(lon)), 40.0)).decode()

    def route(**extra: str) -> Callable[[], object]:
        def call() -> object:
            parsed = parse_route({**ends, **extra}, bench.registry)
            return parsed.plugin(parsed.query)

        return call

    def isochrone() -> object:
        parsed = parse_isochrone({"point": text(a), "time": "300", "provider": provider}, bench.registry)
        return parsed.plugin(parsed.query)

    return {
        "isochrone 5 min": isochrone,
        "avoid area": route(avoid=area),
        "truck dimensions": route(**TRUCK),
        "pedestrian": route(vehicle="pedestrian"),
        "bicycle": route(vehicle="bicycle"),
        "car shortest": route(type="shortest"),
    }


def per_request(bench: BenchMap) -> dict[str, dict[str, list[float]]]:
    points = bench.road_points(4 * PAIRS, SEED)
    pairs = [(a, b) for a, b in zip(points[::2], points[1::2], strict=False) if haversine_m(a, b) >= 500][:PAIRS]
    times: dict[str, dict[str, list[float]]] = {p: {op: [] for op in OPERATIONS} for p in PROVIDERS}
    for a, b in pairs:
        try:
            prepared = {p: calls(bench, a, b, p) for p in PROVIDERS}
        except ApiError:
            continue  # no plain route between them: no box to put on it
        for operation in OPERATIONS:
            for provider in PROVIDERS:
                timed_ms(prepared[provider][operation])  # warm
                times[provider][operation].append(timed_ms(prepared[provider][operation]))
    return times


def p50_p99(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {percentile(values, 99):.1f}" if values else "-"


def request_rows() -> list[str]:
    rows = []
    for bench in every_map():
        times = per_request(bench)
        for operation in OPERATIONS:
            rows.append(f"| {bench.name} | {operation} | {p50_p99(times['valhalla'][operation])} |")
        for provider in PROVIDERS:
            quality = map_quality(bench, centres=3, samples=100, seed=5, limit_s=600, provider=provider)
            inside, reached = on_road_recall(bench, provider)
            rows.append(
                f"| {bench.name} | isochrone 10 min agreement, {provider} | recall {quality.recall:.0%} "
                f"({quality.reachable} points), on the roads {inside / max(1, reached):.0%} ({reached}) "
                f"| precision {quality.precision:.0%} |"
            )
    return rows


def on_road_recall(bench: BenchMap, provider: str, limit_s: float = 600.0) -> tuple[int, int]:
    """(inside, reached): of main-network road points OSRM's car reaches from 3 centres within
    `limit_s`, how many the provider's area holds. The recall above samples points anywhere and
    counts those OSRM snaps to a road up to 1 km away, which rewards an area padded by the whole
    snapping radius (issue 32 reported such an area reaching 1 km over the sea)."""
    points = bench.road_points(400, SEED + 1)
    inside = reached = 0
    for centre in bench.road_points(3, SEED + 2):
        seconds = osrm_seconds(bench, centre, points)
        plugin = bench.registry.providers[provider].isochrone
        assert plugin is not None
        area = shapely.geometry.shape(plugin(IsochroneQuery(centre, (limit_s,))).areas[-1])
        for point, took in zip(points, seconds, strict=True):
            if took is not None and took <= limit_s:
                reached += 1
                inside += bool(shapely.contains_xy(area, point.lon, point.lat))
    return inside, reached


# ---------------------------------------------------------------- clock


def clock_rows() -> list[str]:
    """Per map and vehicle: Valhalla's unscaled duration / OSRM's on the same pairs (p10, median,
    p90), the median after OSRM_DURATION_RATIO, and the distances' median ratio (the same roads?)."""
    rows = []
    for bench in every_map():
        unscaled = ValhallaProvider.load(bench.dataset.path)
        points = bench.road_points(4 * PAIRS, SEED + 3)
        pairs = [(a, b) for a, b in zip(points[::2], points[1::2], strict=False) if haversine_m(a, b) >= 500][:PAIRS]
        for vehicle in CLOCK_VEHICLES:
            times, lengths = [], []
            for a, b in pairs:
                ends = {"from": text(a), "to": text(b), "steps": "false", "vehicle": vehicle}
                try:
                    osrm = parse_route({**ends, "provider": "osrm"}, bench.registry)
                    ours = osrm.plugin(osrm.query).routes[0]
                    theirs = unscaled.route(parse_route({**ends, "provider": "valhalla"}, bench.registry).query).routes[0]
                except (NoRouteFound, PointNotRoutable):
                    continue
                times.append(theirs.duration_s / ours.duration_s)
                lengths.append(theirs.distance_m / ours.distance_m)
            if not times:
                continue
            rows.append(
                f"| {bench.name} | {vehicle} | {len(times)} | {percentile(times, 10):.2f} | "
                f"{statistics.median(times):.2f} | {percentile(times, 90):.2f} | "
                f"{statistics.median(times) / OSRM_DURATION_RATIO:.2f} | {statistics.median(lengths):.3f} |"
            )
    return rows


# ---------------------------------------------------------------- tiles


def peak_rss_while(work: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """`work`'s result and the peak RSS of this process's children while it ran."""
    peak, done = [0], threading.Event()

    def watch() -> None:
        me = psutil.Process()
        while not done.is_set():
            total = 0
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    continue
            peak[0] = max(peak[0], total)
            done.wait(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return work(), peak[0]
    finally:
        done.set()
        watcher.join()


def tile_rows() -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        for copies in SCALES:
            pbf = Path(tmp) / f"heidelberg-{copies}x.osm.pbf"
            write_copies([SHARED_OSM / "heidelberg.osm.pbf"], copies, pbf)
            out = Path(tmp) / f"tiles-{copies}x"
            started = time.perf_counter()
            info, peak = peak_rss_while(partial(valhalla_build.build_tiles, pbf, out, 2))
            wall = time.perf_counter() - started
            size, tar = pbf.stat().st_size, int(info["tar_bytes"])
            rows.append(
                f"| {copies}x | {size / 1e6:.1f} MB | {wall:.1f} s | {tar / 1e6:.1f} MB ({tar / size:.1f}x the PBF) "
                f"| {peak / 1e6:.0f} MB |"
            )
    return rows


def run() -> str:
    requests, clock, tiles = request_rows(), clock_rows(), tile_rows()
    return "\n".join(
        [
            "## One graph for every vehicle: Valhalla (issue 30)",
            "",
            f"{PAIRS} pairs a map (BENCH_ENGINE_PAIRS). In process, parsing included; p50 / p99 ms.",
            "",
            "| map | operation | valhalla |",
            "|---|---|---|",
            *requests,
            "",
            f"Valhalla's clock: its own duration of a fastest route / OSRM's on the same pairs (OSRM answers car "
            f"and truck fastest routes). Valhalla's durations of those vehicles are divided by OSRM_DURATION_RATIO = "
            f"{OSRM_DURATION_RATIO} (routes, traces); its isochrones of t seconds reach OSRM_PACE x t = {OSRM_PACE} t.",
            "",
            "| map | vehicle | pairs | p10 | median | p90 | median / OSRM_DURATION_RATIO | distance ratio (median) |",
            "|---|---|---|---|---|---|---|---|",
            *clock,
            "",
            f"Valhalla's tiles, built alone ({valhalla_tiles.version()}, 2 threads), on the synthetic maps of "
            "`bench/synthetic_map.py`:",
            "",
            "| map | PBF | build wall | tiles.tar | peak RSS, build's process tree |",
            "|---|---|---|---|---|",
            *tiles,
            "",
            "Goals (issue 30, for the whole routing import once Valhalla replaces what it can): data on disk ≤ 6x "
            "the PBF at every size; peak RSS of the import's tree ≤ 1.5 GB at 30x.",
        ]
    )


if __name__ == "__main__":
    print(run())
