"""Matrices and tours at a time (issues 33 and 56): POST /v1/matrix's `departureTime` answered by
Valhalla — Heidelberg's night truck ban on Ludwig-Guttmann-Straße (`hgv:conditional=no @
(19:00-6:00)`) closes its cells at night and lists its windows, the internal `whenOpen` the
optimizer uses gives it the cells of its next opening, a closure met on the way is honoured in
the direction Valhalla searches (the made gate map, networkx the oracle), the night speed limit
is in the cells — and the optimizer's tours and detour files, each leg at its own time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import pairwise, product
from typing import Any

import numpy as np
import orjson
import pytest

from common.errors import InvalidParameter, NoRouteFound
from common.geo import LatLon
from route_service.dataset import Dataset
from route_service.detour.csvfile import DetourCase
from route_service.detour.engine import answer_cases
from route_service.detour_handlers import parse_options
from route_service.formatter import matrix_body, route_body, waypoints_body
from route_service.importing.importer import ImportResult
from route_service.model import MatrixQuery, Restrictions, RouteTime
from route_service.parsing import parse_matrix, parse_public_matrix, parse_route, parse_waypoints
from route_service.providers.registry import ProviderRegistry
from route_service.providers.valhalla import ValhallaProvider
from tests.conftest import EVERY_MAP
from tests.route_service.osm_samples import GateMap
from tests.route_service.test_time_routes import BISMARCKPLATZ, GUTTMANN, NECKARSTADEN, TUESDAY, gate_map, oracle_m

MOENCHGASSE = "49.4128,8.7117"  # east of the old town
BAN = "hgv:conditional=no @ (19:00-6:00)"
GUTTMANN_WAY = 24968886
__all__ = ["gate_map"]  # the made gate map, a fixture shared with the route tests


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
    body = matrix_body(parsed.plugin(parsed.query), parsed.provider, "x", when.at if when else None)
    return dict(orjson.loads(orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)))  # as sent: NaN is null


def route_at(registry: ProviderRegistry, a: str, b: str, at: str, vehicle: str = "car") -> tuple[float, float]:
    """The route's (duration, distance) leaving at `at`."""
    parsed = parse_route({"from": a, "to": b, "departureTime": at, "vehicle": vehicle}, registry)
    best = parsed.plugin(parsed.query).routes[0]
    return best.duration_s, best.distance_m


def test_a_truck_stop_on_the_night_ban_street_is_reached_by_day_and_its_windows_are_listed(
    heidelberg: ProviderRegistry,
) -> None:
    body = matrix(heidelberg, [BISMARCKPLATZ], [GUTTMANN, MOENCHGASSE], vehicle="truck", departureTime=TUESDAY.format("10:00"))
    assert body["provider"] == "valhalla" and body["departureTime"] == "2026-12-01T10:00:00+01:00"
    assert body["durations"][0][0] is not None and body["durations"][0][1] is not None
    [guttmann] = body["timedPoints"]
    assert guttmann["point"] == "destinations[0]" and guttmann["way"] == GUTTMANN_WAY
    assert guttmann["road"] == "Ludwig-Guttmann-Straße" and guttmann["rules"] == [BAN]
    assert guttmann["openAtDeparture"] is True
    assert guttmann["windows"][:2] == [
        {"from": "2026-12-01T10:00:00+01:00", "until": "2026-12-01T19:00:00+01:00"},
        {"from": "2026-12-02T06:00:00+01:00", "until": "2026-12-02T19:00:00+01:00"},
    ]
    # every day of the week, cut 8 days after the departure
    assert len(guttmann["windows"]) == 9
    assert guttmann["windows"][-1] == {"from": "2026-12-09T06:00:00+01:00", "until": "2026-12-09T10:00:00+01:00"}
    car = matrix(heidelberg, [BISMARCKPLATZ], [GUTTMANN], departureTime=TUESDAY.format("20:00"))
    assert car["timedPoints"] == [] and car["durations"][0][0] is not None  # the ban is the trucks'


def test_after_the_ban_begins_the_stop_has_no_cells_but_the_others_do(heidelberg: ProviderRegistry) -> None:
    body = matrix(heidelberg, [BISMARCKPLATZ, GUTTMANN], [GUTTMANN, MOENCHGASSE], vehicle="truck",
                  departureTime=TUESDAY.format("20:00"))  # fmt: skip
    assert body["durations"][0][0] is None and body["distances"][0][0] is None
    assert body["durations"][0][1] is not None and body["durations"][1] == [None, None]
    assert [p["point"] for p in body["timedPoints"]] == ["sources[1]", "destinations[0]"]
    assert all(p["openAtDeparture"] is False for p in body["timedPoints"])
    assert body["timedPoints"][1]["windows"][0]["from"] == "2026-12-02T06:00:00+01:00"


def test_when_open_gives_the_closed_stop_the_cells_of_its_next_opening(heidelberg: ProviderRegistry) -> None:
    """Its column as reached just after 06:00, its row as left at 06:00: about the day's cells."""
    points = [BISMARCKPLATZ, GUTTMANN, MOENCHGASSE]
    late = matrix(heidelberg, points, points, vehicle="truck", departureTime=TUESDAY.format("20:00"), whenOpen=True)
    day = matrix(heidelberg, points, points, vehicle="truck", departureTime=TUESDAY.format("10:00"))
    assert late["durations"][0][1] == pytest.approx(day["durations"][0][1], rel=0.05)
    assert late["durations"][1][2] == pytest.approx(day["durations"][1][2], rel=0.05)
    assert late["durations"][0][2] == day["durations"][0][2]


def test_cells_agree_with_the_route_at_that_time(heidelberg: ProviderRegistry) -> None:
    at = TUESDAY.format("10:00")
    body = matrix(heidelberg, [BISMARCKPLATZ], [MOENCHGASSE, GUTTMANN], vehicle="truck", departureTime=at)
    for cell, to in zip(body["durations"][0], (MOENCHGASSE, GUTTMANN), strict=True):
        assert cell == pytest.approx(route_at(heidelberg, BISMARCKPLATZ, to, at, "truck")[0], rel=0.05)


@pytest.mark.parametrize(("hour", "through_gate"), [("07:30", True), ("07:57", False), ("08:57", True)])
def test_a_closure_met_on_the_way_holds_in_every_cell_whichever_side_is_larger(
    gate_map: tuple[ValhallaProvider, GateMap], hour: str, through_gate: bool
) -> None:
    """The gate (closed 08:00-09:00) five minutes from the start: leaving at 07:57 the cells go
    round the ring, as the route does. Valhalla applies a departure time only searching forward
    from the sources, so three sources to one target are searched as three forward blocks."""
    provider, gate = gate_map
    sides = [points[1] for name, points in gate.ways if name == "Side"][:2]
    departure = RouteTime(datetime.fromisoformat(TUESDAY.format(hour)))
    query = MatrixQuery([gate.start, *sides], [gate.end], restrictions=Restrictions(time=departure))
    distances = np.asarray(provider.matrix(query).distances_m)[:, 0]
    expected = oracle_m(gate) if through_gate else oracle_m(gate, without="Gate")
    assert distances[0] == pytest.approx(expected, rel=0.01)
    assert np.abs(distances[1:] - distances[0]).max() < 400  # the same way (the ring is 2.2 km longer)


def test_a_matrix_point_on_a_closed_road_has_no_cells_then(gate_map: tuple[ValhallaProvider, GateMap]) -> None:
    """A point on the gate at 08:30: Valhalla does not check the road a search starts on, the
    matrix does (the timed index): no cells, listed with its windows."""
    provider, gate = gate_map
    on_gate = gate.ways[1][1][0].lon + 0.003
    middle = LatLon(gate.end.lat, on_gate)
    departure = Restrictions(time=RouteTime(datetime.fromisoformat(TUESDAY.format("08:30"))))
    found = provider.matrix(MatrixQuery([middle, gate.start], [gate.end, middle], restrictions=departure))
    durations = np.asarray(found.durations_s)
    assert np.isnan(durations[0]).all() and np.isnan(durations[:, 1]).all() and not np.isnan(durations[1, 0])
    assert [(p.parameter, p.open_at_departure) for p in found.timed_points] == [("sources[0]", False), ("destinations[1]", False)]
    assert found.timed_points[0].windows[0][0] == datetime.fromisoformat(TUESDAY.format("09:00"))


def test_the_night_speed_limit_is_in_the_night_cells(heidelberg: ProviderRegistry) -> None:
    """At 23:30 Neckarstaden's 30 km/h makes the way round through the old town (3.1 km) the
    faster, at noon the river road (3.9 km): each cell is the route then."""
    night = matrix(heidelberg, [NECKARSTADEN[0]], [NECKARSTADEN[1]], departureTime=TUESDAY.format("23:30"))
    noon = matrix(heidelberg, [NECKARSTADEN[0]], [NECKARSTADEN[1]], departureTime=TUESDAY.format("12:00"))
    assert night["distances"][0][0] < noon["distances"][0][0] - 500
    for body, hour in ((night, "23:30"), (noon, "12:00")):
        duration, distance = route_at(heidelberg, NECKARSTADEN[0], NECKARSTADEN[1], TUESDAY.format(hour))
        assert body["durations"][0][0] == pytest.approx(duration, rel=0.02)
        assert body["distances"][0][0] == pytest.approx(distance, rel=0.01)


def test_without_a_time_the_matrix_is_as_before(heidelberg: ProviderRegistry) -> None:
    body = matrix(heidelberg, [BISMARCKPLATZ], [GUTTMANN])
    assert body["provider"] == "osrm" and "timedPoints" not in body and "departureTime" not in body


@pytest.mark.parametrize(
    ("fields", "parameter", "message"),
    [
        ({"arrivalTime": TUESDAY.format("08:00")}, "arrivalTime", "give departureTime"),
        ({"departureTime": "2026-12-01T08:00:00"}, "departureTime", "UTC offset"),
        ({"departureTime": 8}, "departureTime", "ISO 8601"),
        ({"departureTime": TUESDAY.format("08:00"), "provider": "osrm"}, "departureTime", "use provider=valhalla"),
    ],
)
def test_bad_matrix_times_are_named(heidelberg: ProviderRegistry, fields: dict[str, Any], parameter: str,
                                    message: str) -> None:  # fmt: skip
    with pytest.raises(InvalidParameter) as caught:
        matrix(heidelberg, [BISMARCKPLATZ], [GUTTMANN], **fields)
    assert [(v.parameter, message in v.message) for v in caught.value.violations] == [(parameter, True)]


def test_every_shared_extract_answers_a_matrix_at_a_time(city_maps: Callable[[str], ImportResult]) -> None:
    """The merged map of all five extracts: Heidelberg's rules still apply; Helsinki has no road
    with rules by time near, so its cells at a time are the default provider's, as without a
    time (ProviderRegistry.moot_time), and so is its route, which still says when it leaves."""
    result = city_maps("all")
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    body = matrix(registry, [BISMARCKPLATZ], [GUTTMANN], vehicle="truck", departureTime=TUESDAY.format("20:00"))
    assert body["provider"] == "valhalla" and body["durations"][0][0] is None
    assert body["timedPoints"][0]["way"] == GUTTMANN_WAY
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
    """The optimizer's truck tour at a time: leaving Bismarckplatz at 18:35 Ludwig-Guttmann-Straße
    is reached before the 19:00 ban; with 30 minutes at Mönchgasse first, the leg there leaves
    after 19:00 and the stop is refused, named with its next opening. Given leg departures, each leg leaves then."""
    stops = [BISMARCKPLATZ, MOENCHGASSE, GUTTMANN]
    quick = tour(heidelberg, stops, vehicle="truck", departureTime=TUESDAY.format("18:35"), serviceTimes=[0, 0, 0])
    assert quick["provider"] == "valhalla" and len(quick["legs"]) == 2
    with pytest.raises(NoRouteFound) as caught:
        tour(heidelberg, stops, vehicle="truck", departureTime=TUESDAY.format("18:35"), serviceTimes=[0, 1800, 0])
    assert caught.value.violations[0].parameter == "waypoints[2]" and "It next opens at" in str(caught.value)
    night = [BISMARCKPLATZ, NECKARSTADEN[0], NECKARSTADEN[1]]
    given = tour(heidelberg, night, legDepartures=[TUESDAY.format("22:30"), TUESDAY.format("23:00")])
    assert given["legs"][1]["timeRules"][0]["at"].startswith("2026-12-01T23:0")


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
        tour(heidelberg, [BISMARCKPLATZ, MOENCHGASSE, GUTTMANN], **fields)
    assert parameter in [v.parameter for v in caught.value.violations]


def detour_lines(registry: ProviderRegistry, hour: str) -> tuple[list[Any], list[Any]]:
    router = parse_options({"departureTime": TUESDAY.format(hour), "vehicle": "truck"}, registry)
    lines = [DetourCase(2, "ban", *(LatLon(*map(float, p.split(","))) for p in (BISMARCKPLATZ, GUTTMANN, MOENCHGASSE))),
             DetourCase(3, "outside", *(LatLon(*map(float, p.split(","))) for p in (BISMARCKPLATZ, MOENCHGASSE, NECKARSTADEN[0])))]  # fmt: skip
    return answer_cases(router, lines)


def test_a_detour_file_at_a_time_routes_every_line_then(heidelberg: ProviderRegistry) -> None:
    """`departureTime` on the detour file: every line's routes leave then. A via point on the
    night-ban street is reached at 10:00; at 20:00 that line alone fails, with the next
    opening, and the other is answered."""
    answered, errors = detour_lines(heidelberg, "10:00")
    assert [r.case.id for r in answered] == ["ban", "outside"] and errors == []
    answered, errors = detour_lines(heidelberg, "20:00")
    assert [r.case.id for r in answered] == ["outside"]
    assert [(e.line, e.code) for e in errors] == [(2, "ROUTE_ERROR_NO_ROUTE")]
    assert "It next opens at 2026-12-02T06:00+01:00" in errors[0].message


def test_a_detour_file_refuses_an_arrival_time(heidelberg: ProviderRegistry) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_options({"arrivalTime": TUESDAY.format("08:00")}, heidelberg)
    assert caught.value.violations[0].parameter == "arrivalTime"


# Ways whose rules for some vehicle depend on the time, in Valhalla's timed index (the access
# keys Valhalla reads and `maxspeed:conditional`).
TIMED_WAYS = {"heidelberg": 126, "munich": 21, "helsinki": 0, "monaco": 0, "andorra": 0}


@pytest.mark.parametrize("name", EVERY_MAP)
def test_every_extract_keeps_its_roads_with_rules_by_time(city_maps: Callable[[str], ImportResult], name: str) -> None:
    """Each shared extract and the merged map: its timed ways (Munich's: bicycle rules and speed
    limits), and every way's car, truck and bicycle windows over
    a week evaluated, sorted and apart (a map without any answers without them)."""
    result = city_maps(name)
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    valhalla = registry.sources["valhalla"]
    assert isinstance(valhalla, ValhallaProvider) and valhalla.timed is not None
    timed = valhalla.timed
    assert len(timed) == (sum(TIMED_WAYS.values()) if name == "all" else TIMED_WAYS[name])
    start = datetime.fromisoformat(TUESDAY.format("00:00"))
    limited = 0
    for i, vehicle in product(range(len(timed)), ("car", "truck", "bicycle")):
        windows = timed.windows(i, vehicle, start, start + timedelta(days=7), None)
        assert all(a < b for a, b in windows) and all(b1 <= a2 for (_, b1), (a2, _) in pairwise(windows))
        limited += windows != [(start, start + timedelta(days=7))]
    assert (limited > 0) == (name in ("heidelberg", "munich", "all"))
