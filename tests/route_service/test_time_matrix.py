"""Matrices and tours at a time (issue 33): POST /v1/matrix's `departureTime` on Heidelberg —
cells into the old town's delivery zone only in its window, each point's windows listed, the
night speed limit in the cells, the internal `whenOpen` the optimizer uses to visit a closed stop
later — and the optimizer's tours through /internal/route, each leg at its own time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from common.errors import InvalidParameter, NoRouteFound
from common.geo import LatLon
from route_service.dataset import Dataset
from route_service.detour.csvfile import DetourCase
from route_service.detour.engine import answer_cases
from route_service.detour_handlers import parse_options
from route_service.formatter import matrix_body, route_body, waypoints_body
from route_service.graph_engine.timed import open_windows
from route_service.importing.importer import ImportResult
from route_service.model import MatrixQuery, Restrictions, RouteTime
from route_service.parsing import parse_matrix, parse_public_matrix, parse_route, parse_waypoints
from route_service.providers.graph import GraphProvider
from route_service.providers.registry import ProviderRegistry
from route_service.providers.valhalla import ValhallaProvider
from tests.conftest import EVERY_MAP
from tests.route_service.osm_samples import ZoneMap
from tests.route_service.test_time_routes import BISMARCKPLATZ, HAUPTSTRASSE, NECKARSTADEN, TUESDAY, zone_map

MOENCHGASSE = "49.4128,8.7117"  # east of the old town: a car from Bismarckplatz passes it by
__all__ = ["zone_map"]  # the synthetic zone map, a fixture shared with the route tests


@pytest.fixture(scope="module")
def heidelberg(city_maps: Callable[[str], ImportResult]) -> ProviderRegistry:
    result = city_maps("heidelberg")
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


def point(text: str) -> dict[str, float]:
    lat, lon = text.split(",")
    return {"lat": float(lat), "lon": float(lon)}


def matrix(registry: ProviderRegistry, sources: list[str], destinations: list[str], **fields: Any) -> dict[str, Any]:
    body = {"sources": [point(p) for p in sources], "destinations": [point(p) for p in destinations], **fields}
    parsed = parse_matrix(body, registry) if "whenOpen" in fields else parse_public_matrix(body, registry, 10_000, "x")
    when = parsed.query.restrictions.time
    return matrix_body(parsed.plugin(parsed.query), parsed.provider, "x", when.at if when else None)


def route_duration(registry: ProviderRegistry, a: str, b: str, at: str) -> float:
    """The graph's route at a time: the matrices' engine at a time in this step (routes at a
    time are Valhalla's, test_time_routes)."""
    parsed = parse_route({"from": a, "to": b, "departureTime": at, "provider": "graph"}, registry)
    return parsed.plugin(parsed.query).routes[0].duration_s


def test_a_stop_in_the_old_town_is_reached_in_its_window_and_its_windows_are_listed(heidelberg: ProviderRegistry) -> None:
    body = matrix(heidelberg, [BISMARCKPLATZ], [HAUPTSTRASSE, MOENCHGASSE], departureTime=TUESDAY.format("08:00"))
    assert body["provider"] == "graph" and body["departureTime"] == "2026-12-01T08:00:00+01:00"
    assert body["durations"][0][0] is not None and body["durations"][0][1] is not None
    [hauptstrasse] = body["timedPoints"]
    assert hauptstrasse["point"] == "destinations[0]" and hauptstrasse["way"] == 84908668
    assert hauptstrasse["rules"] == ["motor_vehicle:conditional=destination @ (Mo-Sa 06:00-11:00)"]
    assert hauptstrasse["openAtDeparture"] is True
    assert hauptstrasse["windows"][:2] == [
        {"from": "2026-12-01T08:00:00+01:00", "until": "2026-12-01T11:00:00+01:00"},
        {"from": "2026-12-02T06:00:00+01:00", "until": "2026-12-02T11:00:00+01:00"},
    ]
    assert all(w["from"][11:16] == "06:00" for w in hauptstrasse["windows"][1:])  # no Sunday window
    # Tuesday to Saturday, Monday to Wednesday of the next week, cut 8 days after the departure
    assert len(hauptstrasse["windows"]) == 8
    assert hauptstrasse["windows"][-1] == {"from": "2026-12-09T06:00:00+01:00", "until": "2026-12-09T08:00:00+01:00"}


def test_after_the_window_the_stop_has_no_cells_but_the_others_do(heidelberg: ProviderRegistry) -> None:
    body = matrix(heidelberg, [BISMARCKPLATZ], [HAUPTSTRASSE, MOENCHGASSE], departureTime=TUESDAY.format("14:00"))
    assert body["durations"][0][0] is None and body["distances"][0][0] is None
    assert body["durations"][0][1] is not None
    [hauptstrasse] = body["timedPoints"]
    assert hauptstrasse["openAtDeparture"] is False
    assert hauptstrasse["windows"][0]["from"] == "2026-12-02T06:00:00+01:00"


def test_when_open_gives_the_closed_stop_the_cells_of_its_next_opening(heidelberg: ProviderRegistry) -> None:
    late = matrix(heidelberg, [BISMARCKPLATZ], [HAUPTSTRASSE], departureTime=TUESDAY.format("14:00"), whenOpen=True)
    morning = matrix(heidelberg, [BISMARCKPLATZ], [HAUPTSTRASSE], departureTime=TUESDAY.format("08:00"))
    assert late["durations"][0][0] == pytest.approx(morning["durations"][0][0], rel=0.01)


def test_cells_agree_with_the_route_at_that_time_so_no_zone_is_a_shortcut(heidelberg: ProviderRegistry) -> None:
    """The route at 08:00 never crosses the old town to pass it (test_time_routes): the matrix
    cell of the same trip costs the same, and a delivery into the zone is reached through it."""
    at = TUESDAY.format("08:00")
    body = matrix(heidelberg, [BISMARCKPLATZ], [MOENCHGASSE, HAUPTSTRASSE], departureTime=at)
    assert body["durations"][0][0] == pytest.approx(route_duration(heidelberg, BISMARCKPLATZ, MOENCHGASSE, at), rel=0.02)
    assert body["durations"][0][1] == pytest.approx(route_duration(heidelberg, BISMARCKPLATZ, HAUPTSTRASSE, at), rel=0.02)


def test_a_delivery_zone_opens_only_for_the_cells_of_a_destination_inside(zone_map: tuple[GraphProvider, ZoneMap]) -> None:
    """The synthetic zone map: west to east the zone's street is 730 m, the detour 5 km. In one
    matrix at 08:00 the cell to the east end takes the detour, the one inside drives in."""
    provider, zone = zone_map
    departure = datetime.fromisoformat(TUESDAY.format("08:00"))
    query = MatrixQuery([zone.west], [zone.east, zone.inside], restrictions=Restrictions(time=RouteTime(departure)))
    result = provider.matrix(query)
    east, inside = result.distances_m[0]
    assert east is not None and east > 4000 and inside is not None and inside < 400


def test_the_night_speed_limit_is_in_the_night_cells(heidelberg: ProviderRegistry) -> None:
    night = matrix(heidelberg, [NECKARSTADEN[0]], [NECKARSTADEN[1]], departureTime=TUESDAY.format("23:30"))
    noon = matrix(heidelberg, [NECKARSTADEN[0]], [NECKARSTADEN[1]], departureTime=TUESDAY.format("12:00"))
    assert night["durations"][0][0] > noon["durations"][0][0]
    for body, hour in ((night, "23:30"), (noon, "12:00")):
        route = route_duration(heidelberg, NECKARSTADEN[0], NECKARSTADEN[1], TUESDAY.format(hour))
        assert body["durations"][0][0] == pytest.approx(route, rel=0.02)
    assert night["distances"][0][0] == pytest.approx(noon["distances"][0][0], rel=0.01)
    shortest = matrix(heidelberg, [NECKARSTADEN[0]], [NECKARSTADEN[1]], departureTime=TUESDAY.format("23:30"), type="shortest")
    assert shortest["durations"][0][0] == pytest.approx(night["durations"][0][0], rel=0.05)


def test_without_a_time_the_matrix_is_as_before(heidelberg: ProviderRegistry) -> None:
    body = matrix(heidelberg, [BISMARCKPLATZ], [HAUPTSTRASSE])
    assert body["provider"] == "osrm" and "timedPoints" not in body and "departureTime" not in body


@pytest.mark.parametrize(
    ("fields", "parameter", "message"),
    [
        ({"arrivalTime": TUESDAY.format("08:00")}, "arrivalTime", "give departureTime"),
        ({"departureTime": "2026-12-01T08:00:00"}, "departureTime", "UTC offset"),
        ({"departureTime": 8}, "departureTime", "ISO 8601"),
        ({"departureTime": TUESDAY.format("08:00"), "provider": "osrm"}, "departureTime", "use provider=graph"),
    ],
)
def test_bad_matrix_times_are_named(heidelberg: ProviderRegistry, fields: dict[str, Any], parameter: str,
                                    message: str) -> None:  # fmt: skip
    with pytest.raises(InvalidParameter) as caught:
        matrix(heidelberg, [BISMARCKPLATZ], [HAUPTSTRASSE], **fields)
    assert [(v.parameter, message in v.message) for v in caught.value.violations] == [(parameter, True)]


def test_every_shared_extract_answers_a_matrix_at_a_time(city_maps: Callable[[str], ImportResult]) -> None:
    """The merged map of all five extracts: Heidelberg's rules still apply; Helsinki has no road
    with rules by time near, so its cells at a time are the default provider's, as without a
    time (ProviderRegistry.moot_time), and so is its route, which still says when it leaves."""
    result = city_maps("all")
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    body = matrix(registry, [BISMARCKPLATZ], [HAUPTSTRASSE], departureTime=TUESDAY.format("14:00"))
    assert body["provider"] == "graph" and body["durations"][0][0] is None and body["timedPoints"][0]["way"] == 84908668
    helsinki = ["60.1699,24.9384", "60.1719,24.9414"]
    timed = matrix(registry, helsinki, helsinki, departureTime=TUESDAY.format("14:00"))
    plain = matrix(registry, helsinki, helsinki)
    assert timed["provider"] == plain["provider"] == "osrm"
    assert np.array_equal(timed["durations"], plain["durations"], equal_nan=True)
    assert timed["timedPoints"] == [] and timed["departureTime"] == "2026-12-01T14:00:00+01:00"
    parsed = parse_route({"from": helsinki[0], "to": helsinki[1], "arrivalTime": TUESDAY.format("14:00")}, registry)
    route = route_body(parsed.plugin(parsed.query), parsed.query, parsed.provider, "x")
    assert route["provider"] == "osrm" and route["arrivalTime"] == "2026-12-01T14:00:00+01:00" and route["timeRules"] == []
    assert route["departureTime"] < route["arrivalTime"]


def tour(registry: ProviderRegistry, points: list[str], **fields: Any) -> dict[str, Any]:
    parsed = parse_waypoints({"waypoints": [point(p) for p in points], **fields}, registry)
    return waypoints_body(parsed.plugin(parsed.query), parsed.provider, "x", parsed.query.restrictions.time is not None)


def test_a_tour_s_legs_leave_on_arrival_plus_service_and_meet_the_rules_then(heidelberg: ProviderRegistry) -> None:
    """The optimizer's tour at a time: leaving Bismarckplatz at 10:40 the old town is reached
    before 11:00 and its leg lists the delivery rule; with 20 minutes at Mönchgasse first, the
    leg into the old town leaves after 11:00 and the stop is refused, named."""
    stops = [BISMARCKPLATZ, MOENCHGASSE, HAUPTSTRASSE]
    quick = tour(heidelberg, stops, departureTime=TUESDAY.format("10:40"), serviceTimes=[0, 0, 0])
    assert quick["provider"] == "graph" and len(quick["legs"]) == 2
    assert "84908668" in str([rule["way"] for rule in quick["legs"][1]["timeRules"]])
    with pytest.raises(NoRouteFound) as caught:
        tour(heidelberg, stops, departureTime=TUESDAY.format("10:40"), serviceTimes=[0, 1200, 0])
    assert caught.value.violations[0].parameter == "waypoints[2]"
    given = tour(heidelberg, stops, legDepartures=[TUESDAY.format("08:00"), TUESDAY.format("09:00")])
    assert given["legs"][1]["timeRules"][0]["at"].startswith("2026-12-01T09:0")


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"legDepartures": [TUESDAY.format("08:00")]}, "legDepartures"),
        ({"legDepartures": ["08:00", "09:00"]}, "legDepartures[0]"),
        ({"departureTime": TUESDAY.format("08:00"), "serviceTimes": [0, -1, 0]}, "serviceTimes"),
    ],
)
def test_bad_tour_times_are_named(heidelberg: ProviderRegistry, fields: dict[str, Any], parameter: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        tour(heidelberg, [BISMARCKPLATZ, MOENCHGASSE, HAUPTSTRASSE], **fields)
    assert parameter in [v.parameter for v in caught.value.violations]


def detour_lines(registry: ProviderRegistry, hour: str) -> tuple[list[Any], list[Any]]:
    router = parse_options({"departureTime": TUESDAY.format(hour)}, registry)
    lines = [DetourCase(2, "old town", *(LatLon(*map(float, p.split(","))) for p in (BISMARCKPLATZ, MOENCHGASSE, HAUPTSTRASSE))),
             DetourCase(3, "outside", *(LatLon(*map(float, p.split(","))) for p in (BISMARCKPLATZ, MOENCHGASSE, NECKARSTADEN[0])))]  # fmt: skip
    return answer_cases(router, lines)


def test_a_detour_file_at_a_time_routes_every_line_then(heidelberg: ProviderRegistry) -> None:
    """`departureTime` on the detour file: every line's routes leave then. A via point in the
    old town is reached in its window at 08:00; at 14:00 that line alone fails, with the
    next opening, and the other is answered."""
    answered, errors = detour_lines(heidelberg, "08:00")
    assert [r.case.id for r in answered] == ["old town", "outside"] and errors == []
    answered, errors = detour_lines(heidelberg, "14:00")
    assert [r.case.id for r in answered] == ["outside"]
    assert [(e.line, e.code) for e in errors] == [(2, "ROUTE_ERROR_NO_ROUTE")]
    assert "It next opens at 2026-12-02T06:00+01:00" in errors[0].message


def test_a_detour_file_refuses_an_arrival_time(heidelberg: ProviderRegistry) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_options({"arrivalTime": TUESDAY.format("08:00")}, heidelberg)
    assert caught.value.violations[0].parameter == "arrivalTime"


# Ways whose rules for some vehicle depend on the time, counted at import (osmium counted 122
# for Heidelberg by the keys; the import also keeps `maxspeed:conditional` and every
# vehicle's access keys).
TIMED_WAYS = {"heidelberg": 125, "munich": 21, "helsinki": 0, "monaco": 0, "andorra": 0}


@pytest.mark.parametrize("name", EVERY_MAP)
def test_every_extract_keeps_its_roads_with_rules_by_time(city_maps: Callable[[str], ImportResult], name: str) -> None:
    """Each shared extract and the merged map: its timed ways, and every timed piece's car
    windows over a week evaluated (a map without any answers without them)."""
    result = city_maps(name)
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    graph = registry.sources["graph"]
    assert isinstance(graph, GraphProvider)
    timed = graph.engine.timed
    assert len(timed.ways) == (sum(TIMED_WAYS.values()) if name == "all" else TIMED_WAYS[name])
    start = datetime.fromisoformat(TUESDAY.format("00:00"))
    limited = 0
    for piece in timed.pieces.tolist():
        windows = open_windows(timed, "car", piece, start, start + timedelta(days=7), None)
        assert all(a < b for a, b in windows) and all(b1 <= a2 for (_, b1), (a2, _) in pairwise(windows))
        limited += windows != [(start, start + timedelta(days=7))]
    assert (limited > 0) == (name in ("heidelberg", "munich", "all"))
    valhalla = registry.sources["valhalla"]  # its index of the same ways (route_service.timed_index)
    assert isinstance(valhalla, ValhallaProvider) and valhalla.timed is not None
    assert len(valhalla.timed) >= len(timed.ways) and (len(valhalla.timed) > 0) == (len(timed.ways) > 0)
