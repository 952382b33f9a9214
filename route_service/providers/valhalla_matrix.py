"""Valhalla's matrices (issue 56): every matrix OSRM cannot answer (truck dimensions, avoid
areas, shortest, a vehicle OSRM has not loaded, a departure time: valhalla_matrix_time), with the costing its routes
use, so a cell is the route Valhalla finds for the same pair.

Algorithm, by measurement (Heidelberg, 50 x 50 and 100 x 100 car, CPU of one call, the machine
shared): TimeDistanceMatrix 0.89 s and 2.4 s, CostMatrix 1.39 s and 4.2 s (check_reverse_connection
off 1.20 s, allow_second_pass 2.17 s). TimeDistanceMatrix is one Dijkstra a source (or a target,
the smaller side), so its searches split across threads with no work repeated; CostMatrix's
reverse trees are every target's whatever the rows, so two halves of its rows cost 2 x 0.7 of the
whole (15 s wall for 100 x 100 on two threads against 8-10 s on one). Here the smaller side is
split into MATRIX_THREADS blocks, each on its own thread's actor (the binding releases the GIL).

Where the ends differ from the engine's own: a point is snapped with `locate` (the answer names
where it met the road); a truck's end on a road whose every nearest way has a limit below the
truck gets no cells (null, as a route to it is refused: Valhalla's truck
costing does not hold a limit against the edge a path starts or ends on,
`ValhallaProvider.closed_at_end`). At a junction of such a way and open ones a cell may start or
end on the limited way: the route's cure, `exclude_locations`, made 54 of a 10 x 10 Munich
matrix's cells null for one excluded way (the matrix searches lose more than the way).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import shapely

from common.errors import PointNotRoutable
from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from route_service import polyline
from route_service.model import NOT_ASKED, MatrixQuery, MatrixResult, Restrictions, Snapped
from route_service.providers import valhalla_matrix_time as at_time
from route_service.providers import valhalla_requests as engine
from route_service.timed_index import TimedIndex

# Threads a matrix's searches are split over: the machine's two cores.
MATRIX_THREADS = 2
# Fewer searches than this run on one thread (a thread's hop and a second actor's first tiles
# cost more than a few ~25 ms searches save).
MIN_SPLIT_SEARCHES = 8


class MatrixEngine(Protocol):
    timed: TimedIndex | None  # the map's roads with rules by time

    def call(self, action: str, request: dict[str, Any], restrictions: Restrictions, parameter: str = "to") -> Any: ...

    def clock(self, vehicle: str) -> float: ...


_pool: ThreadPoolExecutor | None = None


def pool() -> ThreadPoolExecutor:
    """The threads matrices' blocks run on, made on first use (each makes its own actor)."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(MATRIX_THREADS, thread_name_prefix="valhalla-matrix")
    return _pool


def matrix(provider: MatrixEngine, query: MatrixQuery) -> MatrixResult:
    names = [f"sources[{i}]" for i in range(len(query.sources))]
    names += [f"destinations[{j}]" for j in range(len(query.destinations))]
    points = [*query.sources, *query.destinations]
    ends = locate(provider, query, points, names)
    request: dict[str, Any] = {**engine.costing(query.vehicle, query.route_type, query.restrictions), "verbose": False}
    side = len(query.sources)
    sources = [end.location(p, query.vehicle) for p, end in zip(query.sources, ends[:side], strict=True)]
    targets = [end.location(p, query.vehicle) for p, end in zip(query.destinations, ends[side:], strict=True)]
    departure = query.restrictions.time.at if query.restrictions.time is not None else None
    if departure is not None:  # searched forward from the sources (valhalla_matrix_time)
        sources, request["date_time"] = at_time.departing(sources, query.sources, departure)

    def search(asked: dict[str, Any], rows: list[dict[str, Any]], columns: list[dict[str, Any]],
               forward: bool) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        return cells(provider, asked, rows, columns, query.restrictions, forward)

    durations, distances = search(request, sources, targets, departure is not None)
    for index, end in enumerate(ends):
        if end.closed:  # no cells from or to it, as a route to it is refused
            if index < side:
                durations[index], distances[index] = np.nan, np.nan
            else:
                durations[:, index - side], distances[:, index - side] = np.nan, np.nan
    timed_points = []
    if departure is not None and provider.timed is not None:
        timed = at_time.timed_ends(provider.timed, [end.ways for end in ends], query, departure)
        at_time.closed_sources(timed, side, durations, distances)
        if query.when_open:
            at_time.reopened(search, request, sources, targets, points, timed, (durations, distances))
        timed_points = at_time.point_infos(provider.timed, timed, side, query, departure)
    clock = provider.clock(query.vehicle)
    tables = {"duration": np.round(durations * clock, 1), "distance": np.round(distances * 1000.0, 1)}
    return MatrixResult(
        durations_s=tables["duration"] if "duration" in query.annotations else NOT_ASKED,
        distances_m=tables["distance"] if "distance" in query.annotations else NOT_ASKED,
        snapped_sources=[end.snapped for end in ends[:side]],
        snapped_destinations=[end.snapped for end in ends[side:]],
        annotations=query.annotations,
        departure=departure,
        timed_points=timed_points,
    )


def cells(provider: MatrixEngine, request: dict[str, Any], sources: list[dict[str, Any]],
          targets: list[dict[str, Any]], restrictions: Restrictions,
          forward: bool = False) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(durations s, distances km), NaN where no path: the side TimeDistanceMatrix searches from
    (the smaller; `forward`: the sources, in blocks no larger than the targets, as a departure
    time needs) split into blocks, run on the pool's threads."""
    by_rows = forward or len(sources) <= len(targets)
    searched = sources if by_rows else targets
    count = len(searched)
    parts = MATRIX_THREADS if count >= MIN_SPLIT_SEARCHES else 1
    if forward:
        parts = max(parts, -(-count // len(targets)))
    bounds = [count * k // parts for k in range(parts + 1)]

    def block(k: int) -> tuple[np.ndarray, np.ndarray]:
        piece = searched[bounds[k] : bounds[k + 1]]
        asked = {**request, "sources": piece, "targets": targets} if by_rows else \
            {**request, "sources": sources, "targets": piece}  # fmt: skip
        answer = provider.call("matrix", asked, restrictions, "sources[0]")["sources_to_targets"]
        return table(answer["durations"]), table(answer["distances"])

    blocks = [block(0)] if parts == 1 else list(pool().map(block, range(parts)))
    axis = 0 if by_rows else 1
    durations, distances = np.concatenate([b[0] for b in blocks], axis), np.concatenate([b[1] for b in blocks], axis)
    distances[np.isnan(durations)] = np.nan  # Valhalla gives a cell without a path distance 0
    return durations, distances


def table(rows: list[list[float | None]]) -> np.ndarray:
    return np.array([[np.nan if value is None else value for value in row] for row in rows], dtype=np.float64)


@dataclass(frozen=True)
class End:
    """Where a matrix point meets the road; `closed`: on ways all closed to the truck; `open_at`:
    where to ask for it instead, at a junction of ways closed and open to the truck."""

    snapped: Snapped
    ways: tuple[int, ...] = ()  # the OSM ways of its nearest roads (more than one at a junction)
    closed: bool = False
    open_at: LatLon | None = None

    def location(self, point: LatLon, vehicle: str) -> dict[str, Any]:
        if self.open_at is None:
            return engine.location(point, vehicle)
        return {**engine.location(self.open_at, vehicle), "node_snap_tolerance": 0}


# Valhalla holds a way's limits against every edge but the one a search starts or ends on, and a
# point at a junction snaps onto every edge of the node (node_snap_tolerance, 5 m): a 3.5 t
# truck's cell crossed Heidelberg's Wiesenweg (maxweight 3) from its end, 392 m. Such a point is
# asked for this far (degrees, ~3 m) along the nearest open way, without node snapping: the cell
# keeps off the limited way (538 m). The routes exclude it instead (`exclude_locations`), which
# nulled 54 of 100 cells in a matrix.
OPEN_STEP_DEG = 0.00003


def locate(provider: MatrixEngine, query: MatrixQuery, points: list[LatLon], names: list[str]) -> list[End]:
    """Every point's nearest road in one `locate` call, with the costing's access (a point
    without one within the vehicle's radius is named here, before any search)."""
    request = {
        "locations": [engine.location(p, query.vehicle) for p in points],
        **engine.costing(query.vehicle, query.route_type, Restrictions()),
        "verbose": True,
    }
    found = provider.call("locate", request, Restrictions(), names[0]) or []
    truck = query.restrictions.truck if VEHICLE_TABLE[query.vehicle].takes_dimensions else None
    ends = []
    for point, name, place in zip(points, names, found, strict=True):
        edges = (place or {}).get("edges") or []
        if not edges:
            radius = VEHICLE_TABLE[query.vehicle].snap_radius_m
            raise PointNotRoutable(
                f"no road usable by {query.vehicle} within {radius:.0f} m of the point", parameter=name
            )
        edge = edges[0]
        where = LatLon(float(edge["correlated_lat"]), float(edge["correlated_lon"]))
        street = (edge.get("edge_info") or {}).get("names") or []
        snapped = Snapped(where, round(haversine_m(point, where), 1), street[0] if street else "")
        nearest = min(float(e.get("distance", 0.0)) for e in edges)
        near = [e for e in edges if float(e.get("distance", 0.0)) <= nearest + engine.SAME_PLACE_M]
        ways = tuple(dict.fromkeys(int((e.get("edge_info") or {}).get("way_id", 0)) for e in near))
        if truck is None:
            ends.append(End(snapped, ways))
            continue
        limited = [bool(engine.exceeded(e, truck)) for e in near]
        open_edges = [e for e, shut in zip(near, limited, strict=True) if not shut]
        at = along(open_edges[0], where) if any(limited) and open_edges else None
        ends.append(End(snapped, ways, closed=all(limited), open_at=at))
    return ends


def along(edge: dict[str, Any], where: LatLon) -> LatLon:
    """The point OPEN_STEP_DEG along a located edge's shape from `where`, towards its middle."""
    points = polyline.decode((edge.get("edge_info") or {}).get("shape") or "", 6)  # (lon, lat)
    if len(points) < 2:
        return where
    line = shapely.LineString(points)
    at = line.project(shapely.Point(where.lon, where.lat))
    half = line.length / 2
    step = min(OPEN_STEP_DEG, abs(half - at))
    moved = line.interpolate(at + step if at < half else at - step)
    return LatLon(float(moved.y), float(moved.x))
