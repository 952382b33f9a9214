"""Map matching of tracks longer than one OSRM Match call (no aiohttp here): the detour
engine's tracks and POST /v1/match alike.

A track is first thinned (`thinned`): a point closer than the spacing to the last kept one is
not matched. Denser points add nothing the matcher can use (they lie within the GPS error of
each other), let noise look like driving backwards, which breaks OSRM's matching into many
pieces, and each one costs a step (issue 29: a 10 000-point trace cost 46-50 CPU-s, the same
points thinned 2.4 s for 20 000). The spacing is the GPS accuracy the matcher assumes, at least
MIN_SPACING_M.

The kept points are matched in chunks that share their boundary point, so no stretch of road
between two chunks is lost; the result is in indices of the whole track. A chunk ends at
MATCH_CHUNK points or at MATCH_CHUNK_UNITS of estimated work (`step_units`), so the caller's
`stop()` is asked at least every ~0.5 s of work: an abandoned request stops there. A chunk
whose matching fails in the engine counts as unmatched, and the track goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from common.geo import LatLon, haversine_m
from route_service.model import Matching, MatchQuery, MatchResult, Snapped
from route_service.providers.base import MatchPlugin

log = logging.getLogger("route_service.matching")

# Points per OSRM Match call: 2000 take a fraction of a second (measured on Heidelberg tracks);
# OSRM's own HTTP server stops at 100 by default, the binding has no limit.
MATCH_CHUNK = 2000
# Estimated work units (~ms, `step_units`) per call: the longest stretch between two `stop()`s.
MATCH_CHUNK_UNITS = 500.0
# The least spacing of matched points: about the GPS error the detour's matching assumes
# (osrm_provider.MATCH_RADIUS_M).
MIN_SPACING_M = 10.0

# A step's price: STEP_BASE + STEP_SCALE x (r / 20 m)^4 x (1 + d / 1 km), d capped at 3 km
# (measured in route_service.costs: OSRM's candidates grow with r^2 and every step routes
# between every pair of them; farther than 3 km OSRM mostly gives up at once).
STEP_BASE_UNITS = 0.3
STEP_SCALE_UNITS = 0.8
STEP_REFERENCE_ACCURACY_M = 20.0
STEP_DISTANCE_CAP_M = 3000.0


class Abandoned(Exception):
    """The caller stopped waiting: the rest of the track is not matched."""


def step_units(accuracy_m: float, step_m: float) -> float:
    """The estimated work of one step between consecutive matched points (see route_service.costs)."""
    radius = (accuracy_m / STEP_REFERENCE_ACCURACY_M) ** 4
    return STEP_BASE_UNITS + STEP_SCALE_UNITS * radius * (1 + min(step_m, STEP_DISTANCE_CAP_M) / 1000)


def spacing_m(accuracy_m: float) -> float:
    return max(MIN_SPACING_M, accuracy_m)


@dataclass(frozen=True)
class Thinned:
    """The points a track keeps for matching, and the steps between them."""

    kept: list[int]  # indices into the track, ascending, first and last always
    steps_m: list[float]  # metres from each kept point to the next

    @property
    def dropped(self) -> int:
        return (self.kept[-1] + 1 - len(self.kept)) if self.kept else 0


def thinned(points: Sequence[LatLon], spacing: float) -> Thinned:
    """Indices of the points at least `spacing` metres from the previous kept one (and the last)."""
    if not points:
        return Thinned([], [])
    kept, steps = [0], []
    for index in range(1, len(points) - 1):
        step = haversine_m(points[kept[-1]], points[index])
        if step >= spacing:
            kept.append(index)
            steps.append(step)
    if len(points) > 1:
        steps.append(haversine_m(points[kept[-1]], points[-1]))
        kept.append(len(points) - 1)
    return Thinned(kept, steps)


def never() -> bool:
    return False


def match_in_chunks(
    match: MatchPlugin,
    points: Sequence[LatLon],
    timestamps: Sequence[int] | None,
    vehicle: str,
    route_type: str,
    *,
    detail: bool = False,
    gps_accuracy_m: float | None = None,
    chunk_size: int = MATCH_CHUNK,
    step_costs: Sequence[float] | None = None,
    abandoned: Callable[[], bool] = never,
) -> MatchResult:
    """`step_costs`: the estimated units of each step (len(points) - 1), to end chunks early;
    `abandoned()` is asked before every chunk, and raises Abandoned when true."""
    count = len(points)
    matchings: list[Matching] = []
    matched = [False] * count
    snapped: list[Snapped | None] = [None] * count if detail else []
    start = 0
    while start < count - 1:
        # Hands the GIL over between chunks: in a thread (ROUTE_LARGE_PROCESSES=0) the OSRM call
        # holds it throughout, and without an explicit pause the event loop waited for the whole
        # trace (170 s measured), so it could neither answer nor notice its client had gone.
        time.sleep(0)
        if abandoned():
            raise Abandoned(f"matching abandoned after {start} of {count} points")
        stop = chunk_end(start, count, chunk_size, step_costs)
        times = list(timestamps[start:stop]) if timestamps is not None else None
        query = MatchQuery(list(points[start:stop]), times, vehicle, route_type, detail, gps_accuracy_m)
        try:
            result = match(query)
        except RuntimeError:  # an engine failure: this stretch stays unmatched, the track goes on
            log.exception("map matching failed for %d points", stop - start)
            result = MatchResult([], [False] * (stop - start))
        for m in result.matchings:
            matchings.append(replace(m, first_index=start + m.first_index, last_index=start + m.last_index))
        for offset, ok in enumerate(result.matched):
            # the boundary point belongs to both chunks: matched if either matched it
            matched[start + offset] = matched[start + offset] or ok
            if detail and ok and snapped[start + offset] is None:
                snapped[start + offset] = result.snapped[offset]
        start = stop - 1
    return MatchResult(matchings, matched, snapped)


def chunk_end(start: int, count: int, chunk_size: int, step_costs: Sequence[float] | None) -> int:
    """Where the chunk from `start` ends (exclusive): at most `chunk_size` points, and no more
    than MATCH_CHUNK_UNITS of estimated work beyond its first step."""
    stop = min(start + chunk_size, count)
    if step_costs is None:
        return stop
    units = step_costs[start]
    end = start + 2
    while end < stop and units + step_costs[end - 1] <= MATCH_CHUNK_UNITS:
        units += step_costs[end - 1]
        end += 1
    return end


def match_trace(
    match: MatchPlugin, query: MatchQuery, thin: Thinned, abandoned: Callable[[], bool] = never
) -> MatchResult:
    """POST /v1/match: the kept points matched; a thinned point shares the place (matched or
    not, and where) of the kept point before it. The result is in indices of the whole trace,
    with the CPU its matching took."""
    began = time.thread_time()
    kept = thin.kept
    times = [query.timestamps[i] for i in kept] if query.timestamps is not None else None
    accuracy = query.gps_accuracy_m or MIN_SPACING_M
    result = match_in_chunks(
        match,
        [query.points[i] for i in kept],
        times,
        query.vehicle,
        query.route_type,
        detail=query.detail,
        gps_accuracy_m=query.gps_accuracy_m,
        step_costs=[step_units(accuracy, step) for step in thin.steps_m],
        abandoned=abandoned,
    )
    return replace(widened(result, kept, len(query.points), query.detail), cpu_s=time.thread_time() - began)


def widened(result: MatchResult, kept: list[int], count: int, detail: bool) -> MatchResult:
    """A result over the kept points, in indices of all `count` points: each kept point's
    answer stands for it and the thinned points up to the next kept one."""
    ends = [*kept[1:], count]  # the thinned points of kept[k] are kept[k] + 1 .. ends[k] - 1
    matchings = [
        replace(m, first_index=kept[m.first_index], last_index=ends[m.last_index] - 1) for m in result.matchings
    ]
    matched = [False] * count
    snapped: list[Snapped | None] = [None] * count if detail else []
    thinned_points = [True] * count
    for position, (index, end) in enumerate(zip(kept, ends, strict=True)):
        matched[index:end] = [result.matched[position]] * (end - index)
        if detail:
            snapped[index:end] = [result.snapped[position]] * (end - index)
        thinned_points[index] = False
    return MatchResult(matchings, matched, snapped, thinned_points)
