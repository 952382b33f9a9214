"""The detour engine with fake providers: batching rules, errors per line, track accounting."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from common.errors import NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from route_service.detour import engine
from route_service.detour.csvfile import DetourCase, TrackPoint
from route_service.detour.engine import Router, answer_cases, answer_track
from route_service.model import (
    EVERY_PROFILE,
    Cost,
    CostQuery,
    DetourCosts,
    DetourQuery,
    Matching,
    MatchQuery,
    MatchResult,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    Route,
    RouteQuery,
    RouteResult,
    Snapped,
)
from route_service.providers.base import Plugins
from route_service.providers.registry import resolve

FAR = LatLon(0.0, 0.0)  # "no road near this point" for the fakes
ISLAND = LatLon(1.0, 1.0)  # on a road, but connected to nothing


def straight(a: LatLon, b: LatLon) -> Cost:
    distance = haversine_m(a, b)
    return Cost(distance, distance / 10)


class RouteOnly:
    """A provider with only `route()` (no detour, cost or match plugin): straight lines at 10 m/s."""

    name = "fake"

    def __init__(self) -> None:
        self.calls = 0

    def info(self) -> ProviderInfo:
        return ProviderInfo("fake", "", EVERY_PROFILE)

    def plugins(self) -> Plugins:
        return Plugins(route=self.route, matrix=self.matrix)

    def route(self, query: RouteQuery) -> RouteResult:
        self.calls += 1
        for parameter, point in (("from", query.origin), ("to", query.destination)):
            if point == FAR:
                raise PointNotRoutable("no road near", parameter=parameter)
        if ISLAND in (query.origin, query.destination):
            raise NoRouteFound("no route", parameter="to")
        cost = straight(query.origin, query.destination)
        route = Route(cost.distance_m, cost.duration_s, np.zeros((0, 2)))
        return RouteResult([route], Snapped(query.origin, 0), Snapped(query.destination, 0))

    def matrix(self, query: MatrixQuery) -> MatrixResult:
        raise NotImplementedError


class Lean(RouteOnly):
    """With a lean `cost()` and `match()` (like OSRM)."""

    def __init__(self, match: MatchResult | None = None) -> None:
        super().__init__()
        self.cost_calls: list[tuple[LatLon, ...]] = []
        self.match_calls: list[list[LatLon]] = []
        self.match_result = match

    def plugins(self) -> Plugins:
        return Plugins(route=self.route, matrix=self.matrix, cost=self.cost, match=self.match)

    def cost(self, query: CostQuery) -> Cost:
        self.cost_calls.append(tuple(query.points))
        for name, point in zip(query.names, query.points, strict=True):
            if point == FAR:
                raise PointNotRoutable("no road near", parameter=name)
        total = Cost(0, 0)
        for a, b in itertools.pairwise(query.points):
            leg = straight(a, b)
            total = Cost(total.distance_m + leg.distance_m, total.duration_s + leg.duration_s)
        return total

    def match(self, query: MatchQuery) -> MatchResult:
        points = query.points
        self.match_calls.append(list(points))
        if self.match_result is not None:
            return self.match_result
        # Everything matched as one stretch, 10 % longer than the straight lines.
        length = sum(haversine_m(a, b) for a, b in itertools.pairwise(points))
        return MatchResult([Matching(0, len(points) - 1, 1.1 * length, 1.1 * length / 10, 0.9)], [True] * len(points))


class Fast(Lean):
    """With a detour plugin (like OSRM with a CH graph) that gives up on lines through C."""

    def __init__(self) -> None:
        super().__init__()
        self.detour_calls: list[DetourQuery] = []

    def plugins(self) -> Plugins:
        return Plugins(route=self.route, matrix=self.matrix, cost=self.cost, match=self.match, detour=self.detour)

    def detour(self, query: DetourQuery) -> DetourCosts | None:
        self.detour_calls.append(query)
        if C in (query.origin, query.via, query.destination):
            return None
        direct = straight(query.origin, query.destination)
        return DetourCosts(direct, Cost(direct.distance_m + 1000, direct.duration_s + 100))


A, B, C = LatLon(49.40, 8.70), LatLon(49.41, 8.70), LatLon(49.40, 8.71)


def case(line: int, origin: LatLon, destination: LatLon, via: LatLon) -> DetourCase:
    return DetourCase(line, f"id{line}", origin, destination, via)


def track(points: list[LatLon], start_line: int = 2) -> list[TrackPoint]:
    return [TrackPoint(start_line + i, p, None) for i, p in enumerate(points)]


def line_of(points: int, start: LatLon = A, step_deg: float = 0.0002) -> list[LatLon]:
    """Points about 22 m apart going north."""
    return [LatLon(start.lat + i * step_deg, start.lon) for i in range(points)]


# ---------------------------------------------------------------- detour cases


@pytest.mark.parametrize("provider_type", [Lean, RouteOnly])
def test_detour_numbers(provider_type: type[RouteOnly]) -> None:
    results, errors = answer_cases(Router(resolve(provider_type()), "car", "fastest"), [case(2, A, B, C)])
    (result,) = results
    direct, via = haversine_m(A, B), haversine_m(A, C) + haversine_m(C, B)
    assert errors == []
    assert result.direct.distance_m == pytest.approx(direct)
    assert result.via.distance_m == pytest.approx(via)
    assert result.extra_distance_m == pytest.approx(via - direct)
    assert result.extra_duration_s == pytest.approx((via - direct) / 10)
    assert result.extra_percent == round(100 * (via - direct) / direct, 1)


def test_lean_provider_is_called_once_per_route_and_duplicates_once() -> None:
    provider = Lean()
    cases = [case(2, A, B, C), case(3, A, B, C), case(4, A, B, A)]
    results, _ = answer_cases(Router(resolve(provider), "car", "fastest"), cases)
    assert len(results) == 3 and provider.calls == 0
    # direct A→B once, via A→C→B once, via A→A→B once
    assert provider.cost_calls == [(A, B), (A, C, B), (A, A, B)]


def test_the_detour_plugin_answers_lines_once_and_cost_the_rest() -> None:
    provider = Fast()
    cases = [case(2, A, B, A), case(3, A, B, A), case(4, A, B, C)]
    results, errors = answer_cases(Router(resolve(provider), "car", "fastest"), cases)
    assert errors == [] and [r.case.line for r in results] == [2, 3, 4]
    assert results[0].extra_distance_m == pytest.approx(1000) and results[0].extra_duration_s == pytest.approx(100)
    assert [(q.origin, q.via, q.destination) for q in provider.detour_calls] == [(A, A, B), (A, C, B)]
    assert provider.cost_calls == [(A, B), (A, C, B)]  # line 4: the plugin gave up


def test_a_line_the_plugin_gives_up_on_fails_with_the_cost_error() -> None:
    results, errors = answer_cases(Router(resolve(Fast()), "car", "fastest"), [case(2, A, FAR, C)])
    assert results == [] and [(e.line, e.code) for e in errors] == [(2, "ROUTE_ERROR_POINT_NOT_ROUTABLE")]
    assert errors[0].message.startswith("to: ")


@pytest.mark.parametrize("provider_type", [Lean, RouteOnly])
@pytest.mark.parametrize(
    ("bad", "parameter"), [(case(3, FAR, B, C), "from"), (case(3, A, FAR, C), "to"), (case(3, A, B, FAR), "via")]
)
def test_unroutable_point_is_its_lines_error_naming_the_point(
    provider_type: type[RouteOnly], bad: DetourCase, parameter: str
) -> None:
    results, errors = answer_cases(
        Router(resolve(provider_type()), "car", "fastest"), [case(2, A, B, C), bad, case(4, A, C, B)]
    )
    assert [r.case.line for r in results] == [2, 4]
    (error,) = errors
    assert error.line == 3 and error.code == "ROUTE_ERROR_POINT_NOT_ROUTABLE"
    assert error.message.startswith(f"{parameter}: ")


def test_no_route_is_its_lines_error() -> None:
    results, errors = answer_cases(Router(resolve(RouteOnly()), "car", "fastest"), [case(2, A, ISLAND, C)])
    assert results == [] and [(e.line, e.code) for e in errors] == [(2, "ROUTE_ERROR_NO_ROUTE")]


def test_an_engine_failure_fails_only_its_line() -> None:
    class Broken(Lean):
        def cost(self, query: CostQuery) -> Cost:
            if C in query.points:
                raise RuntimeError("OSRM failed: boom")
            return super().cost(query)

    results, errors = answer_cases(Router(resolve(Broken()), "car", "fastest"), [case(2, A, B, C), case(3, A, B, A)])
    assert [r.case.line for r in results] == [3]
    assert [(e.line, e.code) for e in errors] == [(2, "DETOUR_ERROR_LINE_FAILED")]
    assert "boom" not in errors[0].message


def test_zero_direct_distance_has_no_percentage() -> None:
    (result,), _ = answer_cases(Router(resolve(Lean()), "car", "fastest"), [case(2, A, A, C)])
    assert result.extra_percent is None and result.extra_distance_m > 0


# ---------------------------------------------------------------- tracks


def test_matched_track() -> None:
    points = line_of(50)
    result, errors = answer_track(Router(resolve(Lean()), "car", "fastest"), track(points))
    assert errors == [] and result is not None
    assert (result.method, result.points_used, result.matched_points, result.straight_line_m) == (
        "map-matched",
        50,
        50,
        0,
    )
    best = haversine_m(points[0], points[-1])
    assert result.best.distance_m == pytest.approx(best)
    assert result.driven.distance_m == pytest.approx(1.1 * best, rel=1e-6)
    assert result.extra_percent == pytest.approx(10, abs=0.1)
    assert (result.first.line, result.last.line) == (2, 51) and result.notes == []


def test_provider_without_matching_uses_straight_lines() -> None:
    points = line_of(10)
    result, _ = answer_track(Router(resolve(RouteOnly()), "car", "fastest"), track(points))
    assert result is not None and result.method == "straight-line" and result.matched_points == 0
    assert result.driven.distance_m == pytest.approx(haversine_m(points[0], points[-1]))
    assert result.straight_line_m == pytest.approx(result.driven.distance_m)
    assert "cannot map-match" in result.notes[0]
    # the duration of straight lines at the best route's average speed (10 m/s here)
    assert result.driven.duration_s == pytest.approx(result.driven.distance_m / 10)


def test_failed_matching_uses_straight_lines() -> None:
    points = line_of(10)
    result, _ = answer_track(Router(resolve(Lean(MatchResult([], [False] * 10))), "car", "fastest"), track(points))
    assert result is not None and result.method == "straight-line" and "could not place the track" in result.notes[0]


def test_an_engine_failure_in_matching_falls_back_to_straight_lines() -> None:
    class Broken(Lean):
        def match(self, query: MatchQuery) -> MatchResult:
            raise RuntimeError("OSRM match failed: TooBig")

    result, errors = answer_track(Router(resolve(Broken()), "car", "fastest"), track(line_of(10)))
    assert errors == [] and result is not None and result.method == "straight-line"


def test_gaps_between_matchings_are_straight_lines() -> None:
    points = line_of(10)
    matchings = [Matching(0, 3, 100.0, 10.0, 1), Matching(6, 9, 100.0, 10.0, 1)]
    matched = [True] * 4 + [False] * 2 + [True] * 4
    result, _ = answer_track(Router(resolve(Lean(MatchResult(matchings, matched))), "car", "fastest"), track(points))
    assert result is not None and result.method == "partly-map-matched" and result.matched_points == 8
    gap = sum(haversine_m(points[i], points[i + 1]) for i in range(3, 6))
    assert result.straight_line_m == pytest.approx(gap)
    assert result.driven.distance_m == pytest.approx(200 + gap)
    assert "2 of 10 points could not be matched" in result.notes[0]


def test_dense_points_are_thinned_before_matching() -> None:
    provider = Lean()
    points = line_of(100, step_deg=0.00002)  # about 2.2 m apart
    result, _ = answer_track(Router(resolve(provider), "car", "fastest"), track(points))
    (sent,) = provider.match_calls
    assert len(sent) < 25 and sent[0] == points[0] and sent[-1] == points[-1]
    assert all(haversine_m(a, b) >= engine.MIN_SPACING_M for a, b in itertools.pairwise(sent[:-1]))
    assert result is not None and result.matched_points == 100


def test_long_tracks_are_matched_in_chunks_sharing_a_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "MATCH_CHUNK", 10)
    provider = Lean()
    points = line_of(25)
    result, _ = answer_track(Router(resolve(provider), "car", "fastest"), track(points))
    assert [len(c) for c in provider.match_calls] == [10, 10, 7]
    assert provider.match_calls[0][-1] == provider.match_calls[1][0]
    assert result is not None and result.method == "map-matched"
    assert result.driven.distance_m == pytest.approx(1.1 * haversine_m(points[0], points[-1]), rel=1e-6)


def test_unroutable_endpoints_are_skipped_with_errors() -> None:
    points = [FAR, FAR, *line_of(5), FAR]
    result, errors = answer_track(Router(resolve(Lean()), "car", "fastest"), track(points))
    assert result is not None and result.points_used == 5 and (result.first.line, result.last.line) == (4, 8)
    assert sorted(e.line or 0 for e in errors) == [2, 3, 9]
    assert {e.code for e in errors} == {"ROUTE_ERROR_POINT_NOT_ROUTABLE"}
    assert all("skipped from the track" in e.message for e in errors)


@pytest.mark.parametrize("points", [[], [A], [FAR, A]])
def test_too_short_track_is_a_whole_track_error(points: list[LatLon]) -> None:
    result, errors = answer_track(Router(resolve(Lean()), "car", "fastest"), track(points))
    assert result is None
    assert errors[-1].line is None and errors[-1].code == "DETOUR_ERROR_TRACK_TOO_SHORT"


def test_no_route_between_the_ends_is_a_whole_track_error() -> None:
    result, errors = answer_track(Router(resolve(RouteOnly()), "car", "fastest"), track([A, B, ISLAND]))
    assert result is None and [(e.line, e.code) for e in errors] == [(None, "ROUTE_ERROR_NO_ROUTE")]
    assert "line 2" in errors[0].message and "line 4" in errors[0].message


def test_elapsed_time_from_the_times() -> None:
    points = [TrackPoint(2 + i, p, 1000.0 + 5 * i) for i, p in enumerate(line_of(4))]
    result, _ = answer_track(Router(resolve(Lean()), "car", "fastest"), points)
    assert result is not None and result.elapsed_s == 15
