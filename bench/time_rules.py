"""Routes at a time (issue 33): OSM's rules by time applied as each road is reached, on every
shared extract and on all five as one map, against the same routes without a time (the graph
provider) measured in the same run, and what evaluating the map's timed roads costs alone.

Pairs: seeded random road nodes of each map's main network (bench/maps.py), at least 500 m
apart, as in bench/dynamic_costs.py. Times: a Tuesday at 08:00 (Heidelberg's old town open
for deliveries) and at 23:00 (night speed limits), local to Central Europe; a truck at 20:00
(night truck bans). Timed in process: parsing and the provider's route call, warm.

Goal (ours, set with this first measurement): a route at a time ≤ 2x the same route without
one (p50), on every map.
"""

from __future__ import annotations

import os
import time
from datetime import datetime

import numpy as np

from bench.dynamic_costs import pairs_of, text, timed
from bench.maps import BenchMap, every_map

PAIRS = int(os.environ.get("BENCH_TIME_PAIRS", "40"))
MORNING, NIGHT, EVENING = "2026-12-01T08:00:00+01:00", "2026-12-01T23:00:00+01:00", "2026-12-01T20:00:00+01:00"


def measure(bench: BenchMap) -> dict[str, tuple[float, float, int]]:
    times: dict[str, list[float]] = {"plain": [], "08:00": [], "23:00": [], "truck 20:00": []}
    failed = dict.fromkeys(times, 0)
    for origin, destination in pairs_of(bench)[:PAIRS]:
        base = {"from": text(origin), "to": text(destination), "steps": "false", "provider": "graph"}
        cases = {
            "plain": base,
            "08:00": {**base, "departureTime": MORNING},
            "23:00": {**base, "departureTime": NIGHT},
            "truck 20:00": {**base, "vehicle": "truck", "departureTime": EVENING},
        }
        for name, params in cases.items():
            timed(bench, params)  # warm
            ms, ok = timed(bench, params)
            times[name].append(ms)
            failed[name] += 0 if ok else 1
    return {k: (float(np.percentile(v, 50)), float(np.percentile(v, 99)), failed[k]) for k, v in times.items() if v}


def state_ms(bench: BenchMap) -> tuple[int, float]:
    """The map's timed pieces, and the median time to evaluate all of them for a car at a time
    (what a request pays for its minute's first state; later ones in that minute reuse it)."""
    provider = bench.registry.sources.get("graph")
    engine = getattr(provider, "engine", None)
    if engine is None:
        return 0, 0.0
    timed_roads = engine.timed
    at = datetime.fromisoformat(MORNING)
    timed_roads.state("car", at, None)  # warm: the expressions parsed, the time zone found
    runs = []
    for _ in range(20):
        started = time.perf_counter()
        for piece in timed_roads.pieces.tolist():
            timed_roads.piece_at("car", piece, at, None)
        runs.append((time.perf_counter() - started) * 1000)
    return len(timed_roads), float(np.median(runs))


def run() -> str:
    rows = []
    for bench in every_map():
        m = measure(bench)
        pieces, evaluate = state_ms(bench)
        cells = " | ".join(f"{m[k][0]:.1f} / {m[k][1]:.1f}" for k in ("plain", "08:00", "23:00", "truck 20:00"))
        ratio = max(m["08:00"][0], m["23:00"][0]) / m["plain"][0]
        failed = " / ".join(str(m[k][2]) for k in ("08:00", "23:00", "truck 20:00"))
        rows.append(f"| {bench.name} | {pieces} | {evaluate:.2f} | {cells} | {ratio:.2f}x | {failed} |")
    return "\n".join(
        [
            "## Routes at a time: rules by time (issue 33)",
            "",
            f"Command: `python -m bench time_rules` (BENCH_TIME_PAIRS={PAIRS}). In process, parsing included, "
            "graph provider, car fastest unless a truck; warm (each case run once before it is timed).",
            "",
            "| map | timed pieces | evaluating them (ms, median) | plain p50 / p99 ms | 08:00 | 23:00 | truck 20:00 "
            "| at a time / plain (p50, worse of 08:00 and 23:00) | refused: 08:00 / 23:00 / truck |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Goal (ours, first measured here): a route at a time ≤ 2x the same route without one (p50).",
        ]
    )


if __name__ == "__main__":
    print(run())
