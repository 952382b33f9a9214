"""Prices against the work (issue 55): each heavy operation's price in work units (about one
millisecond of one core, common.admission) against the CPU it used, on every shared extract and
on all five as one map.

    python -m bench prices   # BENCH_PRICES_MAPS (the five cities and all), BENCH_PRICES_LINES (1000)

Against the real services, as their own benches measure them: per map a route service (the map
of bench/maps.py, as bench/detour.py starts it) and a geocoding service (the index of
bench/geocoder_batch.py), each one process with its Redis on loopback, asked on its own port as
the gateway forwards an `unlimited` account (no budget: nothing refused, the price in the
answer's `RateLimit-Cost`). Measured: the service's CPU seconds, all its processes
(bench/processes.py), around each request; the median of REPEATS after a warm-up.

- geocoder batch, distinct lines: every address of the index once (at most LINES), the answer
  cache cold (run once: a second run would be the next row);
- geocoder batch, repeated lines: the same batch again, every line in the answer cache. A price
  charged before the work cannot know which lines the cache holds: an upper bound there, so the
  row fails only when the price is below the cost (its cost is what a refund after the work
  would give back);
- matrices, 100 x 100, per profile: car and truck (OSRM) and Valhalla's truck with
  dimensions, bicycle, pedestrian, priced as `POST /v1/matrix` (route_service.costs);
- fleets' matrices: `/internal/matrix` for each road profile as the optimizer asks them, at once,
  priced as the fleet's matrix share (optimize_service.costs.cost_of_fleet; the search is priced
  by its time limit on its processes, the CPU it is given by construction): 10 truck sizes and
  car + truck, 100 places;
- detour file: LINES detour lines (bench/detour.py's file);
- match: a 1000-point trace (bench/match.py's drives).

A row fails (the run exits non-zero, its section written) when price / measured is outside
[1/TOLERANCE, TOLERANCE].
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.detour import boxes_of, detour_file
from bench.full_stack import one_service
from bench.geocoder_batch import addresses, csv_lines, index_dir
from bench.maps import CITIES, BenchMap, bench_map
from bench.match import chained_trace
from bench.processes import cpu_seconds
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from launcher.stack import Stack
from optimize_service.costs import cost_of_fleet

MAPS = os.environ.get("BENCH_PRICES_MAPS", ",".join((*CITIES, "all"))).split(",")
LINES = int(os.environ.get("BENCH_PRICES_LINES", "1000"))
REPEATS = 3
TOLERANCE = 1.5
SEED = 20261202
MATRIX_SIDE = 100
FLEET_PLACES = 100
TRUCK_SIZES = 10
TRACE_POINTS = 1000
# (row, the /v1/matrix body's profile fields)
PROFILES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("car (OSRM)", {"vehicle": "car"}),
    ("truck (OSRM)", {"vehicle": "truck"}),
    ("truck 3.8 m high (Valhalla)", {"vehicle": "truck", "truck": {"height": 3.8}}),
    ("bicycle (Valhalla)", {"vehicle": "bicycle"}),
    ("pedestrian (Valhalla)", {"vehicle": "pedestrian"}),
)
FAILURES: list[str] = []  # read by bench/__main__.py: the run exits non-zero when any


@dataclass(frozen=True)
class Row:
    map: str
    operation: str
    units: int  # the price charged
    cpu_ms: float  # the service's CPU for it
    cached: bool = False  # a price before the work that cannot know the cache: only too low fails

    @property
    def ratio(self) -> float:
        return self.units / max(self.cpu_ms, 1e-6)

    @property
    def shape(self) -> str:
        """The operation whatever the map (the geocoder's line counts differ by map)."""
        return re.sub(r"\d+ (distinct |unknown )?lines", "lines", self.operation) if "geocoder" in self.operation else self.operation

    def markdown(self, ok: bool = True) -> str:
        return f"| {self.map} | {self.operation} | {self.units} | {self.cpu_ms:.0f} | {self.ratio:.2f} | {'✓' if ok else '✗'} |"


def failing(rows: list[Row]) -> dict[Row, str]:
    """A price is set before the work for every request of its shape, so it must cover the
    dearest: never below 1/TOLERANCE of any map's cost, and within TOLERANCE of the dearest (a
    price per line or cell cannot follow a map's size: cheaper maps pay up to the dearest's)."""
    found = {r: f"{r.map}: {r.operation} priced {r.ratio:.2f}x its cost" for r in rows if r.ratio < 1 / TOLERANCE}
    for shape in dict.fromkeys(r.shape for r in rows if not r.cached):
        dearest = min((r for r in rows if r.shape == shape), key=lambda r: r.ratio)
        if dearest.ratio > TOLERANCE:
            found[dearest] = f"{dearest.map}: {shape} priced {dearest.ratio:.2f}x its cost on its dearest map"
    return found


def caller(stack: Stack) -> dict[str, str]:
    return {**stack.internal_headers(), INTERNAL_SUBJECT_HEADER: "bench-prices", INTERNAL_TIER_HEADER: "unlimited"}


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    """(the price charged, the answer); anything but 200 stops the run."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=300) as response:  # noqa: S310 - loopback
            return int(response.headers.get("RateLimit-Cost", "0")), orjson.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{url} answered {exc.code}: {exc.read()[:300]!r}") from exc


def cpu_ms(pid: int, call: Callable[[], int]) -> tuple[int, float]:
    before = cpu_seconds(pid)
    units = call()
    return units, (cpu_seconds(pid) - before) * 1000


def median_of(pid: int, call: Callable[[], int]) -> tuple[int, float]:
    call()  # warm: the first call pages the map in
    runs = [cpu_ms(pid, call) for _ in range(REPEATS)]
    # A price settled to the work measured (a match, a batch) varies as the CPU does: its median too.
    return round(statistics.median(units for units, _ in runs)), statistics.median(ms for _, ms in runs)


# ---------------------------------------------------------------- geocoder


def mistyped(address: str) -> str:
    """The address with two letters of each word of its street swapped, in a town no map has:
    the dearest line, each word's trigram fallback searched (geo_service.matcher)."""
    street, _, rest = address.partition(",")
    words = [w[0] + w[2] + w[1] + w[3:] if len(w) > 3 else w for w in street.split()]
    return f"{' '.join(words)}, {rest.split()[0] if rest.split() else ''} Xyzzyville"


def geocoder_rows(name: str) -> list[Row]:
    index = index_dir(name)
    pool = sorted(set(addresses(index)))
    random.Random(SEED).shuffle(pool)
    body = csv_lines(pool[:LINES])
    lines = min(LINES, len(pool))
    with tempfile.TemporaryDirectory(prefix="bench-prices-") as tmp:
        stack = one_service(Path(tmp), "geo_service", GEO_INDEX_DIR=str(index))
        try:
            url, pid = stack.url("geo_service") + "/v1/geocoder/batch?limit=1", stack.processes["geo_service"].pid
            headers = {**caller(stack), "Content-Type": "text/csv"}
            post(url.replace("limit=1", "limit=2"), csv_lines(pool[-5:]), headers)  # warm the index's pages
            distinct = cpu_ms(pid, lambda: post(url, body, headers)[0])
            repeated = cpu_ms(pid, lambda: post(url, body, headers)[0])
            unknown = cpu_ms(pid, lambda: post(url, csv_lines([mistyped(a) for a in pool[:LINES]]), headers)[0])
        finally:
            stack.stop()
    return [Row(name, f"geocoder batch, {lines} distinct lines", *distinct),
            Row(name, f"geocoder batch, {lines} unknown lines", *unknown),
            Row(name, f"geocoder batch, {lines} lines cached", *repeated, cached=True)]  # fmt: skip


# ---------------------------------------------------------------- route service


def points_body(bench: BenchMap, count: int) -> list[dict[str, float]]:
    return [{"lat": p.lat, "lon": p.lon} for p in bench.road_points(count, SEED)]


def routable(url: str, headers: dict[str, str], points: list[dict[str, float]]) -> list[dict[str, float]]:
    """The points every profile's matrix takes (a car's road may be cut off for a truck or a
    bicycle: the route service's 400 names those points, `sources[k]`)."""
    for profile in (profile for _, profile in PROFILES):
        body = orjson.dumps({"sources": points[:1], "destinations": points, **profile})
        request = urllib.request.Request(url + "/v1/matrix", data=body, method="POST",  # noqa: S310 - loopback
                                         headers={**headers, "Content-Type": "application/json"})  # fmt: skip
        try:
            urllib.request.urlopen(request, timeout=300).close()  # noqa: S310 - loopback
        except urllib.error.HTTPError as exc:
            named = {int(k) for k in re.findall(r"destinations\[(\d+)\]", exc.read().decode())}
            points = [p for i, p in enumerate(points) if i not in named]
    return points


def matrix_rows(bench: BenchMap, url: str, pid: int, headers: dict[str, str]) -> list[Row]:
    sources = routable(url, headers, points_body(bench, MATRIX_SIDE + 10))[:MATRIX_SIDE]
    rows, sent = [], {**headers, "Content-Type": "application/json"}
    for label, profile in PROFILES:
        body = orjson.dumps({"sources": sources, **profile})
        units, ms = median_of(pid, lambda b=body: post(url + "/v1/matrix", b, sent)[0])  # type: ignore[misc]
        rows.append(Row(bench.name, f"matrix {MATRIX_SIDE} x {MATRIX_SIDE}, {label}", units, ms))
    return rows


def fleet_matrices(url: str, headers: dict[str, str], places: list[dict[str, float]], profiles: list[dict[str, Any]]) -> None:
    """The optimizer's matrices of one fleet: one `/internal/matrix` per road profile, at once
    (optimize_service.fleet.planner.profile_matrix)."""

    async def ask(session: aiohttp.ClientSession, profile: dict[str, Any]) -> None:
        body = {"sources": places, "destinations": places, "annotations": ["duration", "distance"],
                "type": "fastest", **profile}  # fmt: skip
        async with session.post(url + "/internal/matrix", json=body, headers=headers) as answer:
            assert answer.status == 200, await answer.text()
            await answer.read()

    async def all_of() -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
            await asyncio.gather(*(ask(session, profile) for profile in profiles))

    asyncio.run(all_of())


def fleet_rows(bench: BenchMap, url: str, pid: int, headers: dict[str, str], internal: dict[str, str]) -> list[Row]:
    places = routable(url, headers, points_body(bench, FLEET_PLACES + 10))[:FLEET_PLACES]
    trucks = [{"vehicle": "truck", "truck": {"height": 3.0 + i / 10}} for i in range(TRUCK_SIZES)]
    fleets = ((f"{TRUCK_SIZES} truck sizes (Valhalla)", trucks, [("truck", True)] * TRUCK_SIZES),
              ("car + truck (OSRM)", [{"vehicle": "car"}, {"vehicle": "truck"}], [("car", False), ("truck", False)]))  # fmt: skip
    rows = []
    for label, profiles, kinds in fleets:
        price = cost_of_fleet(len(places), kinds, 0.0, 1).units  # the matrices' share alone

        def ask(p: list[dict[str, Any]] = profiles, units: int = price) -> int:
            fleet_matrices(url, internal, places, p)
            return units

        _, ms = median_of(pid, ask)
        rows.append(Row(bench.name, f"fleet's matrices, {FLEET_PLACES} places, {label}", price, ms))
    return rows


def detour_row(bench: BenchMap, url: str, pid: int, headers: dict[str, str]) -> Row:
    body = detour_file(boxes_of(bench.name), LINES)
    sent = {**headers, "Content-Type": "text/csv"}
    units, ms = median_of(pid, lambda: post(url + "/v1/detour/file?filename=prices.csv", body, sent)[0])
    return Row(bench.name, f"detour file, {LINES} lines", units, ms)


def match_row(bench: BenchMap, url: str, pid: int, headers: dict[str, str]) -> Row:
    body = json.dumps(chained_trace(bench, TRACE_POINTS)).encode()  # numpy floats: float subclasses
    sent = {**headers, "Content-Type": "application/json"}
    units, ms = median_of(pid, lambda: post(url + "/v1/match", body, sent)[0])
    return Row(bench.name, f"match, {TRACE_POINTS} points", units, ms)


def route_rows(name: str) -> list[Row]:
    bench = bench_map(name)
    with tempfile.TemporaryDirectory(prefix="bench-prices-") as tmp:
        stack = one_service(Path(tmp), "route_service", MAP_DIR=str(bench.dataset.path.parent))
        try:
            url, pid, headers = stack.url("route_service"), stack.processes["route_service"].pid, caller(stack)
            return [*matrix_rows(bench, url, pid, headers), *fleet_rows(bench, url, pid, headers, stack.internal_headers()),
                    detour_row(bench, url, pid, headers), match_row(bench, url, pid, headers)]  # fmt: skip
        finally:
            stack.stop()


def run() -> str:
    rows = []
    for name in (m.strip() for m in MAPS):
        rows += [*geocoder_rows(name), *route_rows(name)]
        for row in rows[-12:]:
            print(row.markdown(), flush=True)
    failed = failing(rows)
    FAILURES[:] = failed.values()
    return "\n".join([
        "## Prices against the work (issue 55)",
        "",
        f"Command: `python -m bench prices` (BENCH_PRICES_MAPS={','.join(MAPS)}, BENCH_PRICES_LINES={LINES}). "
        "Real route and geocoding services, one process each on loopback, asked as an `unlimited` account; "
        f"price: the `RateLimit-Cost` charged (geocoder batches and matches: settled after the work to the CPU they measured; the fleet's matrices: their share of the fleet's price); CPU: the "
        f"service's, all its processes, median of {REPEATS} after a warm-up (the geocoder's once each, cold then "
        f"cached). A unit is meant as 1 ms of one core. A price is set before the work for every request of its "
        f"shape: it fails below {1 / TOLERANCE:.2f}x of any map's cost, or above {TOLERANCE:g}x even on the "
        "dearest map (cached lines: only below). Unknown lines: each address mistyped in a town no map has.",
        "",
        "| map | operation | price (units) | CPU (ms) | price / CPU | holds |",
        "|---|---|---|---|---|---|",
        *(row.markdown(row not in failed) for row in rows),
        "",
        *([f"Failed: {'; '.join(FAILURES)}."] if FAILURES else ["Every price holds."]),
    ])  # fmt: skip


if __name__ == "__main__":
    print(run())
