"""The `valhalla` provider (issue 30) on every shared extract and on all of them as one map:
every vehicle and route type from the one graph, avoid areas never entered, trucks kept off
ways below their size, isochrones nested around their point, noisy traces matched onto the
road driven, and its errors in our terms."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import orjson
import pytest
import shapely

from bench.maps import BenchMap
from bench.match import right_road_share
from common.areas import square_around
from common.errors import InvalidParameter, NoRouteFound, PointNotRoutable
from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from common.vocabulary import ROUTE_TYPES, VEHICLES
from route_service.dataset import Dataset
from route_service.importing.importer import ImportResult
from route_service.model import TRUCK_PARAMETERS, IsochroneQuery, MatchQuery
from route_service.parsing import parse_route
from route_service.providers.registry import ProviderRegistry
from route_service.providers.valhalla import ValhallaProvider
from route_service.providers.valhalla_areas import OSRM_PACE
from tests.conftest import EVERY_MAP
from tests.route_service.test_truck_dimensions import (
    METRES_PER_DEGREE,
    SMALL_TRUCK,
    LimitedWay,
    limited_ways,
    passes_middle,
)


@dataclass(frozen=True)
class MapCase:
    name: str
    registry: ProviderRegistry
    origin: LatLon
    destination: LatLon
    dataset_dir: Path

    def params(self, **extra: str) -> dict[str, str]:
        ends = {"from": f"{self.origin.lat},{self.origin.lon}", "to": f"{self.destination.lat},{self.destination.lon}"}
        return {**ends, "provider": "valhalla", **extra}


def load(result: ImportResult) -> ProviderRegistry:
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


@pytest.fixture(scope="module", params=EVERY_MAP)
def case(request: pytest.FixtureRequest, city_maps: Callable[[str], ImportResult]) -> MapCase:
    """Two main-network points of the map, as far apart as Valhalla routes a car."""
    result = city_maps(request.param)
    registry = load(result)
    assert "valhalla" in registry.names, "every import builds Valhalla's tiles"
    assert registry.diagnostics is not None
    network = registry.diagnostics.references("car", "fastest")
    pairs = sorted(((a, b) for a in network for b in network if a != b), key=lambda pair: -haversine_m(*pair))
    for origin, destination in pairs[:50]:
        found = MapCase(request.param, registry, origin, destination, result.path)
        parsed = parse_route(found.params(steps="false"), registry)
        try:
            parsed.plugin(parsed.query)
        except NoRouteFound:
            continue
        return found
    pytest.fail(f"Valhalla routes a car between none of the 50 farthest main-network pairs of {request.param}")


@pytest.mark.parametrize("route_type", ROUTE_TYPES)
@pytest.mark.parametrize("vehicle", VEHICLES)
def test_every_vehicle_and_type_routes_from_the_one_graph(case: MapCase, vehicle: str, route_type: str) -> None:
    parsed = parse_route(case.params(vehicle=vehicle, type=route_type), case.registry)
    assert parsed.provider == "valhalla"
    result = parsed.plugin(parsed.query)
    route = result.routes[0]
    assert route.distance_m > 0 and route.duration_s > 0
    assert sum(leg.distance_m for leg in route.legs) == pytest.approx(route.distance_m, abs=1)
    start, end = LatLon(route.geometry[0][1], route.geometry[0][0]), LatLon(route.geometry[-1][1], route.geometry[-1][0])
    assert haversine_m(start, case.origin) <= VEHICLE_TABLE[vehicle].snap_radius_m
    assert haversine_m(end, case.destination) <= VEHICLE_TABLE[vehicle].snap_radius_m
    steps = route.legs[0].steps
    assert steps[0].maneuver is not None and steps[0].maneuver.type == "depart"
    assert steps[-1].maneuver is not None and steps[-1].maneuver.type == "arrive"
    assert all(0 <= s.geometry_index[0] <= s.geometry_index[1] < len(route.geometry) for s in steps)


def test_shortest_is_never_longer_than_fastest(case: MapCase) -> None:
    lengths = {}
    for route_type in ROUTE_TYPES:
        parsed = parse_route(case.params(type=route_type, steps="false"), case.registry)
        lengths[route_type] = parsed.plugin(parsed.query).routes[0].distance_m
    assert lengths["shortest"] <= lengths["fastest"] + 1


def test_the_route_never_enters_an_avoided_area(case: MapCase) -> None:
    plain = parse_route(case.params(steps="false"), case.registry)
    geometry = plain.plugin(plain.query).routes[0].geometry
    lon, lat = geometry[len(geometry) // 2]
    area = square_around(LatLon(float(lat), float(lon)), 40.0)
    shape = shapely.Polygon(area["coordinates"][0])
    assert shapely.LineString(geometry).intersects(shape), "the box is on the way"
    avoiding = parse_route(case.params(steps="false", avoid=orjson.dumps(area).decode()), case.registry)
    assert avoiding.provider == "valhalla"
    try:
        around = avoiding.plugin(avoiding.query).routes[0]
    except NoRouteFound as exc:  # the only way through: said so
        assert exc.violations[0].parameter == "avoid" and "avoids the area" in exc.detail
        return
    assert not shapely.LineString(around.geometry).intersects(shape)


def test_an_isochrone_is_nested_around_its_point(case: MapCase) -> None:
    provider = case.registry.providers["valhalla"]
    assert provider.isochrone is not None
    result = provider.isochrone(IsochroneQuery(case.origin, (120.0, 300.0, 600.0), vehicle="car"))
    inner, middle, outer = (shapely.geometry.shape(area) for area in result.areas)
    assert inner.area < middle.area < outer.area
    # Strictly (Valhalla smooths each contour alone; `nested` joins each with the smaller ones).
    assert outer.buffer(1e-9).contains(middle) and middle.buffer(1e-9).contains(inner)
    assert inner.buffer(1e-4).contains(shapely.Point(result.origin.location.lon, result.origin.location.lat))


def test_an_isochrone_of_a_vehicle_osrm_routes_keeps_osrm_s_pace(case: MapCase) -> None:
    """OSRM (car here) drives 80 % of a tagged maxspeed, Valhalla the full speed: a car area of
    t seconds is Valhalla's of OSRM_PACE x t; a bicycle's (Valhalla's own routes) is not scaled."""
    osrm_paced = ValhallaProvider.load(case.dataset_dir, {"car"})
    own_pace = ValhallaProvider.load(case.dataset_dir, ())
    query = IsochroneQuery(case.origin, (600.0,), vehicle="car")
    paced, free = (shapely.geometry.shape(p.isochrone(query).areas[0]) for p in (osrm_paced, own_pace))
    assert paced.area < free.area
    expected = shapely.geometry.shape(own_pace.isochrone(IsochroneQuery(case.origin, (OSRM_PACE * 600.0,))).areas[0])
    assert paced.symmetric_difference(expected).area < 1e-3 * expected.area
    bicycle = IsochroneQuery(case.origin, (600.0,), vehicle="bicycle")
    assert osrm_paced.isochrone(bicycle).areas == own_pace.isochrone(bicycle).areas


def test_a_vehicle_osrm_routes_keeps_osrm_s_clock(case: MapCase) -> None:
    """Valhalla's car durations (shortest routes, avoid areas) are on OSRM's clock: on the same
    main-network pairs the median ratio to OSRM's is near 1 (unscaled: 0.76-0.86)."""
    assert case.registry.diagnostics is not None
    network = case.registry.diagnostics.references("car", "fastest")
    draw, ratios = random.Random(20261126), []
    for _ in range(60):
        a, b = draw.sample(network, 2)
        ends = {"from": f"{a.lat},{a.lon}", "to": f"{b.lat},{b.lon}", "steps": "false"}
        try:
            durations = []
            for provider in ("osrm", "valhalla"):
                parsed = parse_route({**ends, "provider": provider}, case.registry)
                durations.append(parsed.plugin(parsed.query).routes[0].duration_s)
        except (NoRouteFound, PointNotRoutable):
            continue
        if durations[0] >= 60:  # long enough for the speeds, not the ends, to decide
            ratios.append(durations[1] / durations[0])
        if len(ratios) == 15:
            break
    assert len(ratios) >= 8, f"{case.name}: too few routed pairs"
    assert 0.9 <= statistics.median(ratios) <= 1.15, sorted(ratios)


def test_distance_isochrones_are_nested_too(case: MapCase) -> None:
    provider = case.registry.providers["valhalla"]
    assert provider.isochrone is not None
    result = provider.isochrone(IsochroneQuery(case.origin, (500.0, 1500.0), metric="distance", vehicle="pedestrian"))
    inner, outer = (shapely.geometry.shape(area) for area in result.areas)
    assert 0 < inner.area < outer.area and outer.buffer(1e-4).contains(inner)


@pytest.mark.parametrize("name", EVERY_MAP)
def test_noisy_traces_match_the_road_driven(name: str, city_maps: Callable[[str], ImportResult]) -> None:
    """The bar of OSRM's matching (test_match.py): 95 % of noisy points on the road driven."""
    result = city_maps(name)
    dataset = Dataset(result.hash, result.path, result.record)
    right, total = right_road_share(BenchMap(name, dataset, ProviderRegistry.load(dataset)), 4, 7, "valhalla")
    assert total >= 60, f"{name}: too few points to judge"
    assert right / total >= 0.95, f"{name}: {right}/{total} points on the right road"


def test_a_trace_far_from_any_road_matches_nothing(case: MapCase) -> None:
    provider = case.registry.providers["valhalla"]
    assert provider.match is not None
    sea = [LatLon(0.5, 0.5 + i * 1e-4) for i in range(5)]
    result = provider.match(MatchQuery(sea, detail=True))
    assert result.matchings == [] and result.matched == [False] * 5 and result.snapped == [None] * 5


def test_a_point_off_the_map_is_named(case: MapCase) -> None:
    params = {**case.params(steps="false"), "to": "0.5,0.5"}  # the Gulf of Guinea
    parsed = parse_route(params, case.registry)
    with pytest.raises(PointNotRoutable) as caught:
        parsed.plugin(parsed.query)
    assert caught.value.violations[0].parameter == "to"


def beyond_ends(way: LimitedWay, metres: float = 150.0) -> dict[str, str]:
    """From and to `metres` past the way's ends, along its end segments: Valhalla, like a driver
    delivering there, does not hold a way's limits against a route that starts or ends on it."""
    (x0, y0), (x1, y1) = way.points[0], way.points[1]
    (x2, y2), (x3, y3) = way.points[-2], way.points[-1]

    def past(ax: float, ay: float, bx: float, by: float) -> tuple[float, float]:
        scale = metres / max(1e-9, math.hypot((bx - ax) * math.cos(math.radians(ay)), by - ay) * 111_320)
        return bx + (bx - ax) * scale, by + (by - ay) * scale

    (lon0, lat0), (lon1, lat1) = past(x1, y1, x0, y0), past(x2, y2, x3, y3)
    return {"from": f"{lat0},{lon0}", "to": f"{lat1},{lon1}", "vehicle": "truck", "steps": "false", "provider": "valhalla"}


def through(ends: dict[str, str], way: LimitedWay, registry: ProviderRegistry) -> bool:
    """Whether a small truck's route between `ends` starts and ends off the way and drives its middle."""
    small = parse_route({**ends, **SMALL_TRUCK}, registry)
    try:
        geometry = small.plugin(small.query).routes[0].geometry
    except (NoRouteFound, PointNotRoutable):
        return False
    line = shapely.LineString(way.points)
    off_the_way = all(line.distance(shapely.Point(*end)) * METRES_PER_DEGREE > 20 for end in (geometry[0], geometry[-1]))
    return off_the_way and passes_middle(geometry, way)


@pytest.mark.parametrize("city", ["heidelberg", "munich"])
def test_a_truck_over_a_ways_limit_is_kept_off_it(city: str, city_maps: Callable[[str], ImportResult], shared_osm: str) -> None:  # fmt: skip
    """Ways with a limit that a small truck drives through the middle of, from beyond their ends:
    a truck just over the limit does not (or is told no route is open to its size)."""
    registry = load(city_maps(city))
    checked = 0
    for way in limited_ways(f"{shared_osm}/{city}.osm.pbf"):
        ends = next((e for e in map(partial(beyond_ends, way), (60.0, 150.0, 300.0)) if through(e, way, registry)), None)
        if ends is None:
            continue  # no small truck's route from beyond its ends goes through it: it proves nothing
        limited = next(i for i, limit in enumerate(way.limits) if math.isfinite(limit))
        over = {**SMALL_TRUCK, TRUCK_PARAMETERS[limited]: f"{way.limits[limited] + 0.5:.2f}"}
        try:
            big = parse_route({**ends, **over}, registry)
        except InvalidParameter:
            continue  # a limit above any truck's (70 t): nothing to keep off
        try:
            around = big.plugin(big.query).routes[0]
        except NoRouteFound as exc:
            assert exc.violations[0].parameter in TRUCK_PARAMETERS
        else:
            assert not passes_middle(around.geometry, way), f"way {way.way_id} driven over its limit"
        checked += 1
        if checked == 5:
            break
    assert checked >= 3, f"{city}: too few limited ways a small truck drives"


def test_a_dataset_without_tiles_has_no_valhalla(tmp_path: object) -> None:
    from pathlib import Path

    from common.errors import DatasetNotReady

    with pytest.raises(DatasetNotReady):
        ValhallaProvider.load(Path(str(tmp_path)))
