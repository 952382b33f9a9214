"""Speed limits by time as Valhalla's predicted speeds (issue 56, step 6): what writing them costs
the import, and what they cost a route at a time.

Import: Valhalla's tile build of each shared extract, all five merged, and 10x Heidelberg
(`bench/synthetic_map.py`), each in a fresh child process, once without the profiles step and
once with it (route_service.importing.valhalla_build.add_speed_profiles); wall and peak RSS of
the child's process tree, and the step's own seconds and peak.

Routes: on maps with profiled edges, seeded pairs of points on the ways with a rule (the worst
case: every route drives them), routed on the built tiles at a Tuesday 23:30 with the profiles
and with them switched off (`speed_types` without `predicted`), alternating, warm; p50 / p99
ms, and how much longer the route takes with the night limits.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import psutil
import valhalla

from bench.synthetic_map import SHARED_OSM, write_copies
from common.config import REPO_ROOT
from common.geo import LatLon, haversine_m
from route_service.importing import speed_profiles, valhalla_build
from route_service.importing.importer import merge_inputs
from route_service.valhalla_tiles import config

CITIES = ("heidelberg", "munich", "helsinki", "monaco", "andorra")
PAIRS = int(os.environ.get("BENCH_NIGHT_PAIRS", "40"))
TIMES = ("2026-12-01T23:30", "2026-12-01T12:00")  # a Tuesday, local time
NO_PREDICTED = {"auto": {"speed_types": ["freeflow", "constrained", "current"]}}


def peak_rss(work: Callable[[], Any], pid: int | None = None) -> tuple[Any, int]:
    """`work`'s result and the peak RSS of process `pid` (this one) and its children meanwhile."""
    peak, done = [0], threading.Event()
    root = psutil.Process(pid)

    def watch() -> None:
        while not done.is_set():
            total = 0
            for process in [root, *root.children(recursive=True)]:
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    continue
            peak[0] = max(peak[0], total)
            done.wait(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return work(), peak[0]
    finally:
        done.set()
        watcher.join()


def child(pbf: str, out: str, profiles: str) -> None:
    """In a fresh process: one tile build, its info as JSON on stdout."""
    step = valhalla_build.add_speed_profiles
    step_peak = [0]

    def measured(*args: Any) -> dict[str, Any]:
        info, step_peak[0] = peak_rss(lambda: step(*args))
        return dict(info)

    valhalla_build.add_speed_profiles = measured if profiles == "with" else (lambda *_args: {})  # type: ignore[assignment]
    info = valhalla_build.build_tiles(Path(pbf), Path(out), 2)
    print(orjson.dumps({**info, "profiles_peak": step_peak[0]}).decode())


def build(pbf: Path, out: Path, profiles: str) -> tuple[dict[str, Any], float, int]:
    command = [
        sys.executable,
        "-c",
        f"from bench.night_speeds import child; child({str(pbf)!r}, {str(out)!r}, {profiles!r})",
    ]
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT, env=env)
    stdout, peak = peak_rss(lambda: process.communicate()[0], process.pid)
    if process.returncode != 0:
        raise RuntimeError(f"the tile build of {pbf.name} failed")
    return orjson.loads(stdout.strip().splitlines()[-1]), time.perf_counter() - started, peak


def pairs_on(pbf: Path) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Seeded pairs of points on the ways with a rule, under 15 km apart (one city, one copy)."""
    points = [way.midpoints[0] for way in speed_profiles.conditional_ways(pbf)]
    rng = random.Random(56)
    pairs = [(a, b) for a in points for b in points if a != b and haversine_m(LatLon(*a), LatLon(*b)) < 15_000]
    return rng.sample(pairs, min(PAIRS, len(pairs)))


def timed(actor: Any, request: dict[str, Any]) -> tuple[float, float] | None:
    """ms and the route's duration (s), warm; None where Valhalla finds no route."""
    body = orjson.dumps(request).decode()
    try:
        actor.route(body)  # warm
    except RuntimeError:
        return None
    started = time.perf_counter()
    answer = orjson.loads(actor.route(body))
    return (time.perf_counter() - started) * 1000, float(answer["trip"]["summary"]["time"])


def route_cells(actor: Any, pbf: Path) -> list[str]:
    """Per time: p50 / p99 ms with the profiles and without; duration with / without (median / max)."""
    cells = []
    for at in TIMES:
        ms: dict[bool, list[float]] = {True: [], False: []}
        ratios = []
        for origin, destination in pairs_on(pbf):
            request = {
                "locations": [{"lat": p[0], "lon": p[1]} for p in (origin, destination)],
                "costing": "auto", "date_time": {"type": 1, "value": at}, "directions_type": "none",
            }  # fmt: skip
            on, off = timed(actor, request), timed(actor, {**request, "costing_options": NO_PREDICTED})
            if on is None or off is None or off[1] == 0:
                continue
            ms[True].append(on[0])
            ms[False].append(off[0])
            ratios.append(on[1] / off[1])
        if not ratios:
            return ["0", "-", "-", "-", "-"]
        p = {k: f"{statistics.median(v):.1f} / {sorted(v)[int(0.99 * (len(v) - 1))]:.1f}" for k, v in ms.items()}
        cells += [p[True], p[False], f"{statistics.median(ratios):.2f}x / {max(ratios):.2f}x"]
    return [str(len(ratios)), cells[0], cells[1], cells[2], cells[5]]


def maps(tmp: Path) -> list[tuple[str, Path]]:
    found = [(city, SHARED_OSM / f"{city}.osm.pbf") for city in CITIES]
    merged, ten = tmp / "all.osm.pbf", tmp / "heidelberg-10x.osm.pbf"
    merge_inputs([path for _, path in found], merged)
    write_copies([SHARED_OSM / "heidelberg.osm.pbf"], 10, ten)
    return [*found, ("all five", merged), ("heidelberg 10x", ten)]


def rows() -> tuple[list[str], list[str]]:
    imports, routes = [], []
    with tempfile.TemporaryDirectory(prefix="bench-night-") as folder:
        tmp = Path(folder)
        for name, pbf in maps(tmp):
            _, wall_without, peak_without = build(pbf, tmp / f"{name} without", "without")
            info, wall_with, peak_with = build(pbf, tmp / name, "with")
            imports.append(
                f"| {name} | {info['conditional_speed_ways']} / {info['ways_applied']} / {info['profiled_edges']} "
                f"| {wall_without:.1f} s | {wall_with:.1f} s | {info['profiles_seconds']:.2f} s "
                f"| {peak_without / 1e6:.0f} MB | {peak_with / 1e6:.0f} MB | {info['profiles_peak'] / 1e6:.0f} MB |"
            )
            if info["profiled_edges"]:
                actor = valhalla.Actor(config(tmp / name))
                routes.append(f"| {name} | {' | '.join(route_cells(actor, pbf))} |")
                del actor
            else:
                routes.append(f"| {name} | 0 | no profiled edge: nothing changes | | | |")
    return imports, routes


def run() -> str:
    imports, routes = rows()
    return "\n".join(
        [
            "## Night speed limits: `maxspeed:conditional` as Valhalla's predicted speeds (issue 56)",
            "",
            "Import: Valhalla's tile build (2 threads) in a fresh child process without and with the profiles step; "
            "peak RSS of the child's process tree; the step's own time and peak (the importer's process and the "
            "`valhalla_add_predicted_traffic` child). Ways: with the tag / with a time rule below their speed / "
            "directed edges profiled.",
            "",
            "| map | ways / applied / edges | build without | build with | profiles step | peak without "
            "| peak with | step's peak |",
            "|---|---|---|---|---|---|---|---|",
            *imports,
            "",
            f"Routes between seeded points on the ways with a rule, under 15 km apart (BENCH_NIGHT_PAIRS={PAIRS}), "
            "a Tuesday at 23:30 and at 12:00 local time, in process, warm; p50 / p99 ms at 23:30 with the profiles "
            "and with them off (`speed_types` without `predicted`, the same time-dependent search); the route's "
            "duration with / without them (median / max) at each time.",
            "",
            "| map | pairs | 23:30 with profiles | 23:30 profiles off | duration 23:30 with / without "
            "| duration 12:00 with / without |",
            "|---|---|---|---|---|---|",
            *routes,
        ]
    )


if __name__ == "__main__":
    print(run())
