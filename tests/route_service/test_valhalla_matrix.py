"""Valhalla's matrices (issue 56) on every shared extract and on all of them as one map: a cell
is Valhalla's route for the same pair, an avoid area's cells never go through it, a tall
truck gets no cell to a point under a lower limit where a car gets one, and without a provider
named every matrix OSRM cannot answer (restrictions, a vehicle it has not loaded) goes to
Valhalla, one with a departure time too."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
import pytest
import shapely

from common.areas import square_around
from common.errors import ApiError, NoRouteFound, ParameterErrors
from common.geo import LatLon, haversine_m
from route_service.dataset import Dataset
from route_service.importing.importer import ImportResult
from route_service.model import TRUCK_PARAMETERS, Restrictions, RouteTime, TruckDimensions
from route_service.parsing import parse_matrix, parse_route
from route_service.providers.registry import ProviderRegistry
from tests.conftest import EVERY_MAP
from tests.route_service.test_truck_dimensions import SMALL_TRUCK, limited_ways

# How far a cell may be from Valhalla's route for the same pair: the matrix is one exact
# Dijkstra a source (TimeDistanceMatrix), the route a bidirectional A* with hierarchy limits,
# so a route is never shorter than its cell and rarely much longer.
ROUTE_SLACK = 0.03  # of the route's duration and distance
ROUTE_SLACK_ABS = 5.0  # s and m
# Share of pairs whose cell may differ from the route: the matrix's exact search finds cheaper
# paths than the route's hierarchy-limited A* (all five maps as one, a car: the cell 322 s at
# cost 1310, the route 1128 s at cost 3572; 10 of 30 pairs for a truck there) or takes a road
# its route leaves (Heidelberg, a truck: the cell 201 s at cost 910, the route 270 s at cost
# 428; both of Valhalla's matrix algorithms alike). Never is a cell dearer than the route in the
# metric both minimise, beyond the slack. One point can take most of them: on Heidelberg a truck's
# route from a service road by Herrenweg took 1.8x its cells (5 040 s against 2 749) in 10 of the
# point's 10 pairs, 12 of 30 in all (2026-12-02, the import's own sample points).
MAY_DIFFER = 1 / 2


@dataclass(frozen=True)
class Case:
    name: str
    registry: ProviderRegistry
    points: list[LatLon]

    def body(self, **extra: Any) -> dict[str, Any]:
        points = [{"lat": p.lat, "lon": p.lon} for p in self.points]
        return {"sources": points, "destinations": points, **extra}  # all to all (/internal/matrix)


@pytest.fixture(scope="module", params=EVERY_MAP)
def case(request: pytest.FixtureRequest, city_maps: Callable[[str], ImportResult]) -> Case:
    """Six main-network points of the map, spread over it (the farthest first)."""
    result = city_maps(request.param)
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    assert registry.diagnostics is not None
    network = registry.diagnostics.references("car", "fastest")
    chosen = [network[0]]
    while len(chosen) < 6:  # farthest-point sampling: pairs near and far
        chosen.append(max(network, key=lambda p: min(haversine_m(p, c) for c in chosen)))
    return Case(request.param, registry, chosen)


def route_of(case: Case, i: int, j: int, **params: str) -> tuple[float, float] | None:
    a, b = case.points[i], case.points[j]
    ends = {"from": f"{a.lat},{a.lon}", "to": f"{b.lat},{b.lon}", "steps": "false", "provider": "valhalla"}
    request = parse_route({**ends, **params}, case.registry)
    try:
        route = request.plugin(request.query).routes[0]
    except ApiError:  # no route: the cell must be null
        return None
    return route.duration_s, route.distance_m


def agrees(cell: tuple[float, float], route: tuple[float, float], searched: int) -> bool:
    """The cell and the route alike in the metric both minimise (the other follows the path)."""
    c, r = cell[searched], route[searched]
    return c <= r + ROUTE_SLACK_ABS and r <= c * (1 + ROUTE_SLACK) + ROUTE_SLACK_ABS


@pytest.mark.parametrize(("profile", "params"), [
    ({"vehicle": "truck", "truck": {"height": 3.8}}, {"vehicle": "truck", "height": "3.8"}),
    ({"vehicle": "car", "type": "shortest"}, {"vehicle": "car", "type": "shortest"}),
    ({"vehicle": "bicycle"}, {"vehicle": "bicycle"}),
])  # fmt: skip
def test_a_cell_is_valhallas_route_for_the_pair(case: Case, profile: dict[str, Any], params: dict[str, str]) -> None:
    request = parse_matrix(case.body(**profile), case.registry)
    assert request.provider == "valhalla", "without a provider named"
    result = request.plugin(request.query)
    durations, distances = np.asarray(result.durations_s), np.asarray(result.distances_m)
    n = len(case.points)
    assert durations.shape == distances.shape == (n, n)
    assert len(result.snapped_sources) == len(result.snapped_destinations) == n
    assert all(durations[i, i] == 0 for i in range(n))
    searched = 1 if params.get("type") == "shortest" else 0  # the metric both minimise
    differ = []
    for i, j in ((i, j) for i in range(n) for j in range(n) if i != j):
        route = route_of(case, i, j, **params)
        cell = (float(durations[i, j]), float(distances[i, j]))
        if route is not None and not math.isnan(cell[0]):
            assert cell[searched] <= route[searched] * (1 + ROUTE_SLACK) + ROUTE_SLACK_ABS, f"{i},{j}: {cell} {route}"
        if (route is None) != math.isnan(cell[0]) or (route is not None and not agrees(cell, route, searched)):
            differ.append(f"{i},{j}: cell {cell}, route {route}")
    assert len(differ) <= MAY_DIFFER * n * (n - 1), f"{case.name}: {differ}"


def test_an_avoid_areas_cells_never_go_through_it(case: Case) -> None:
    """A box on the plain route between two points: the avoiding cell is the avoiding route
    (which never enters the box, test_avoid_areas) and dearer than the plain cell. The second
    point is the first whose route has a way round its middle (Andorra's may have one pass)."""
    for j in range(1, len(case.points)):
        a, b = case.points[0], case.points[j]
        plain = parse_route({"from": f"{a.lat},{a.lon}", "to": f"{b.lat},{b.lon}", "steps": "false",
                             "provider": "valhalla"}, case.registry)  # fmt: skip
        path = plain.plugin(plain.query).routes[0].geometry
        lon, lat = path[len(path) // 2]
        area = square_around(LatLon(float(lat), float(lon)), 40.0)
        route = route_of(case, 0, j, avoid=orjson.dumps(area).decode())
        if route is not None:
            break
    else:
        pytest.fail(f"no route of {case.name} from its first point has a way round its middle")
    assert shapely.LineString(path).intersects(shapely.Polygon(area["coordinates"][0]))
    body = {"sources": [{"lat": a.lat, "lon": a.lon}], "destinations": [{"lat": b.lat, "lon": b.lon}]}
    free = parse_matrix({**body, "provider": "valhalla"}, case.registry)
    avoiding = parse_matrix({**body, "avoid": area}, case.registry)
    assert avoiding.provider == "valhalla"
    cell = avoiding.plugin(avoiding.query)
    found = (float(np.asarray(cell.durations_s)[0, 0]), float(np.asarray(cell.distances_m)[0, 0]))
    assert found[0] <= route[0] * (1 + ROUTE_SLACK) + ROUTE_SLACK_ABS, "a way round as cheap as the route's"
    assert found[0] > float(np.asarray(free.plugin(free.query).durations_s)[0, 0]), "not the way through the box"


@pytest.mark.parametrize("city", ["heidelberg", "munich"])
def test_a_tall_truck_gets_no_cell_to_a_point_under_a_lower_limit(
    city: str, city_maps: Callable[[str], ImportResult], shared_osm: str
) -> None:
    """A point in the middle of a way with a limit: a car's and a small truck's cells reach it,
    a truck over the limit's do not (the road graph's meaning: the way is closed to it)."""
    result = city_maps(city)
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    assert registry.diagnostics is not None
    start = registry.diagnostics.references("car", "fastest")[0]
    checked = 0
    for way in limited_ways(f"{shared_osm}/{city}.osm.pbf"):
        middle = shapely.LineString(way.points).interpolate(0.5, normalized=True)
        limited = next(i for i, limit in enumerate(way.limits) if math.isfinite(limit))
        if TRUCK_PARAMETERS[limited] == "axleLoad" or way.limits[limited] + 0.5 > 40:
            continue
        body = {"sources": [{"lat": start.lat, "lon": start.lon}], "destinations": [{"lat": middle.y, "lon": middle.x}]}
        small = {name: float(value) for name, value in SMALL_TRUCK.items()}
        tall = {**small, TRUCK_PARAMETERS[limited]: way.limits[limited] + 0.5}
        cells = []
        for profile in ({"vehicle": "car"}, {"vehicle": "truck", "truck": small}, {"vehicle": "truck", "truck": tall}):
            try:
                request = parse_matrix({**body, **profile, "provider": "valhalla"}, registry)
            except ApiError:  # no road for that vehicle near the point
                cells.append(math.nan)
                continue
            cells.append(float(np.asarray(request.plugin(request.query).durations_s)[0, 0]))
        if math.isnan(cells[0]) or math.isnan(cells[1]) or not refused(registry, start, middle, tall):
            continue  # not reached by a car or a small truck, or reached by another road: it proves nothing
        assert math.isnan(cells[2]), f"way {way.way_id}: a truck over its limit reached its middle"
        checked += 1
        if checked == 3:
            break
    assert checked >= 2, f"{city}: too few limited ways a small truck reaches"


def refused(registry: ProviderRegistry, start: LatLon, end: shapely.Point, truck: dict[str, float]) -> bool:
    """Whether Valhalla's route refuses the truck at the point (every road there closed to it)."""
    params = {"from": f"{start.lat},{start.lon}", "to": f"{end.y},{end.x}", "vehicle": "truck", "steps": "false",
              "provider": "valhalla", **{name: str(value) for name, value in truck.items()}}  # fmt: skip
    request = parse_route(params, registry)
    try:
        request.plugin(request.query)
    except NoRouteFound:
        return True
    return False


def test_without_a_provider_matrices_osrm_cannot_answer_go_to_valhalla(case: Case) -> None:
    assert parse_matrix(case.body(), case.registry).provider == "osrm"
    for profile in ({"vehicle": "truck", "truck": {"weight": 12}}, {"vehicle": "car", "type": "shortest"},
                    {"vehicle": "pedestrian"}, {"avoid": square_around(LatLon(0.0, 0.0), 50.0)}):  # fmt: skip
        assert parse_matrix(case.body(**profile), case.registry).provider == "valhalla", profile
    timed = Restrictions(truck=TruckDimensions(weight_t=12), time=RouteTime(datetime(2026, 12, 2, 8, tzinfo=UTC)))
    chosen = case.registry.choose(None, "truck", "fastest", ParameterErrors(), restrictions=timed, serving="matrix")
    assert chosen.name == "valhalla", "rules by time: Valhalla's date_time"
