"""Emergency routes (issue 56): Valhalla's (providers.valhalla_emergency), on every shared
extract and on all of them as one map (our road graph's column went with it, issue 56 item 2).

Per map, PAIRS pairs of main-network road points (bench.maps, seeded); for each radius the time
of one provider `route` call (single thread, snapping and result building included), p50 and
p99, and how many routes use a relaxation. Two Valhalla designs are timed: the one kept (a
relaxed route walked edge by edge, offending edges excluded, the normal route for comparison)
and three legs (relaxed legs inside the two discs joined by a normal route between the points
where the normal route crosses the discs' borders), timed without its verification, i.e. at
least what it would cost.

`run()` returns a Markdown section; `python -m bench route_emergency` stamps it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from bench.maps import EVERY_MAP, bench_map
from common.errors import ApiError
from common.geo import LatLon, haversine_m_arrays
from route_service.model import RouteQuery, RouteResult
from route_service.providers import valhalla, valhalla_emergency
from route_service.providers.valhalla import ValhallaProvider
from route_service.providers.valhalla_emergency import RELAXED, ROUNDS

PAIRS = 100
SEED = 56
RADII = (300, 2000)


def timed(call: Callable[[], RouteResult]) -> tuple[float, RouteResult | None]:
    started = time.perf_counter()
    try:
        result: RouteResult | None = call()
    except ApiError:
        result = None
    return (time.perf_counter() - started) * 1000, result


def measure(route: Callable[[RouteQuery], RouteResult], queries: list[RouteQuery]) -> tuple[float, float, int, int]:
    """p50 ms, p99 ms, routes using a relaxation, errors."""
    times, relaxed, errors = [], 0, 0
    for query in queries:
        ms, result = timed(lambda q=query: route(q))  # type: ignore[misc]
        times.append(ms)
        if result is None:
            errors += 1
        elif result.routes[0].emergency_segments:
            relaxed += 1
    return float(np.percentile(times, 50)), float(np.percentile(times, 99)), relaxed, errors


def three_legs(provider: ValhallaProvider, query: RouteQuery) -> RouteResult:
    """Design (2), its calls only: the normal route, then relaxed legs from the start to where
    that route leaves the start's disc and from where it enters the destination's disc, and the
    normal route between those two points."""
    normal = provider.route(replace(query, emergency_radius_m=0))
    geometry = normal.routes[0].geometry
    lon, lat = geometry[:, 0], geometry[:, 1]
    radius = float(query.emergency_radius_m)
    out = np.flatnonzero(haversine_m_arrays(lat, lon, query.origin.lat, query.origin.lon) > radius)
    inside = np.flatnonzero(haversine_m_arrays(lat, lon, query.destination.lat, query.destination.lon) <= radius)
    if len(out) == 0 or len(inside) == 0 or inside[0] <= out[0]:
        return relaxed(provider, query)
    first = LatLon(float(lat[out[0]]), float(lon[out[0]]))
    last = LatLon(float(lat[inside[0]]), float(lon[inside[0]]))
    relaxed(provider, replace(query, destination=first))
    provider.route(replace(query, origin=first, destination=last, emergency_radius_m=0))
    return relaxed(provider, replace(query, origin=last))


def relaxed(provider: ValhallaProvider, query: RouteQuery) -> RouteResult:
    request = provider.route_request(replace(query, emergency_radius_m=0))
    request["costing_options"][request["costing"]].update(RELAXED)
    return provider.route_result(query, provider.call("route", request, query.restrictions))


def counted_walks() -> Callable[[], list[int]]:
    """Counts the edge walks (relaxed routes) of each Valhalla emergency route from here on:
    more than one means an offending edge was excluded and the route asked again."""
    counts: list[int] = []
    walk = valhalla_emergency.walk

    def counting(*args: Any) -> Any:
        counts[-1] += 1
        return walk(*args)

    def route(provider: valhalla_emergency.Engine, query: RouteQuery) -> RouteResult:
        counts.append(0)
        return original(provider, query)

    original = valhalla_emergency.emergency_route
    valhalla_emergency.walk = counting  # type: ignore[assignment]
    valhalla.emergency_route = route  # the provider's own name for it

    def done() -> list[int]:
        valhalla_emergency.walk = walk
        valhalla.emergency_route = original
        return counts

    return done


def rows(name: str) -> list[str]:
    area = bench_map(name)
    points = area.road_points(2 * PAIRS, SEED)
    pairs = list(zip(points[0::2], points[1::2], strict=False))
    engine = area.registry.sources["valhalla"]
    assert isinstance(engine, ValhallaProvider)
    lines = []
    for radius in RADII:
        queries = [RouteQuery(a, b, steps=False, emergency_radius_m=radius) for a, b in pairs]
        for query in queries[:5]:  # warm-up: tiles paged in, snapping trees built
            timed(lambda q=query: engine.route(q))  # type: ignore[misc]
        walks = counted_walks()
        v = measure(engine.route, queries)
        rounds = np.bincount(walks(), minlength=ROUNDS + 1)[1:]
        t = measure(lambda q: three_legs(engine, q), queries)
        n = measure(engine.route, [replace(q, emergency_radius_m=0) for q in queries])
        lines.append(
            f"| {name} | {radius} | {v[0]:.1f} / {v[1]:.1f} | {t[0]:.1f} / {t[1]:.1f} | "
            f"{n[0]:.1f} / {n[1]:.1f} | {v[2]} | {v[3]} | {' / '.join(str(int(n)) for n in rounds)} |"
        )
    return lines


def run() -> str:
    lines = [
        "## Emergency routes: Valhalla (issue 56)",
        "",
        f"{PAIRS} seeded pairs (seed {SEED}) of main-network road points per map (`bench.maps`), car fastest; "
        "time per provider `route` call, single thread. Valhalla kept: a relaxed route (`ignore_oneways`, "
        "`ignore_access`, leaving now: destination-only ways open), `trace_attributes` over it judged with the "
        "import's list of closed drivable ways (`emergency_ways.json`), the normal route, which also ends the "
        "rounds once a relaxed round is no faster; three legs: design (2)'s route calls "
        "only (the normal route, two relaxed legs, the normal leg between), without verifying the legs; "
        "Valhalla's normal route of the same pairs for the floor.",
        "",
        "| map | R m | Valhalla kept p50 / p99 ms | three legs p50 / p99 ms | "
        "Valhalla normal route (R = 0) p50 / p99 ms | "
        "relaxed routes | errors | Valhalla routes walked 1 / 2 / 3 times |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in EVERY_MAP:
        lines += rows(name)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
