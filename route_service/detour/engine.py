"""Detour results from typed lines and a routing provider (no aiohttp here).

Everything here is synchronous and CPU-bound; the handler runs it in the service's thread
pool in chunks, so the event loop gets the GIL back between chunks (the OSRM binding holds
it during each call).

- Detour cases: per line the direct route from→to and the route from→via→to, where the via
  point is a stop (turning around there is allowed). Only lengths are needed: the provider's
  detour plugin where it has one (OSRM with a CH graph: one Table call for both routes, 2.4
  times faster), else, and for every line that plugin cannot answer, its cost plugin twice
  (OSRM: a lean Route call without geometry or steps; others: leg by leg, as the registry
  resolved it), whose errors name the point at fault. Identical requests within a file are
  computed once.
- A track: points that cannot be used are skipped, each with its own error; the driven
  distance is map-matched (OSRM Match, in chunks) where possible, straight lines between
  consecutive points elsewhere, and compared with the best route from the first to the last
  point.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from common.errors import ApiError, NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from route_service.detour.csvfile import DetourCase, LineError, TrackPoint
from route_service.matching import MATCH_CHUNK, MIN_SPACING_M, match_in_chunks, never, step_units, thinned
from route_service.model import Cost, CostQuery, DetourCosts, DetourQuery, Matching, MatchResult
from route_service.providers.base import Capabilities

log = logging.getLogger("route_service.detour")

DIRECT = ("from", "to")
VIA = ("from", "via", "to")
TRACK_TOO_SHORT = "DETOUR_ERROR_TRACK_TOO_SHORT"
LINE_FAILED = "DETOUR_ERROR_LINE_FAILED"
MAX_ENDPOINT_SKIPS = 20  # unroutable first/last points dropped before the track is given up
# Straight-line stretches get a duration at the best route's average speed; these speeds are
# used when that route has none (a track ending where it started).


def chunks[T](items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def rounded(value: float) -> float:
    return round(value, 1)


def percent(extra: float, base: float) -> float | None:
    """Extra as a percentage of base; None when base is zero (from and to are one point)."""
    return round(100 * extra / base, 1) if base >= 0.5 else None


# ---------------------------------------------------------------- routing with one provider


class Router:
    """Route lengths for one request, with one provider, vehicle and route type."""

    def __init__(self, provider: Capabilities, vehicle: str, route_type: str, departure: datetime | None = None) -> None:
        self.provider = provider
        self.vehicle = vehicle
        self.route_type = route_type
        self.departure = departure  # rules by time (issue 33): each line's routes leave then
        self._memo: dict[tuple[tuple[LatLon, ...], tuple[str, ...]], Cost | ApiError] = {}
        self._detours: dict[tuple[LatLon, LatLon, LatLon], DetourCosts | None] = {}

    def detour(self, case: DetourCase) -> tuple[Cost, Cost]:
        """The direct and the via cost of a line; raises the provider's ApiError naming the point."""
        fast = self.provider.detour if self.departure is None else None
        if fast is not None:
            key = (case.origin, case.via, case.destination)
            if key not in self._detours:
                self._detours[key] = fast(DetourQuery(*key, self.vehicle, self.route_type))
            known = self._detours[key]
            if known is not None:
                return known.direct, known.via
        direct = self.cost((case.origin, case.destination), DIRECT)
        return direct, self.cost((case.origin, case.via, case.destination), VIA)

    def cost(self, points: tuple[LatLon, ...], names: tuple[str, ...]) -> Cost:
        """Distance and duration through `points`; raises the provider's ApiError naming `names[i]`."""
        key = (points, names)
        known = self._memo.get(key)
        if known is None:
            try:
                known = self.provider.cost(CostQuery(points, names, self.vehicle, self.route_type, self.departure))
            except ApiError as exc:
                known = exc
            self._memo[key] = known
        if isinstance(known, ApiError):
            raise known
        return known


# ---------------------------------------------------------------- detour cases


@dataclass(frozen=True)
class DetourResult:
    case: DetourCase
    direct: Cost
    via: Cost

    @property
    def extra_distance_m(self) -> float:
        return self.via.distance_m - self.direct.distance_m

    @property
    def extra_duration_s(self) -> float:
        return self.via.duration_s - self.direct.duration_s

    @property
    def extra_percent(self) -> float | None:
        return percent(self.extra_distance_m, self.direct.distance_m)


def answer_cases(router: Router, cases: Sequence[DetourCase]) -> tuple[list[DetourResult], list[LineError]]:
    """Each case answered or failed on its own line; one bad line never stops the others."""
    results: list[DetourResult] = []
    errors: list[LineError] = []
    for case in cases:
        try:
            direct, via = router.detour(case)
        except ApiError as exc:
            errors.append(LineError(case.line, exc.code, exc.detail))
            continue
        except RuntimeError:  # an engine failure, not the line's fault: logged, the file goes on
            log.exception("detour line %d could not be routed", case.line)
            errors.append(LineError(case.line, LINE_FAILED, "the routes of this line could not be computed"))
            continue
        results.append(DetourResult(case, direct, via))
    return results, errors


# ---------------------------------------------------------------- tracks


@dataclass
class TrackResult:
    first: TrackPoint
    last: TrackPoint
    points_used: int
    matched_points: int
    driven: Cost
    best: Cost
    method: str  # "map-matched" | "partly-map-matched" | "straight-line"
    straight_line_m: float  # the part of driven.distance_m that is straight lines between points
    elapsed_s: float | None  # last time - first time, when the file has times
    notes: list[str] = field(default_factory=list)

    @property
    def extra_distance_m(self) -> float:
        return self.driven.distance_m - self.best.distance_m

    @property
    def extra_duration_s(self) -> float:
        return self.driven.duration_s - self.best.duration_s

    @property
    def extra_percent(self) -> float | None:
        return percent(self.extra_distance_m, self.best.distance_m)


def answer_track(
    router: Router, points: Sequence[TrackPoint], abandoned: Callable[[], bool] = never
) -> tuple[TrackResult | None, list[LineError]]:
    """The driven track against the best route; the skipped points' errors; None when the
    track as a whole cannot be answered (then one error with `line` None says why).
    `abandoned()` is asked between the matching's chunks (route_service.matching)."""
    used, best, errors = best_route(router, list(points))
    if best is None:
        return None, errors
    matching = match_track(router, used, abandoned)
    driven, straight = driven_cost(used, matching.matchings, best, router.vehicle)
    matched_points = sum(matching.matched)
    method, notes = describe(router, matching, straight, len(used), matched_points)
    first, last = used[0], used[-1]
    elapsed = last.time - first.time if first.time is not None and last.time is not None else None
    result = TrackResult(first, last, len(used), matched_points, driven, best, method, straight, elapsed, notes)
    return result, errors


def best_route(router: Router, points: list[TrackPoint]) -> tuple[list[TrackPoint], Cost | None, list[LineError]]:
    """The best route from the first to the last point; a first or last point with no road
    nearby is skipped (with its error) and the next one tried."""
    errors: list[LineError] = []
    for _ in range(2 * MAX_ENDPOINT_SKIPS + 1):
        if len(points) < 2:
            message = "a track needs at least 2 usable points"
            return points, None, [*errors, LineError(None, TRACK_TOO_SHORT, f"{message}, got {len(points)}")]
        try:
            return points, router.cost((points[0].point, points[-1].point), DIRECT), errors
        except PointNotRoutable as exc:
            index = -1 if exc.violations[0].parameter == "to" else 0
            skipped = points.pop(index)
            errors.append(LineError(skipped.line, exc.code, f"{exc.violations[0].message}; skipped from the track"))
        except NoRouteFound as exc:
            message = f"no route from the first point (line {points[0].line}) to the last (line {points[-1].line})"
            return points, None, [*errors, LineError(None, exc.code, f"{message}: {exc.violations[0].message}")]
    message = f"the first and last {MAX_ENDPOINT_SKIPS} points include none near a road"
    return points, None, [*errors, LineError(None, PointNotRoutable.code, message)]


def match_track(router: Router, points: Sequence[TrackPoint], abandoned: Callable[[], bool] = never) -> MatchResult:
    """OSRM Match on the track thinned to MIN_SPACING_M (route_service.matching: in chunks
    sharing their boundary point); the result in indices of `points`. A point between two
    matched points of one matching counts as matched."""
    match = router.provider.match
    if match is None:
        return MatchResult([], [False] * len(points))
    thin = thinned([p.point for p in points], MIN_SPACING_M)
    kept = thin.kept
    times = [int(t) for i in kept if (t := points[i].time) is not None]  # all or none have times
    result = match_in_chunks(
        match,
        [points[i].point for i in kept],
        times or None,
        router.vehicle,
        router.route_type,
        chunk_size=MATCH_CHUNK,
        step_costs=[step_units(MIN_SPACING_M, step) for step in thin.steps_m],
        abandoned=abandoned,
    )
    matchings = [replace(m, first_index=kept[m.first_index], last_index=kept[m.last_index]) for m in result.matchings]
    matched = [False] * len(points)
    for m in matchings:
        matched[m.first_index : m.last_index + 1] = [True] * (m.last_index - m.first_index + 1)
    for index, ok in zip(kept, result.matched, strict=True):
        if not ok:
            matched[index] = False  # a kept point OSRM could not place
    return MatchResult(matchings, matched)


def driven_cost(
    points: Sequence[TrackPoint], matchings: Sequence[Matching], best: Cost, vehicle: str
) -> tuple[Cost, float]:
    """Matched stretches as matched; everything between them as straight lines between points."""
    distance = duration = straight = 0.0
    cursor = 0  # the track is accounted for up to this point index
    for matching in matchings:
        if matching.first_index > cursor:
            straight += polyline_m(points, cursor, matching.first_index)
        distance += matching.distance_m
        duration += matching.duration_s
        cursor = max(cursor, matching.last_index)
    straight += polyline_m(points, cursor, len(points) - 1)
    speed = (
        best.distance_m / best.duration_s if best.duration_s > 0 and best.distance_m > 0 else VEHICLE_TABLE[vehicle].fallback_speed_ms
    )
    return Cost(distance + straight, duration + straight / speed), straight


def describe(router: Router, matching: MatchResult, straight: float, used: int, matched: int) -> tuple[str, list[str]]:
    if not matching.matchings:
        why = (
            f"the {router.provider.name} provider cannot map-match"
            if router.provider.match is None
            else "map matching could not place the track on roads"
        )
        note = f"{why}: the driven distance is the straight-line distance between consecutive points, its duration estimated"
        return "straight-line", [note]
    if straight > 0:
        note = (
            f"{used - matched} of {used} points could not be matched to roads; {straight:.0f} m of the driven "
            "distance are straight lines between consecutive points, their duration estimated"
        )
        return "partly-map-matched", [note]
    return "map-matched", []


def polyline_m(points: Sequence[TrackPoint], start: int, end: int) -> float:
    return sum(haversine_m(points[i].point, points[i + 1].point) for i in range(start, end))
