"""Avoid areas on real streets, on every shared extract and on all of them as one map: the
route never enters the area, matrix cells and tours agree with it, a point inside is named,
and a route that cannot avoid the area is a 400 saying so."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import shapely

from common.areas import square_around
from common.errors import ApiError, InvalidParameter, NoRouteFound
from common.geo import LatLon, haversine_m
from route_service.dataset import Dataset
from route_service.importing.importer import ImportResult
from route_service.parsing import parse_matrix, parse_route, parse_waypoints
from route_service.providers.registry import ProviderRegistry
from tests.conftest import EVERY_MAP


@dataclass(frozen=True)
class Case:
    """Two connected points of a map and a box across the middle of the route between them."""

    name: str
    registry: ProviderRegistry
    origin: LatLon
    destination: LatLon
    area: dict[str, Any]

    def params(self, **extra: str) -> dict[str, str]:
        return {"from": text(self.origin), "to": text(self.destination), "steps": "false", **extra}

    def avoid(self) -> str:
        return orjson.dumps(self.area).decode()

    @property
    def shape(self) -> shapely.Polygon:
        return shapely.Polygon(self.area["coordinates"][0])


def text(point: LatLon) -> str:
    return f"{point.lat},{point.lon}"


def box_around(lon: float, lat: float, half_m: float) -> dict[str, Any]:
    return square_around(LatLon(lat, lon), half_m)


@pytest.fixture(scope="module", params=EVERY_MAP)
def case(request: pytest.FixtureRequest, city_maps: Callable[[str], ImportResult]) -> Case:
    result = city_maps(request.param)
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    assert registry.diagnostics is not None
    network = registry.diagnostics.references("car", "fastest")
    # the two main-network points farthest apart that Valhalla routes between
    # (their tag policies differ a little from OSRM's: a ferry or a track may join OSRM's network
    # only), whose route has a way round a box across its middle (on a mountain map the middle of
    # the longest route may be its only pass)
    pairs = sorted(((a, b) for a in network for b in network if a != b), key=lambda pair: -haversine_m(*pair))
    for origin, destination in pairs[:MOST_PAIRS_TRIED]:
        box = way_round(registry, origin, destination)
        if box is not None:
            break
    else:
        pytest.fail(f"no route between two main-network points of {request.param} has a way round its middle")
    return Case(request.param, registry, origin, destination, box)


MOST_PAIRS_TRIED = 40


def way_round(registry: ProviderRegistry, origin: LatLon, destination: LatLon) -> dict[str, Any] | None:
    """An 80 m box across the middle of Valhalla's route between the points, when Valhalla
    routes between them and has a way round the box."""
    params = {"from": text(origin), "to": text(destination), "steps": "false"}
    try:
        parsed = parse_route({**params, "provider": "valhalla"}, registry)
        path = parsed.plugin(parsed.query).routes[0].geometry
        lon, lat = path[len(path) // 2]
        box = box_around(float(lon), float(lat), 40.0)
        avoiding = parse_route({**params, "avoid": orjson.dumps(box).decode()}, registry)
        avoiding.plugin(avoiding.query)
    except NoRouteFound:
        return None
    return box


def test_without_a_provider_avoid_goes_to_valhalla(case: Case) -> None:
    assert parse_route(case.params(avoid=case.avoid()), case.registry).provider == "valhalla"
    assert parse_route(case.params(), case.registry).provider == "osrm"


@pytest.mark.parametrize("provider", ["valhalla"])
def test_the_route_never_enters_the_area(case: Case, provider: str) -> None:
    plain = parse_route(case.params(provider="valhalla"), case.registry)
    assert shapely.LineString(plain.plugin(plain.query).routes[0].geometry).intersects(case.shape), (
        "the box is on the way"
    )
    request = parse_route(case.params(avoid=case.avoid(), provider=provider), case.registry)
    route = request.plugin(request.query).routes[0]  # an 80 m box on a long route: there is a way round
    assert not shapely.LineString(route.geometry).intersects(case.shape)
    same = parse_route(case.params(provider=provider), case.registry)  # an avoid area never saves time
    assert route.duration_s >= same.plugin(same.query).routes[0].duration_s - 1


def test_matrix_cells_and_tours_avoid_it_too(case: Case) -> None:
    points = [{"lat": p.lat, "lon": p.lon} for p in (case.origin, case.destination)]
    route = parse_route(case.params(avoid=case.avoid(), provider="valhalla"), case.registry)
    best = route.plugin(route.query).routes[0]
    matrix = parse_matrix({"sources": points, "destinations": points, "avoid": case.area}, case.registry)
    assert matrix.provider == "valhalla", "without a provider named, as routes"
    cells = matrix.plugin(matrix.query)  # an exact search a source; the route's may be a little longer
    cell = cells.durations_s[0][1]
    assert cell is not None and best.duration_s * 0.97 - 5 <= cell <= best.duration_s + 5
    tour = parse_waypoints({"waypoints": [*points, points[0]], "avoid": case.area}, case.registry)
    assert tour.provider == "valhalla"
    result = tour.plugin(tour.query)
    assert not shapely.LineString(result.route.geometry).intersects(case.shape)


def test_a_point_inside_the_area_is_named(case: Case) -> None:
    inside = case.shape.centroid
    params = case.params(avoid=case.avoid())
    params["to"] = f"{inside.y},{inside.x}"
    with pytest.raises(InvalidParameter) as caught:
        parse_route(params, case.registry)
    assert [v.parameter for v in caught.value.violations] == ["to"]
    body = {
        "sources": [{"lat": inside.y, "lon": inside.x}],
        "destinations": [{"lat": case.origin.lat, "lon": case.origin.lon}],
    }
    with pytest.raises(InvalidParameter) as caught:
        parse_matrix({**body, "avoid": case.area}, case.registry)
    assert [v.parameter for v in caught.value.violations] == ["sources[0]"]


@pytest.mark.parametrize("provider", ["valhalla"])
@pytest.mark.parametrize("end", ["origin", "destination"])
def test_an_area_around_either_end_leaves_no_way_through(case: Case, provider: str, end: str) -> None:
    """A ring of road closures around the start or the destination: a 400 naming avoid, not a
    detour through it."""
    point: LatLon = getattr(case, end)
    outer = box_around(point.lon, point.lat, 400.0)["coordinates"][0]
    hole = box_around(point.lon, point.lat, 100.0)["coordinates"][0]
    area = {"type": "Polygon", "coordinates": [outer, hole[::-1]]}
    request = parse_route(case.params(avoid=orjson.dumps(area).decode(), provider=provider), case.registry)
    with pytest.raises(ApiError) as caught:
        request.plugin(request.query)
    assert isinstance(caught.value, NoRouteFound)
    assert [v.parameter for v in caught.value.violations] == ["avoid"]


def test_osrm_cannot_avoid_and_says_so(case: Case) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_route(case.params(avoid=case.avoid(), provider="osrm"), case.registry)
    assert caught.value.violations[0].parameter == "avoid"
    assert "provider=valhalla" in caught.value.violations[0].message
