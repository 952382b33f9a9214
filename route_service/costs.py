"""What each route-service operation costs, in work units of about one millisecond of one core
(`common.admission`), priced from its parsed request before any work starts (no aiohttp here).

Measured on Heidelberg (all profiles, the dense city 49.385-49.42 N, 8.64-8.72 E for
the worst cases), in process, CPU time of the provider call (`time.process_time`), on the two-core
reference machine:

- route: OSRM 2.0 ms median, 2.6 max over 20 routes of 8 km or more; two alternatives 3.1 / 5.4;
  a route with per-request costs (emergency radius, avoid, truck dimensions) priced at 12.
- matrix, OSRM (both tables): 10x10 2 ms, 50x50 11, 100x100 24, 300x300 95, 1000x1000 864, i.e.
  ~2 ms + 0.9 us a cell + 80 us a point (the per-point term: each point's own search).
- isochrone: 65-220 ms whatever the range on Heidelberg (the grid is capped at 20 000 cells;
  the search's share grows with the range on a larger map).
- match: per step between consecutive points (after thinning, `route_service.matching`), random
  walks in the city, ms a step by GPS accuracy r and step length d: r=10 0.04-0.29, r=20 0.07-1.6
  (d=1 km), r=30 0.5-17 (d=3 km), r=50 5-43, r=100 78-466. Candidates grow with r^2 and every
  step routes between every pair, so r^4; longer steps search further (up to d=3 km measured;
  farther, OSRM mostly gives up at once). `matching.step_units` is an envelope of them all.
- detour file: a line ~0.3 ms (OSRM CH Table, bench/RESULTS.md); a track as a match at the
  detour's radius plus its best route.
- the service around them (`python -m bench prices`, the service's CPU, all its processes, on
  every shared extract and all five as one, 2026-12-02): a 100 x 100 OSRM matrix 40-50 ms, not
  the provider's 24 (parsing 200 points, the child process's hop, two tables as JSON), 70 on the
  merged map: 0.2 a point, not 0.08; a detour file's line 0.72-1.15 ms, not 0.3-0.5: 1 unit a line.
- matrix, Valhalla (issue 56: truck dimensions, avoid areas, shortest, bicycle, pedestrian): one
  Dijkstra a search of its smaller side (TimeDistanceMatrix, providers.valhalla_matrix), its
  cost the map's, not the cells': 100 x 100 in process, CPU, 2026-12-02 (the machine shared):
  8.6-10 ms a search on Munich, Helsinki and Monaco, 22.6-30 on Heidelberg (car shortest, a
  truck 3.8 m high, an avoid area), a bicycle's 27-28 and 44.5; the dearest's: 30 and 45.

The prices are envelopes of the measured worst cases, so ordinary requests pay more than they
use (a trace along roads costs 0.03-0.3 ms a step at 20 m): the per-request cap and the budget
must hold against the dearest request of a shape, not the average one.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.admission import Cost, cost, units_of_cpu
from common.vehicles import VEHICLE_TABLE
from route_service.calls import is_large_matrix
from route_service.matching import step_units
from route_service.model import IsochroneQuery, MatrixQuery, RouteQuery
from route_service.parsing import MAX_ISOCHRONE_METRES, MAX_ISOCHRONE_SECONDS

ROUTE_UNITS = 1  # OSRM, ~2 ms: left to the gateway's request rate (common.admission)
ALTERNATIVE_UNITS = 1.5
RESTRICTED_ROUTE_UNITS = 12  # a route with per-request costs (Valhalla)
MATRIX_BASE_UNITS = 2
MATRIX_CELL_UNITS = 0.0011  # 0.9 us a cell, plus the answer's JSON (0.13 s at 1000 x 1000)
MATRIX_POINT_UNITS = 0.2
VALHALLA_MATRIX_SEARCH_UNITS = 30  # a Dijkstra of the smaller side's point, motor vehicles (see above)
VALHALLA_MATRIX_SEARCH_UNITS_UNMOTORIZED = 45  # a bicycle's or a pedestrian's
# A Valhalla matrix this dear (100 ms) runs in the child process too (route_service.calls).
HEAVY_MATRIX_UNITS = 100
ISOCHRONE_BASE_UNITS = 150
ISOCHRONE_RANGE_UNITS = 150  # at the largest range (3600 s, 100 km)
DETOUR_LINE_UNITS = 1.0
DETOUR_TRACK_BASE_UNITS = 20  # the best route, the endpoints' checks


def route_cost(query: RouteQuery, provider: str) -> Cost:
    """OSRM's route is light; Valhalla's (per-request costs) a few times dearer."""
    units = RESTRICTED_ROUTE_UNITS if provider != "osrm" else ROUTE_UNITS
    return cost(units + ALTERNATIVE_UNITS * query.alternatives, "one route")


def matrix_cost(query: MatrixQuery, provider: str) -> Cost:
    sources, destinations = len(query.sources), len(query.destinations)
    measure = f"{sources} x {destinations} cells"
    if provider == "osrm":  # never with avoid areas or trucks (the registry); a time it ignores
        units = MATRIX_BASE_UNITS + MATRIX_CELL_UNITS * query.cells + MATRIX_POINT_UNITS * (sources + destinations)
        return cost(units, measure, heavy=is_large_matrix(query))
    motorized = VEHICLE_TABLE[query.vehicle].motorized if query.vehicle in VEHICLE_TABLE else False
    per_search = VALHALLA_MATRIX_SEARCH_UNITS if motorized else VALHALLA_MATRIX_SEARCH_UNITS_UNMOTORIZED
    # at a departure time every source is searched (valhalla_matrix_time), else the smaller side
    searches = sources if query.restrictions.time is not None else min(sources, destinations)
    units = MATRIX_BASE_UNITS + per_search * searches + MATRIX_CELL_UNITS * query.cells
    return cost(units, measure, heavy=units >= HEAVY_MATRIX_UNITS)


def is_heavy_matrix(query: MatrixQuery, provider: str) -> bool:
    """Where a matrix runs: heavy ones in the child process (route_service.calls)."""
    return matrix_cost(query, provider).heavy


def isochrone_cost(query: IsochroneQuery) -> Cost:
    """The search's share grows with the largest limit, up to the largest accepted."""
    most = MAX_ISOCHRONE_SECONDS if query.metric == "time" else MAX_ISOCHRONE_METRES
    largest = max(query.limits)
    unit = "s" if query.metric == "time" else "m"
    units = ISOCHRONE_BASE_UNITS + ISOCHRONE_RANGE_UNITS * min(1.0, largest / most)
    return cost(units, f"an isochrone of {largest:g} {unit}", heavy=True)


def match_cost(steps_m: Sequence[float], accuracy_m: float, given: int) -> Cost:
    """A trace of `given` points, matched on the points its thinning kept (`steps_m` between them)."""
    units = sum(step_units(accuracy_m, step) for step in steps_m)
    kept = len(steps_m) + 1
    return cost(units, f"{given} trace points, {kept} after thinning, at gpsAccuracy {accuracy_m:g} m", heavy=True)


def match_settled(cpu_s: float) -> int:
    """What a match costs in the end: the CPU measured reading it, matching it (where it ran) and
    writing its answer with the unmatched points' reasons, a unit a millisecond. Its price
    before the work is an envelope of the dearest traces of its shape; the rest is given back."""
    return units_of_cpu(cpu_s)


def detour_cost(lines: int, track_steps_m: Sequence[float] | None, accuracy_m: float) -> Cost:
    """A detour file: its detour lines, or its track (thinned as a match is)."""
    if track_steps_m is None:
        return cost(DETOUR_LINE_UNITS * lines, f"{lines} detour lines", heavy=True)
    units = DETOUR_TRACK_BASE_UNITS + sum(step_units(accuracy_m, step) for step in track_steps_m)
    return cost(units, f"a track of {lines} points, {len(track_steps_m) + 1} after thinning", heavy=True)
