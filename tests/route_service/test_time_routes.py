"""Routes that know the time (issues 33 and 56): Valhalla's routes with a `date_time`, each rule
by time honoured when its road is reached — a closure on a small made map (networkx the
oracle), Heidelberg's night truck ban on Ludwig-Guttmann-Straße, Plöck closed to heavy trucks by
day, the night speed limit on Neckarstaden listed — and the answer lists the rules it met."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import networkx as nx
import pytest
import shapely
import shapely.geometry

from common.errors import ApiError, InvalidParameter, NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from route_service.app import create_app
from route_service.dataset import Dataset
from route_service.formatter import route_body
from route_service.importing.importer import ImportResult
from route_service.importing.valhalla_build import build_tiles
from route_service.model import IsochroneQuery, Restrictions, RouteQuery, RouteTime
from route_service.parsing import parse_route
from route_service.providers.registry import ProviderRegistry
from route_service.providers.valhalla import ValhallaProvider
from tests.route_service.osm_samples import GateMap, write_gate_map
from tests.route_service.test_route_app import LEGACY, PROBLEM, Client, ClientFactory, make_config

BISMARCKPLATZ = "49.4095,8.6936"
HAUPTSTRASSE = "49.410531,8.698113"  # way 84908668, pedestrian: motor_vehicle destination Mo-Sa 06-11
NECKARSTADEN = ("49.412499,8.700037", "49.413498,8.709124")  # maxspeed 30 @ 22:00-06:00
GUTTMANN = "49.413805,8.653752"  # way 24968886: hgv no @ 19:00-6:00
PLOECK = "49.408794,8.694167"  # way 42440422: access no @ 7:30-19:00 AND weight>7.5
TUESDAY = "2026-12-01T{}:00+01:00"


@pytest.fixture(scope="module")
def heidelberg(city_maps: Callable[[str], ImportResult]) -> ProviderRegistry:
    result = city_maps("heidelberg")
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


def answer(registry: ProviderRegistry, **params: str) -> dict[str, Any]:
    parsed = parse_route({k.replace("_", ""): v for k, v in params.items()}, registry)
    return route_body(parsed.plugin(parsed.query), parsed.query, parsed.provider, "x")


def refusal(registry: ProviderRegistry, **params: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        answer(registry, **params)
    return caught.value


def test_without_a_time_the_route_is_as_before(heidelberg: ProviderRegistry) -> None:
    body = answer(heidelberg, **{"from": BISMARCKPLATZ, "to": HAUPTSTRASSE})
    assert body["provider"] == "osrm" and "timeRules" not in body and "departureTime" not in body


def test_the_night_speed_limit_is_listed_on_the_night_route(heidelberg: ProviderRegistry) -> None:
    """Valhalla answers routes at a time and lists the rules that held where the route drove,
    when it got there. (It does not cost `maxspeed:conditional`: night speeds come as predicted
    speeds from the import, issue 56's other step.)"""
    night = answer(heidelberg, **{"from": NECKARSTADEN[0], "to": NECKARSTADEN[1], "departureTime": TUESDAY.format("23:00")})
    noon = answer(heidelberg, **{"from": NECKARSTADEN[0], "to": NECKARSTADEN[1], "departureTime": TUESDAY.format("12:00")})
    assert night["provider"] == noon["provider"] == "valhalla"
    met = [rule for rule in night["timeRules"] if rule["road"] == "Neckarstaden"]
    assert met and all(rule["effect"] == "speed limit 30 km/h" for rule in met)
    assert all(night["departureTime"] <= rule["at"] <= night["arrivalTime"] for rule in night["timeRules"])
    assert noon["timeRules"] == []


def test_a_truck_ban_at_night_refuses_a_stop_on_its_street_until_the_morning(heidelberg: ProviderRegistry) -> None:
    """`hgv:conditional=no @ (19:00-6:00)` on Ludwig-Guttmann-Straße, applied by Valhalla in the
    tiles' time zone (Europe/Berlin): at 20:00 no route, named with the next opening."""
    error = refusal(heidelberg, **{"from": BISMARCKPLATZ, "to": GUTTMANN, "vehicle": "truck",
                                  "departureTime": TUESDAY.format("20:00")})  # fmt: skip
    assert isinstance(error, NoRouteFound) and error.violations[0].parameter == "to"
    assert "Ludwig-Guttmann-Straße (way 24968886)" in str(error) and "It next opens at 2026-12-02T06:00+01:00" in str(error)
    day = answer(heidelberg, **{"from": BISMARCKPLATZ, "to": GUTTMANN, "vehicle": "truck",
                                "departureTime": TUESDAY.format("10:00")})  # fmt: skip
    assert day["provider"] == "valhalla" and day["snappedTo"]["name"] == "Ludwig-Guttmann-Straße"


def test_a_weight_and_time_rule_closes_a_street_to_heavy_trucks_by_day(heidelberg: ProviderRegistry) -> None:
    """`no @ (7:30-19:00 AND weight>7.5)`: an 18 t truck is refused at 10:00 until 19:00 and
    reaches Plöck at 20:00. (Valhalla reads only the time of such a condition, so it closes
    Plöck by day to every truck: decisions.md, issue 56.)"""
    heavy = refusal(heidelberg, **{"from": BISMARCKPLATZ, "to": PLOECK, "vehicle": "truck", "weight": "18",
                                   "departureTime": TUESDAY.format("10:00")})  # fmt: skip
    assert "Plöck" in str(heavy) and "It next opens at 2026-12-01T19:00+01:00" in str(heavy)
    evening = answer(heidelberg, **{"from": BISMARCKPLATZ, "to": PLOECK, "vehicle": "truck", "weight": "18",
                                    "departureTime": TUESDAY.format("20:00")})  # fmt: skip
    assert evening["snappedTo"]["name"] == "Plöck"


def test_an_arrival_time_is_met_by_leaving_the_route_s_duration_before(heidelberg: ProviderRegistry) -> None:
    body = answer(heidelberg, **{"from": BISMARCKPLATZ, "to": GUTTMANN, "vehicle": "truck",
                                 "arrivalTime": TUESDAY.format("10:30")})  # fmt: skip
    assert body["provider"] == "valhalla" and body["arrivalTime"] == "2026-12-01T10:30:00+01:00"
    assert body["departureTime"] < body["arrivalTime"] and body["snappedTo"]["name"] == "Ludwig-Guttmann-Straße"
    error = refusal(heidelberg, **{"from": BISMARCKPLATZ, "to": GUTTMANN, "vehicle": "truck",
                                   "arrivalTime": TUESDAY.format("05:30")})  # fmt: skip
    assert "It next opens at 2026-12-01T06:00+01:00" in str(error)


@pytest.mark.parametrize(
    ("params", "parameter", "message"),
    [
        ({"departureTime": TUESDAY.format("08:00"), "arrivalTime": TUESDAY.format("09:00")}, "arrivalTime", "not both"),
        ({"departureTime": "tomorrow"}, "departureTime", "ISO 8601"),
        ({"arrivalTime": "2026-12-01T08:00:00"}, "arrivalTime", "UTC offset"),
        ({"departureTime": TUESDAY.format("08:00"), "provider": "osrm"}, "departureTime", "use provider=valhalla"),
    ],
)
def test_bad_times_are_named(heidelberg: ProviderRegistry, params: dict[str, str], parameter: str, message: str) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_route({"from": BISMARCKPLATZ, "to": HAUPTSTRASSE, **params}, heidelberg)
    assert caught.value.violations[0].parameter == parameter and message in caught.value.violations[0].message


@pytest.fixture
async def client(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(heidelberg_maps.path.parent, redis_server)))


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_over_http_in_both_formats(client: Client, accept: dict[str, str]) -> None:
    morning = f"/v1/route?from={BISMARCKPLATZ}&to={GUTTMANN}&vehicle=truck&departureTime=2026-12-01T10:00:00%2B01:00"
    response = await client.get(morning, headers=accept)
    body = await response.json()
    assert response.status == 200 and body["timeRules"] == [] and body["departureTime"], body
    response = await client.get(morning.replace("T10:00", "T20:00"), headers=accept)
    text = await response.text()
    assert response.status == 400 and "It next opens at 2026-12-02T06:00+01:00" in text


def timed_query(a: LatLon, b: LatLon, hour: str, arrival: bool = False) -> RouteQuery:
    when = RouteTime(datetime.fromisoformat(TUESDAY.format(hour)), arrival)
    return RouteQuery(a, b, restrictions=Restrictions(time=when))


@pytest.fixture(scope="module")
def gate_map(tmp_path_factory: pytest.TempPathFactory) -> tuple[ValhallaProvider, GateMap]:
    directory = tmp_path_factory.mktemp("gate")
    gate = write_gate_map(directory)
    build_tiles(gate.pbf, directory / "dataset", threads=1)
    return ValhallaProvider.load(directory / "dataset"), gate


def oracle_m(gate: GateMap, without: str = "") -> float:
    """The shortest distance from start to end over the map's ways (networkx), but `without`."""
    graph = nx.Graph()
    for name, points in gate.ways:
        if name != without:
            for a, b in pairwise(points):
                graph.add_edge(a, b, length=haversine_m(a, b))
    return float(nx.shortest_path_length(graph, gate.start, gate.end, weight="length"))


@pytest.mark.parametrize(
    ("hour", "arrival", "through_gate"),
    [("07:30", False, True),  # open when reached (07:35)
     ("07:57", False, False),  # open at departure, closed when reached (08:02): round the ring
     ("08:57", False, True),  # closed at departure, open when reached (09:02)
     ("08:30", True, False),  # arriving by 08:30: round the ring (through the gate: leave by 07:53)
     ("07:50", True, True)],
)  # fmt: skip
def test_a_closure_applies_when_its_road_is_reached(gate_map: tuple[ValhallaProvider, GateMap], hour: str,
                                                     arrival: bool, through_gate: bool) -> None:  # fmt: skip
    """`motor_vehicle:conditional=no @ (08:00-09:00)` on Gate, 5 minutes' drive from the start:
    Valhalla's route takes the gate exactly when it is open as the route reaches it (the
    networkx oracle: the shortest way with and without it)."""
    provider, gate = gate_map
    found = provider.route(timed_query(gate.start, gate.end, hour, arrival))
    expected = oracle_m(gate) if through_gate else oracle_m(gate, without="Gate")
    assert found.routes[0].distance_m == pytest.approx(expected, rel=0.01)
    assert found.time_rules == [] and found.departure is not None and found.arrival is not None
    assert (found.arrival if arrival else found.departure) == datetime.fromisoformat(TUESDAY.format(hour))
    assert found.arrival - found.departure == timedelta(seconds=found.routes[0].duration_s)


def test_a_route_at_a_time_lists_the_rules_that_held_where_it_drove(gate_map: tuple[ValhallaProvider, GateMap]) -> None:
    """Approach's night limit (`maxspeed:conditional=30 @ (22:00-06:00)`) is listed for a car at
    23:00, when it reached the road, and not for a bicycle (no motor vehicle), which takes the
    gate at 08:30; the map's next rule changes are the gate's and the night limit's."""
    provider, gate = gate_map
    night = provider.route(timed_query(gate.start, gate.end, "23:00"))
    assert [(m.road, m.rule, m.effect, m.at) for m in night.time_rules] == [
        ("Approach", "maxspeed:conditional=30 @ (22:00-06:00)", "speed limit 30 km/h", night.departure)
    ]
    query = RouteQuery(gate.start, gate.end, "bicycle", restrictions=timed_query(gate.start, gate.end, "08:30").restrictions)
    cycled = provider.route(query)
    assert cycled.time_rules == [] and cycled.routes[0].distance_m == pytest.approx(oracle_m(gate), rel=0.01)
    assert provider.next_rule_change(datetime.fromisoformat(TUESDAY.format("07:00"))) == datetime.fromisoformat(
        TUESDAY.format("08:00")
    )
    assert provider.next_rule_change(datetime.fromisoformat(TUESDAY.format("09:30"))).hour == 22
    assert provider.timed_near([gate.start]) and not provider.timed_near([LatLon(49.5, 9.0)])


@pytest.mark.parametrize(("hour", "through_gate"), [("07:00", True), ("08:30", False)])
def test_an_isochrone_at_a_time_passes_the_gate_only_while_it_is_open(gate_map: tuple[ValhallaProvider, GateMap],
                                                                      hour: str, through_gate: bool) -> None:  # fmt: skip
    """Two minutes from 200 m before the junction: through the open gate (500 m) the end is
    inside the area; while it is closed (08:00-09:00) only the ring (2.7 km) leads there, and it
    is not. (From the junction itself Valhalla starts on the gate's own edge, which no search
    checks: test_a_matrix_point_on_a_closed_road_has_no_cells_then.)"""
    provider, gate = gate_map
    before = gate.ways[0][1][-3]
    departure = datetime.fromisoformat(TUESDAY.format(hour))
    found = provider.isochrone(IsochroneQuery(before, (120.0,), departure=departure))
    area = shapely.geometry.shape(found.areas[0])
    assert area.contains(shapely.Point(gate.end.lon - 0.0005, gate.end.lat)) is through_gate
    assert area.contains(shapely.Point(before.lon + 0.0005, before.lat))


@pytest.mark.parametrize(
    ("params", "parameter"),
    [({"arrivalTime": TUESDAY.format("08:00")}, "arrivalTime")],
)  # fmt: skip
def test_an_isochrone_takes_a_departure_from_a_provider_that_knows_the_rules(
    heidelberg: ProviderRegistry, params: dict[str, str], parameter: str
) -> None:
    from route_service.parsing import parse_isochrone

    with pytest.raises(InvalidParameter) as caught:
        parse_isochrone({"point": BISMARCKPLATZ, "time": "600", **params}, heidelberg)
    assert caught.value.violations[0].parameter == parameter


def test_an_end_off_the_roads_at_a_time_gets_the_diagnosis(heidelberg: ProviderRegistry) -> None:
    """The timed route's not-routable error goes through the diagnostics like any other."""
    error = refusal(heidelberg, **{"from": BISMARCKPLATZ, "to": "49.0,8.69", "departureTime": TUESDAY.format("08:00")})
    assert isinstance(error, PointNotRoutable) and error.violations[0].parameter == "to"
    assert "(the nearest is 38 km away)" in str(error) and "outside the loaded map" in str(error)


async def trace_answer(client: Client, times: list[float] | None) -> dict[str, Any]:
    """A car's trace along Neckarstaden (the plain route's points), matched with its times."""
    response = await client.get(f"/v1/route?from={NECKARSTADEN[0]}&to={NECKARSTADEN[1]}")
    line = (await response.json())["routes"][0]["geometry"]["coordinates"]
    points = [{"lat": lat, "lon": lon} for lon, lat in line]
    for point, at in zip(points, times or [], strict=False):
        point["time"] = at
    response = await client.post("/v1/match", json={"points": points})
    assert response.status == 200
    return dict(await response.json())


async def test_a_trace_with_its_own_times_lists_the_rules_it_met(client: Client) -> None:
    """POST /v1/match at the trace's times: at 23:30 the night limit of Neckarstaden held where
    the car drove; at noon nothing did; without times the answer has no timeRules."""
    night = datetime.fromisoformat(TUESDAY.format("23:30")).timestamp()
    noon = datetime.fromisoformat(TUESDAY.format("12:00")).timestamp()
    at_night = await trace_answer(client, [night + 5 * i for i in range(1000)])
    assert any(rule["road"] == "Neckarstaden" and rule["effect"] == "speed limit 30 km/h" for rule in at_night["timeRules"])
    assert (await trace_answer(client, [noon + 5 * i for i in range(1000)]))["timeRules"] == []
    assert "timeRules" not in await trace_answer(client, None)
