"""Truck dimensions per request against the ways' maxheight, maxwidth, maxlength, maxweight and
maxaxleload: the tags as OSM writes them, and real Heidelberg and Munich ways that carry them —
a truck under the limit drives the way, one over it is routed around (or told no route is open
to it). Bad dimensions are 400s naming the parameter."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import orjson
import osmium
import pytest
import shapely

from common.areas import square_around
from common.errors import ApiError, InvalidParameter, NoRouteFound
from common.geo import LatLon
from route_service.dataset import Dataset
from route_service.importing.importer import ImportResult
from route_service.importing.valhalla_build import CLOSED, CLOSED_HIGHWAYS, DESTINATION_ONLY, DRIVABLE
from route_service.model import TRUCK_PARAMETERS
from route_service.parsing import parse_matrix, parse_route
from route_service.providers.registry import ProviderRegistry

METRES_PER_DEGREE = 111_195


# ---------------------------------------------------------------- real ways


@dataclass(frozen=True)
class LimitedWay:
    way_id: int
    limits: tuple[float, ...]
    points: list[tuple[float, float]]  # (lon, lat)


# The limits a truck's dimensions are checked against, in TRUCK_PARAMETERS' order; each the
# smallest of its tags. Only plain values are read (`3.5`, `3.5 m`, `7.5 t`): enough ways carry them.
LIMIT_TAGS = (("maxheight", "maxheight:physical"), ("maxwidth", "maxwidth:physical"), ("maxlength",),
              ("maxweight", "maxweight:hgv"), ("maxaxleload",))  # fmt: skip
PLAIN_LIMIT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(m|t)?\s*$")
TRUCK_KEYS = ("hgv", "goods", "motor_vehicle", "vehicle", "access")


def way_limits(tags: Mapping[str, str]) -> tuple[float, ...] | None:
    """(height, width, length, weight, axle load) of a way, inf where none; None without any."""
    limits = []
    for keys in LIMIT_TAGS:
        values = [float(m.group(1)) for key in keys if (m := PLAIN_LIMIT.match(tags.get(key, "")))]
        limits.append(min(values) if values else math.inf)
    return tuple(limits) if any(math.isfinite(v) for v in limits) else None


def truck_drives_forward(tags: Mapping[str, str]) -> bool:
    """A road open to every truck in the way's own direction (as Valhalla's import reads it)."""
    access = next((tags[key] for key in TRUCK_KEYS if key in tags), None)
    highway = tags.get("highway", "")
    return (highway in DRIVABLE and highway not in CLOSED_HIGHWAYS and access not in CLOSED | DESTINATION_ONLY
            and tags.get("oneway") != "-1")  # fmt: skip


def limited_ways(pbf: str) -> list[LimitedWay]:
    """Ways a truck may normally drive that carry a limit, at least 30 m long."""
    found = []
    for way in osmium.FileProcessor(pbf).with_locations():
        if not isinstance(way, osmium.osm.Way) or "highway" not in way.tags:
            continue
        tags = {tag.k: tag.v for tag in way.tags}
        limits = way_limits(tags)
        if limits is None or not truck_drives_forward(tags):
            continue
        points = [(n.lon, n.lat) for n in way.nodes if n.location.valid()]
        if len(points) >= 2 and shapely.LineString(points).length * METRES_PER_DEGREE >= 30:
            found.append(LimitedWay(way.id, limits, points))
    return found


SMALL_TRUCK = {"height": "2", "width": "2", "length": "5", "weight": "2", "axleLoad": "1"}


def route_params(way: LimitedWay, dimensions: dict[str, str]) -> dict[str, str]:
    (lon0, lat0), (lon1, lat1) = way.points[0], way.points[-1]
    return {"from": f"{lat0},{lon0}", "to": f"{lat1},{lon1}", "vehicle": "truck", "steps": "false", **dimensions}


def passes_middle(geometry: np.ndarray, way: LimitedWay) -> bool:
    middle = shapely.LineString(way.points).interpolate(0.5, normalized=True)
    return bool(shapely.LineString(geometry).distance(middle) * METRES_PER_DEGREE < 3)


@pytest.mark.parametrize("city", ["heidelberg", "munich"])
def test_a_truck_over_a_ways_limit_is_routed_around_it_one_under_drives_it(
    city: str, city_maps: Callable[[str], ImportResult], shared_osm: str
) -> None:
    result = city_maps(city)
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    checked = routed_around = 0
    for way in limited_ways(f"{shared_osm}/{city}.osm.pbf"):
        assert parse_route(route_params(way, SMALL_TRUCK), registry).provider == "valhalla", "by default"
        small = parse_route({**route_params(way, SMALL_TRUCK), "provider": "valhalla"}, registry)
        under = small.plugin(small.query).routes[0]
        if not passes_middle(under.geometry, way):
            continue  # a shorter way exists anyway: this way proves nothing
        limited = next(i for i, limit in enumerate(way.limits) if math.isfinite(limit))
        over = {**SMALL_TRUCK, TRUCK_PARAMETERS[limited]: f"{way.limits[limited] + 0.5:.2f}"}
        big = parse_route({**route_params(way, over), "provider": "valhalla"}, registry)
        try:
            around = big.plugin(big.query).routes[0]
        except NoRouteFound as exc:
            # named: the dimensions above some road's limit, the one over this way's among them
            assert exc.violations[0].parameter in TRUCK_PARAMETERS
            assert "open to a truck of this size and weight" in exc.detail and TRUCK_PARAMETERS[limited] in exc.detail
        else:
            assert not passes_middle(around.geometry, way), f"way {way.way_id} driven over its limit"
            assert around.distance_m > under.distance_m
            routed_around += 1
        checked += 1
        if checked == 5:
            break
    assert checked >= 3, f"{city}: too few limited ways a small truck drives"
    # a refusal is right only where no way round exists: a feature that always refused would pass
    assert routed_around >= 1, f"{city}: the big truck was routed around {routed_around} of {checked} ways"


# ---------------------------------------------------------------- bad dimensions


@pytest.fixture(scope="module")
def registry(heidelberg_maps: ImportResult) -> ProviderRegistry:
    """Every profile: a truck without dimensions is OSRM's."""
    result = heidelberg_maps
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


BASE = {"from": "49.4095,8.6936", "to": "49.4036,8.6757", "vehicle": "truck"}


@pytest.mark.parametrize(
    ("params", "parameter", "message"),
    [
        ({"height": "abc"}, "height", "must be a number of m above 0 and at most 6"),
        ({"height": "0"}, "height", "above 0"),
        ({"width": "-2"}, "width", "above 0"),
        ({"length": "31"}, "length", "at most 30"),
        ({"weight": "nan"}, "weight", "must be a number"),
        ({"weight": "inf"}, "weight", "must be a number"),
        ({"axleLoad": "1e400"}, "axleLoad", "must be a number"),
        ({"height": "3' OR 1=1"}, "height", "must be a number"),
        ({"height": "9" * 40}, "height", "must be a number"),
        ({"height": "4", "vehicle": "car"}, "height", "applies only to vehicle=truck"),
    ],
)
def test_bad_dimensions_are_named(
    registry: ProviderRegistry, params: dict[str, str], parameter: str, message: str
) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_route({**BASE, **params}, registry)
    assert [v.parameter for v in caught.value.violations] == [parameter]
    assert message in caught.value.violations[0].message


def test_every_bad_dimension_at_once(registry: ProviderRegistry) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_route({**BASE, "height": "x", "weight": "100", "axleLoad": "0"}, registry)
    assert [v.parameter for v in caught.value.violations] == ["height", "weight", "axleLoad"]


def test_osrm_cannot_take_dimensions_and_says_so(registry: ProviderRegistry) -> None:
    with pytest.raises(ApiError) as caught:
        parse_route({**BASE, "weight": "12", "provider": "osrm"}, registry)
    assert caught.value.violations[0].parameter == "weight"
    assert "provider=valhalla" in caught.value.violations[0].message


def test_a_truck_without_dimensions_stays_on_osrm(registry: ProviderRegistry) -> None:
    assert parse_route(BASE, registry).provider == "osrm"
    assert parse_route({**BASE, "height": "3.9"}, registry).provider == "valhalla"
    with_area = {**BASE, "height": "3.9", "avoid": orjson.dumps(square_around(LatLon(49.40, 8.68), 50)).decode()}
    assert parse_route(with_area, registry).provider == "valhalla"
    points = [{"lat": 49.4095, "lon": 8.6936}, {"lat": 49.4036, "lon": 8.6757}]
    matrix = {"sources": points, "destinations": points, "vehicle": "truck", "truck": {"height": 3.9}}
    assert parse_matrix(matrix, registry).provider == "valhalla", "what OSRM cannot answer goes to Valhalla"


@pytest.mark.parametrize("city", ["heidelberg", "munich"])
def test_a_truck_too_big_for_the_road_it_ends_on_is_refused(
    city: str, city_maps: Callable[[str], ImportResult], shared_osm: str
) -> None:
    """Valhalla's truck costing lets a route start or end on a way whose limit the truck
    exceeds; the provider checks the ends itself, so a destination in the middle of such a way
    is refused, naming the way's limit."""
    result = city_maps(city)
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    checked = 0
    for way in limited_ways(f"{shared_osm}/{city}.osm.pbf"):
        middle = shapely.LineString(way.points).interpolate(0.5, normalized=True)
        params = {**route_params(way, SMALL_TRUCK), "to": f"{middle.y},{middle.x}"}
        limited = next(i for i, limit in enumerate(way.limits) if math.isfinite(limit))
        over = {**params, TRUCK_PARAMETERS[limited]: f"{way.limits[limited] + 0.5:.2f}"}
        small = parse_route({**params, "provider": "valhalla"}, registry)
        try:
            small.plugin(small.query)  # a truck under the limit reaches it
        except NoRouteFound:
            continue
        big = parse_route({**over, "provider": "valhalla"}, registry)
        try:
            big.plugin(big.query)
            continue  # at a junction with an open road: reached by that one (Valhalla snaps to every road as near)
        except NoRouteFound as exc:
            assert exc.violations[0].parameter == TRUCK_PARAMETERS[limited], f"way {way.way_id}"
        checked += 1
        if checked == 4:
            break
    assert checked >= 3, f"{city}: too few limited ways where a truck over the limit is refused"
