"""Request parsing: stops, flags, parameters, limits and the 1200 km rule (no HTTP here)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from common.errors import ApiError, DiameterTooLarge, InvalidParameter, MalformedBody, TooManyStops
from common.geo import EARTH_RADIUS_M, LatLon, haversine_m
from optimize_service.geo import farthest_pair
from optimize_service.stops.model import MAX_STOPS
from optimize_service.stops.parsing import parse_request

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def stop(name: Any = "A", lat: Any = 43.73, lon: Any = 7.42, **flags: Any) -> dict[str, Any]:
    return {"name": name, "coordinate": {"lat": lat, "lon": lon}, **flags}


def parameters(error: ApiError) -> list[str | None]:
    return [v.parameter for v in error.violations]


def test_plain_request_defaults() -> None:
    parsed = parse_request([stop("A"), stop("B", lon=7.43)], {}, NOW)
    assert [s.name for s in parsed.stops] == ["A", "B"]
    assert parsed.ends.start == 0 and parsed.ends.open and not parsed.ends.round_trip
    options = parsed.options
    assert options.start_time == NOW and options.vehicle == "car" and options.route_type == "fastest"
    assert options.provider is None and options.time_limit_s is None


def test_flags_choose_the_ends() -> None:
    parsed = parse_request([stop("A"), stop("B", start=True), stop("C", destination=True)], {}, NOW)
    assert (parsed.ends.start, parsed.ends.end) == (1, 2)
    round_trip = parse_request([stop("A"), stop("B", start=True, destination=True)], {}, NOW)
    assert (round_trip.ends.start, round_trip.ends.end) == (1, 1) and round_trip.ends.round_trip
    # Without a start the first stop starts; a destination on it makes a round trip too.
    first = parse_request([stop("A", destination=True), stop("B")], {}, NOW)
    assert (first.ends.start, first.ends.end) == (0, 0)


def test_every_broken_stop_is_reported_at_once() -> None:
    body = [
        {"coordinate": {"lat": 43.7, "lon": 7.4}},  # no name
        stop(name=5),
        stop(lat=91),
        stop(lon=-180.5),
        stop(lat=True, lon="7.4"),
        {"name": "no coordinate"},
        stop(lat=None),
        stop(start="yes", destination=1),
        "not an object",
        stop(serviceTime=-5),
    ]
    with pytest.raises(InvalidParameter) as caught:
        parse_request(body, {}, NOW)
    assert parameters(caught.value) == [
        "stops[0].name",
        "stops[1].name",
        "stops[2].coordinate.lat",
        "stops[3].coordinate.lon",
        "stops[4].coordinate.lat",
        "stops[4].coordinate.lon",
        "stops[5].coordinate",
        "stops[6].coordinate.lat",
        "stops[7].start",
        "stops[7].destination",
        "stops[8]",
        "stops[9].serviceTime",
    ]
    assert all(v.code == "ERROR_INVALID_PARAMETER" for v in caught.value.violations)
    assert "got True" in caught.value.violations[4].message


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "43.7", [43.7], {"v": 1}, False])
def test_lat_must_be_a_finite_number(value: Any) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_request([stop(lat=value)], {}, NOW)
    assert parameters(caught.value) == ["stops[0].coordinate.lat"]


def test_two_starts_and_two_destinations_name_the_extra_stops() -> None:
    body = [stop("A", start=True), stop("B", start=True), stop("C", destination=True), stop("D", destination=True)]
    with pytest.raises(InvalidParameter) as caught:
        parse_request(body, {}, NOW)
    assert parameters(caught.value) == ["stops[1].start", "stops[3].destination"]
    assert "(stops[0] already is)" in caught.value.violations[0].message


def test_body_and_parameters_are_reported_together() -> None:
    with pytest.raises(MalformedBody) as caught:
        parse_request({"stops": []}, {"startTime": "tomorrow", "vehicle": "rocket"}, NOW)
    assert parameters(caught.value) == [None, "startTime", "vehicle"]
    assert caught.value.violations[1].code == "ERROR_INVALID_PARAMETER"
    with pytest.raises(InvalidParameter) as empty:
        parse_request([], {}, NOW)
    assert parameters(empty.value) == ["stops"]


def test_too_many_stops_is_413_before_anything_else() -> None:
    parse_request([stop(lon=7.4 + i * 1e-5) for i in range(MAX_STOPS)], {}, NOW)
    with pytest.raises(TooManyStops) as caught:
        parse_request([stop()] * (MAX_STOPS + 1) + ["broken"], {"startTime": "x"}, NOW)
    assert caught.value.status == 413 and caught.value.code == "OPTIMIZE_ERROR_TOO_MANY_STOPS"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2025-01-01T22:00:00+05:30", timedelta(hours=5.5)),
        ("2025-01-01T22:00:00 05:30", timedelta(hours=5.5)),  # an unencoded '+' arrives as a space
        ("2025-01-01T22:00:00-08:00", timedelta(hours=-8)),
        ("2025-01-01T22:00:00Z", timedelta(0)),
        ("20250101T220000+0100", timedelta(hours=1)),
    ],
)
def test_start_time_keeps_its_offset(raw: str, expected: timedelta) -> None:
    parsed = parse_request([stop()], {"startTime": raw}, NOW)
    offset = parsed.options.start_time.utcoffset()
    assert offset == expected
    assert parsed.options.start_time.hour == 22


@pytest.mark.parametrize("raw", ["2025-01-01T08:00:00", "2025-01-01", "08:00+01:00", "yesterday", ""])
def test_start_time_without_offset_or_malformed_is_400(raw: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_request([stop()], {"startTime": raw}, NOW)
    assert parameters(caught.value) == ["startTime"]


@pytest.mark.parametrize(
    "raw",
    ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-14:00", "9000-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "1899-12-31T23:59:59Z"],
)
def test_start_time_out_of_the_calendar_s_room_is_400_naming_it(raw: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_request([stop()], {"startTime": raw}, NOW)
    assert parameters(caught.value) == ["startTime"]


@pytest.mark.parametrize("raw", ["8999-12-31T23:59:59Z", "1900-01-01T00:00:00Z"])
def test_start_time_at_the_bounds_is_accepted(raw: str) -> None:
    assert parse_request([stop()], {"startTime": raw}, NOW).options.start_time == datetime.fromisoformat(raw)


def test_options() -> None:
    query = {"vehicle": "Bicycle", "type": "shortest", "timeLimit": "2.5", "provider": "OSRM"}
    options = parse_request([stop()], query, NOW, frozenset({"osrm", "valhalla"})).options
    assert (options.vehicle, options.route_type, options.time_limit_s, options.provider) == ("bicycle", "shortest", 2.5, "osrm")
    bad = {"vehicle": "tank", "type": "scenic", "timeLimit": "nan", "provider": "here"}
    with pytest.raises(InvalidParameter) as caught:
        parse_request([stop()], bad, NOW, frozenset({"osrm"}))
    assert parameters(caught.value) == ["vehicle", "type", "provider", "timeLimit"]
    assert "known: osrm" in caught.value.violations[2].message
    # Without the route service's list the name passes on; the route service checks it then.
    assert parse_request([stop()], {"provider": "here"}, NOW, None).options.provider == "here"


# ---------------------------------------------------------------- the 1200 km rule


def point_at(lat: float, lon: float, distance_m: float, bearing_deg: float) -> tuple[float, float]:
    """The point `distance_m` away on the sphere of EARTH_RADIUS_M (direct geodesic problem)."""
    phi, lam, theta = math.radians(lat), math.radians(lon), math.radians(bearing_deg)
    delta = distance_m / EARTH_RADIUS_M
    phi2 = math.asin(math.sin(phi) * math.cos(delta) + math.cos(phi) * math.sin(delta) * math.cos(theta))
    lam2 = lam + math.atan2(math.sin(theta) * math.sin(delta) * math.cos(phi), math.cos(delta) - math.sin(phi) * math.sin(phi2))
    return math.degrees(phi2), (math.degrees(lam2) + 540) % 360 - 180


def reference_haversine(a: tuple[float, float], b: tuple[float, float]) -> float:
    phi1, phi2 = math.radians(a[0]), math.radians(b[0])
    h = math.sin((phi2 - phi1) / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(math.radians(b[1] - a[1]) / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(math.sqrt(h))


@pytest.mark.parametrize("origin", [(49.4, 8.7), (0.0, 179.5), (-33.9, 151.2), (64.1, -21.9)])
@pytest.mark.parametrize("bearing", [0.0, 45.0, 90.0, 200.0])
def test_diameter_rule_right_at_1200_km(origin: tuple[float, float], bearing: float) -> None:
    near = point_at(*origin, 1_199_000, bearing)
    far = point_at(*origin, 1_201_000, bearing)
    assert reference_haversine(origin, near) == pytest.approx(1_199_000, abs=0.01)
    assert reference_haversine(origin, far) == pytest.approx(1_201_000, abs=0.01)
    middle = point_at(*origin, 600_000, bearing)
    parse_request([stop("A", *origin), stop("M", *middle), stop("B", *near)], {}, NOW)
    with pytest.raises(DiameterTooLarge) as caught:
        parse_request([stop("A", *origin), stop("M", *middle), stop("B", *far)], {}, NOW)
    error = caught.value
    assert (error.status, error.code) == (413, "OPTIMIZE_ERROR_DIAMETER_TOO_LARGE")
    assert "stops[0] ('A') and stops[2] ('B') are 1201.0 km apart" in error.detail


def test_farthest_pair_and_haversine() -> None:
    points = [LatLon(0, 0), LatLon(0, 1), LatLon(0, -2), LatLon(1, 0)]
    i, j, distance = farthest_pair(points)
    assert (i, j) == (1, 2)
    assert distance == pytest.approx(math.radians(3) * EARTH_RADIUS_M)
    assert haversine_m(points[0], points[3]) == pytest.approx(math.radians(1) * EARTH_RADIUS_M)
    assert farthest_pair([LatLon(1, 1)]) == (0, 0, 0.0)
