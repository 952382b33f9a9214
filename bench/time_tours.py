"""Matrices and tours at a time (issue 33): what OSM's rules by time cost the road matrix and
the whole stop tour.

- Matrix: 100 x 100 seeded road points of every shared extract and of all five as one map,
  durations only (what the optimizer asks), in process and warm: OSRM's table (the default
  without a time), Valhalla's without a time, and Valhalla's at a Tuesday 08:00
  (`departureTime`, with `whenOpen` as the fleet planner sends it).
- Tour: POST /v1/optimize/stops through the gateway (real processes, bench.optimize's city
  stack) on the seeded 100-stop round trip of Heidelberg and Munich (the extracts with timed
  roads), without `startTime` and with `startTime` (rules by time: Valhalla's matrix at the
  time, each leg routed when it leaves), median and largest of the repeats.

Goal (the issue's): a 100-stop tour with startTime within the tour's wall-time goal, 1 s.
Since 2026-11-28 a tour at a time searches less than one without (twice its matrix's time
less, at least half the default: optimize_service.stops.planner.search_seconds).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from bench.maps import BenchMap, every_map
from bench.optimize import city_stack
from bench.optimize_instances import ROUND_TRIP, instance
from route_service.parsing import parse_matrix

POINTS = int(os.environ.get("BENCH_TIME_MATRIX_POINTS", "100"))
REPEATS = int(os.environ.get("BENCH_TIME_TOUR_REPEATS", "5"))
CITIES = os.environ.get("BENCH_TIME_TOUR_CITIES", "heidelberg,munich").split(",")
START = "2026-12-01T08:00:00+01:00"
TOUR_GOAL_S = 1.0


def matrix_seconds(bench: BenchMap, extra: dict[str, object]) -> list[float]:
    points = [{"lat": p.lat, "lon": p.lon} for p in bench.road_points(POINTS, 7)]
    body = {"sources": points, "destinations": points, "annotations": ["duration"], **extra}
    runs = []
    for _ in range(4):  # the first warms
        started = time.perf_counter()
        parsed = parse_matrix(body, bench.registry)
        parsed.plugin(parsed.query)
        runs.append(time.perf_counter() - started)
    return runs[1:]


def matrix_rows() -> list[str]:
    rows = []
    for bench in every_map():
        cases: dict[str, dict[str, object]] = {
            "osrm": {},
            "valhalla": {"provider": "valhalla"},
            "valhalla at 08:00": {"departureTime": START, "whenOpen": True},
        }
        medians = {name: statistics.median(matrix_seconds(bench, extra)) for name, extra in cases.items()}
        ratio = medians["valhalla at 08:00"] / medians["valhalla"]
        rows.append(f"| {bench.name} | " + " | ".join(f"{v:.2f}" for v in medians.values()) + f" | {ratio:.2f}x |")
    return rows


def tour_rows() -> list[str]:
    rows = []
    for city in CITIES:
        inst = instance(city.strip(), 100, ROUND_TRIP)
        with tempfile.TemporaryDirectory() as data, city_stack(city.strip(), Path(data)) as client:
            for name, query in (("no startTime", ""), ("startTime 08:00", f"?startTime={quote(START)}")):
                client.optimize(inst, query)  # warm
                walls = []
                for _ in range(REPEATS):
                    answer = client.optimize(inst, query)
                    assert answer.status == 200, (answer.status, answer.body)
                    walls.append(answer.wall_s)
                median, worst = statistics.median(walls), max(walls)
                ok = "✓" if worst <= TOUR_GOAL_S else "✗"
                provider = answer.body.get("provider", "")
                rows.append(f"| {city} | {name} | {provider} | {median:.2f} | {worst:.2f} | {ok} |")
    return rows


def run() -> str:
    return "\n".join(
        [
            "## Matrices and tours at a time: rules by time (issue 33)",
            "",
            f"Command: `python -m bench time_tours` (BENCH_TIME_MATRIX_POINTS={POINTS}, "
            f"BENCH_TIME_TOUR_REPEATS={REPEATS}, BENCH_TIME_TOUR_CITIES={','.join(CITIES)}).",
            "",
            f"Matrix {POINTS} x {POINTS}, durations only, in process, warm; median of 3 runs in seconds.",
            "",
            "| map | OSRM | Valhalla | Valhalla at 08:00 | at a time / Valhalla |",
            "|---|---|---|---|---|",
            *matrix_rows(),
            "",
            f"POST /v1/optimize/stops, seeded 100-stop round trip, through the gateway; {REPEATS} runs after one warm-up. "
            "With startTime the search is shorter (twice the matrix's time less than the default, at least half of it: "
            "`planner.search_seconds`); the goal stays 1 s.",
            "",
            "| city | request | provider | wall median (s) | wall max (s) | max ≤ 1 s |",
            "|---|---|---|---|---|---|",
            *tour_rows(),
        ]
    )


if __name__ == "__main__":
    print(run())
