"""The OSRM provider on real Heidelberg data (imported once per session)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from common.errors import ApiError, InvalidParameter, NoRouteFound, ParameterErrors, PointNotRoutable
from common.geo import LatLon
from route_service.instructions import StepText, instruction
from route_service.model import MatrixQuery, Route, RouteQuery, Step
from route_service.providers.osrm_provider import OsrmProvider, translate
from route_service.providers.registry import ProviderRegistry
from tests.route_service.osm_samples import DENSE_BOX, RealWay, one_way_streets, read_ways, weight_limited

# Altstadt (south bank of the Neckar) and Neuenheim (north bank).
ALTSTADT = LatLon(49.4105, 8.7050)
NEUENHEIM = LatLon(49.4170, 8.6950)
NECKAR_LAT = (49.4120, 49.4145)  # the river between the two banks near the old town


@pytest.fixture(scope="module")
def hd_ways(heidelberg_pbf: Path) -> list[RealWay]:
    return read_ways(heidelberg_pbf)


def random_pairs(count: int, seed: int) -> list[tuple[LatLon, LatLon]]:
    rng = random.Random(seed)
    lat0, lat1, lon0, lon1 = DENSE_BOX

    def point() -> LatLon:
        return LatLon(rng.uniform(lat0, lat1), rng.uniform(lon0, lon1))

    return [(point(), point()) for _ in range(count)]


def steps_of(route: Route) -> list[Step]:
    return [step for leg in route.legs for step in leg.steps]


def route_length(provider: OsrmProvider, a: LatLon, b: LatLon, vehicle: str) -> float:
    """Route plus snapping distance; infinite when the vehicle cannot get there at all."""
    try:
        result = provider.route(RouteQuery(a, b, vehicle, steps=False))
    except (PointNotRoutable, NoRouteFound):
        return math.inf
    return result.routes[0].distance_m + result.origin.distance_m + result.destination.distance_m


def test_route_across_the_neckar_uses_a_bridge(osrm_hd: OsrmProvider) -> None:
    result = osrm_hd.route(RouteQuery(ALTSTADT, NEUENHEIM))
    route = result.routes[0]
    names = [step.name for step in steps_of(route)]
    assert any("brücke" in name.lower() for name in names), names
    lats = [lat for _lon, lat in route.geometry]
    assert min(lats) < NECKAR_LAT[0] and max(lats) > NECKAR_LAT[1]
    assert 500 < route.distance_m < 5000 and route.duration_s > 0


def test_route_answer_shape(osrm_hd: OsrmProvider) -> None:
    result = osrm_hd.route(RouteQuery(ALTSTADT, NEUENHEIM))
    route = result.routes[0]
    assert result.origin.distance_m < 200 and result.destination.distance_m < 200
    steps = steps_of(route)
    assert len(steps) >= 3
    assert steps[0].maneuver is not None and steps[0].maneuver.type == "depart"
    assert steps[-1].maneuver is not None and steps[-1].maneuver.type == "arrive"
    first, last_step = steps[0], steps[-1]
    assert first.maneuver is not None
    assert instruction(StepText.of(first.maneuver, first.name, first.mode, first.signs)).startswith("Head ")
    assert last_step.maneuver is not None
    assert instruction(StepText.of(last_step.maneuver, last_step.name, last_step.mode, last_step.signs)).startswith(
        "You have arrived"
    )
    assert sum(s.distance_m for s in steps) == pytest.approx(route.distance_m, abs=1.0)
    last = 0
    for step in steps:  # the geometry index walks the overview geometry without gaps
        start, end = step.geometry_index
        assert start == last and end >= start
        last = end
    assert last == len(route.geometry) - 1
    assert all(8.6 < lon < 8.8 and 49.3 < lat < 49.5 for lon, lat in route.geometry)


def test_one_way_streets_are_one_way_for_cars_only(osrm_hd: OsrmProvider, hd_ways: list[RealWay]) -> None:
    streets = one_way_streets(hd_ways)[:12]
    assert len(streets) >= 8, "Heidelberg has many one-way streets"
    honoured = 0
    for street in streets:
        a, b = street.points[1], street.points[-2]  # inner nodes: not snapped onto a crossing street
        along = route_length(osrm_hd, a, b, "car")
        against = route_length(osrm_hd, b, a, "car")
        on_foot = route_length(osrm_hd, b, a, "pedestrian")
        if against > 1.5 * along and on_foot < 1.3 * along:
            honoured += 1
    # Nearly all: a few "one-way" ways are split by turn restrictions or parallel lanes.
    assert honoured >= 0.75 * len(streets), f"{honoured}/{len(streets)}"


def test_trucks_avoid_weight_limited_streets(osrm_hd: OsrmProvider, hd_ways: list[RealWay]) -> None:
    streets = weight_limited(hd_ways, below_t=7.0)  # our truck weighs 7.5 t
    assert len(streets) >= 4, "the Heidelberg extract has maxweight-limited streets"
    avoided = 0
    for street in streets:
        a, b = street.points[1], street.points[-2]
        car, truck = route_length(osrm_hd, a, b, "car"), route_length(osrm_hd, a, b, "truck")
        if truck > 1.5 * car:
            avoided += 1
    assert avoided >= 0.6 * len(streets), f"{avoided}/{len(streets)}"


@pytest.mark.parametrize("vehicle", ["car", "truck", "bicycle", "pedestrian"])
def test_shortest_is_shorter_and_fastest_is_faster(osrm_hd: OsrmProvider, vehicle: str) -> None:
    fastest_total = shortest_total = 0.0
    for a, b in random_pairs(15, seed=7):
        try:
            fast = osrm_hd.route(RouteQuery(a, b, vehicle, "fastest", steps=False)).routes[0]
            short = osrm_hd.route(RouteQuery(a, b, vehicle, "shortest", steps=False)).routes[0]
        except ApiError:
            continue
        assert short.distance_m <= fast.distance_m + 1.0
        # "fastest" minimises duration plus small penalties (car: routability), so per
        # route it may be a little slower than the shortest route; in total it is faster.
        assert fast.duration_s <= short.duration_s * 1.05 + 5
        fastest_total += fast.duration_s
        shortest_total += short.duration_s
    assert fastest_total <= shortest_total
    assert fastest_total > 0


def test_shortest_profiles_weigh_by_distance(osrm_hd: OsrmProvider) -> None:
    import osrm

    for name in ("car-shortest", "truck-shortest", "bicycle-shortest", "pedestrian-shortest"):
        params = osrm.RouteParameters(coordinates=[(ALTSTADT.lon, ALTSTADT.lat), (NEUENHEIM.lon, NEUENHEIM.lat)])
        response = osrm_hd._engine(name).Route(params)
        assert response["routes"][0]["weight_name"] == "distance"


def test_alternatives(osrm_hd: OsrmProvider) -> None:
    found_any = False
    for a, b in random_pairs(20, seed=3):
        try:
            result = osrm_hd.route(RouteQuery(a, b, alternatives=2, steps=False))
        except ApiError:
            continue
        assert 1 <= len(result.routes) <= 3
        if len(result.routes) < 3:
            assert result.notes and "alternative" in result.notes[0]
        geometries = {route.geometry.tobytes() for route in result.routes}
        assert len(geometries) == len(result.routes)  # alternatives differ from the best route
        assert all(r.duration_s >= result.routes[0].duration_s * 0.99 for r in result.routes)
        found_any = found_any or len(result.routes) > 1
    assert found_any


def test_far_from_any_road_is_not_routable(osrm_hd: OsrmProvider) -> None:
    outside = LatLon(49.0, 8.69)  # 45 km south of the extract
    with pytest.raises(PointNotRoutable) as caught:
        osrm_hd.route(RouteQuery(ALTSTADT, outside))
    assert caught.value.violations[0].parameter == "to"
    with pytest.raises(PointNotRoutable) as caught:
        osrm_hd.route(RouteQuery(outside, ALTSTADT, "pedestrian"))
    assert caught.value.violations[0].parameter == "from"


def test_emergency_routing_is_refused(osrm_hd: OsrmProvider) -> None:
    """Refused where every request is validated, before the provider: the registry's choice."""
    assert not osrm_hd.info().emergency_routing
    with pytest.raises(InvalidParameter) as caught:
        ProviderRegistry({"osrm": osrm_hd}, "osrm").choose("osrm", "car", "fastest", ParameterErrors(), emergency=True)
    assert caught.value.violations[0].parameter == "emergencyRoutingRadius"


def test_matrix_agrees_with_routes(osrm_hd: OsrmProvider) -> None:
    points = [p for pair in random_pairs(3, seed=11) for p in pair]
    sources, destinations = points[:3], points[3:]
    result = osrm_hd.matrix(MatrixQuery(sources, destinations))
    assert len(result.durations_s) == 3 and all(len(row) == 3 for row in result.durations_s)
    assert len(result.snapped_sources) == 3 and len(result.snapped_destinations) == 3
    for i, source in enumerate(sources):
        for j, destination in enumerate(destinations):
            route = osrm_hd.route(RouteQuery(source, destination, steps=False)).routes[0]
            assert result.durations_s[i][j] == pytest.approx(route.duration_s, abs=1.0)
            assert result.distances_m[i][j] == pytest.approx(route.distance_m, rel=0.01, abs=5)


def test_matrix_names_the_unroutable_point(osrm_hd: OsrmProvider) -> None:
    with pytest.raises(PointNotRoutable) as caught:
        osrm_hd.matrix(MatrixQuery([ALTSTADT], [NEUENHEIM, LatLon(49.0, 8.69)]))
    assert caught.value.violations[0].parameter == "destinations[1]"


def test_osrm_errors_are_translated() -> None:
    names = ("from", "to")
    error = translate("NoSegment - Could not find a matching segment for coordinate 1", names, "car", 1000)
    assert isinstance(error, PointNotRoutable) and error.violations[0].parameter == "to"
    assert isinstance(translate("NoRoute - Impossible route between points", names, "car", 1000), NoRouteFound)
    assert type(translate("TooBig - whatever", names, "car", 1000)) is RuntimeError  # a 500
