"""Routes at a time (issues 33 and 56): OSM's rules by time applied as each road is reached, on
every shared extract and on all five as one map. Without a provider named, a route at a time
near a road with rules by time is Valhalla's (its `date_time`, the rules met from the map's
timed index); elsewhere the time is moot and OSRM answers. Measured beside the same routes
without a time.

Pairs: seeded random road nodes of each map's main network (bench/maps.py), at least 500 m
apart, as in bench/dynamic_costs.py. Times: a Tuesday at 08:00 (Heidelberg's old town open
for deliveries) and at 23:00 (night speed limits), local to Central Europe; a truck at 20:00
(night truck bans). Timed in process: parsing and the provider's route call, warm (no gateway:
it adds about 3.7 ms at p50 to a route, "Route over HTTP").

Goal (issue 56): a route at a time p50 ≤ 15 ms through the gateway, so ≤ 11 ms here.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from bench.dynamic_costs import pairs_of, text, timed
from bench.maps import BenchMap, every_map
from route_service.parsing import parse_route

PAIRS = int(os.environ.get("BENCH_TIME_PAIRS", "40"))
MORNING, NIGHT, EVENING = "2026-12-01T08:00:00+01:00", "2026-12-01T23:00:00+01:00", "2026-12-01T20:00:00+01:00"
CASES = ("plain", "08:00", "23:00", "truck 20:00")
GATEWAY_MS = 3.7  # gateway p50 over the route service alone at 8 connections (RESULTS.md, "Route over HTTP")


def cases_of(origin: str, destination: str) -> dict[str, dict[str, str]]:
    base = {"from": origin, "to": destination, "steps": "false"}
    return {
        "plain": base,
        "08:00": {**base, "departureTime": MORNING},
        "23:00": {**base, "departureTime": NIGHT},
        "truck 20:00": {**base, "vehicle": "truck", "departureTime": EVENING},
    }


def measure(bench: BenchMap) -> tuple[dict[str, tuple[float, float, int]], Counter[str]]:
    """Each case's p50 and p99 (ms) and refusals; which providers answered the timed cases."""
    times: dict[str, list[float]] = {name: [] for name in CASES}
    failed = dict.fromkeys(times, 0)
    answered: Counter[str] = Counter()
    for origin, destination in pairs_of(bench)[:PAIRS]:
        for name, params in cases_of(text(origin), text(destination)).items():
            timed(bench, params)  # warm
            ms, ok = timed(bench, params)
            times[name].append(ms)
            failed[name] += 0 if ok else 1
            if name in ("08:00", "23:00", "truck 20:00"):
                answered[parse_route(params, bench.registry).provider] += 1
    return {k: (float(np.percentile(v, 50)), float(np.percentile(v, 99)), failed[k]) for k, v in times.items() if v}, answered


def timed_ways(bench: BenchMap) -> int:
    index = getattr(bench.registry.sources.get("valhalla"), "timed", None)
    return len(index) if index is not None else 0


def run() -> str:
    rows = []
    for bench in every_map():
        m, answered = measure(bench)
        cells = " | ".join(f"{m[k][0]:.1f} / {m[k][1]:.1f}" if k in m else "-" for k in CASES)
        worst = max(m[k][0] for k in ("08:00", "23:00", "truck 20:00"))
        failed = " / ".join(str(m[k][2]) for k in ("08:00", "23:00", "truck 20:00"))
        providers = ", ".join(f"{name} {count}" for name, count in answered.most_common())
        rows.append(f"| {bench.name} | {timed_ways(bench)} | {cells} | {worst:.1f} | {providers} | {failed} |")
    return "\n".join(
        [
            "## Routes at a time: rules by time (issues 33 and 56)",
            "",
            f"Command: `python -m bench time_rules` (BENCH_TIME_PAIRS={PAIRS}). In process, parsing included, "
            "no provider named (Valhalla answers a route at a time near a timed road, OSRM elsewhere); "
            "car fastest unless a truck; warm (each case run once before it is timed).",
            "",
            "| map | timed ways | plain p50 / p99 ms | 08:00 | 23:00 | truck 20:00 "
            "| worst timed p50 | answered by (timed cases) | refused: 08:00 / 23:00 / truck |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Goal (issue 56): a route at a time p50 ≤ 15 ms through the gateway, which adds about {GATEWAY_MS} ms "
            "at p50 (\"Route over HTTP\"): ≤ 11 ms here.",
        ]
    )


if __name__ == "__main__":
    print(run())
