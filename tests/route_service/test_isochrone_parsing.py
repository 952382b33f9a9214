"""GET /v1/isochrone's parameters (no map data needed): every parameter missing, malformed, at
and beyond its bounds, hostile; every violation reported at once; the provider's choice; the
answer's shape."""

from __future__ import annotations

import pytest

from common.errors import ApiError, DatasetNotReady, InvalidParameter
from common.geo import LatLon
from route_service.formatter import isochrone_body, providers_body
from route_service.model import (
    EVERY_PROFILE,
    IsochroneQuery,
    IsochroneResult,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    RouteQuery,
    RouteResult,
    Snapped,
)
from route_service.parsing import (
    MAX_ISOCHRONE_LIMITS,
    MAX_ISOCHRONE_METRES,
    MAX_ISOCHRONE_SECONDS,
    parse_isochrone,
)
from route_service.providers.base import Plugins
from route_service.providers.registry import ProviderRegistry

POINT = "60.1699,24.9384"
OK = {"point": POINT, "time": "300,600,900"}


class FakeProvider:
    def __init__(self, name: str, isochrones: bool) -> None:
        self.name = name
        self.isochrones = isochrones

    def info(self) -> ProviderInfo:
        return ProviderInfo(self.name, "fake", EVERY_PROFILE, False)

    def plugins(self) -> Plugins:
        return Plugins(route=self.route, matrix=self.matrix, isochrone=self.isochrone if self.isochrones else None)

    def route(self, query: RouteQuery) -> RouteResult:
        raise NotImplementedError

    def matrix(self, query: MatrixQuery) -> MatrixResult:
        raise NotImplementedError

    def isochrone(self, query: IsochroneQuery) -> IsochroneResult:
        raise NotImplementedError


def registry(with_valhalla: bool = True) -> ProviderRegistry:
    providers = {"osrm": FakeProvider("osrm", False)}
    if with_valhalla:
        providers["valhalla"] = FakeProvider("valhalla", True)
    return ProviderRegistry(providers, "osrm")


def violations(params: dict[str, str]) -> list[tuple[str | None, str]]:
    with pytest.raises(InvalidParameter) as caught:
        parse_isochrone(params, registry())
    return [(v.parameter, v.message) for v in caught.value.violations]


def test_defaults_and_ascending_limits() -> None:
    parsed = parse_isochrone({"point": POINT, "time": "900, 300,600"}, registry())
    assert parsed.provider == "valhalla", "chosen without `provider`: the one with the capability"
    assert parsed.query == IsochroneQuery(LatLon(60.1699, 24.9384), (300.0, 600.0, 900.0), "time", "car", "fastest")


def test_distance_vehicle_type_and_provider() -> None:
    params = {"point": POINT, "distance": "1500.5", "vehicle": "Bicycle", "type": "SHORTEST", "provider": " Valhalla "}
    parsed = parse_isochrone(params, registry())
    assert parsed.provider == "valhalla"
    assert parsed.query == IsochroneQuery(LatLon(60.1699, 24.9384), (1500.5,), "distance", "bicycle", "shortest")


@pytest.mark.parametrize(
    "params",
    [
        {"time": str(MAX_ISOCHRONE_SECONDS)},
        {"time": ",".join(str(60 * k) for k in range(1, MAX_ISOCHRONE_LIMITS + 1))},
        {"time": "0.5"},
        {"distance": str(MAX_ISOCHRONE_METRES)},
        {"distance": "1"},
        {"time": "3.6e3"},
    ],
)
def test_boundaries_accepted(params: dict[str, str]) -> None:
    query = parse_isochrone({"point": "-90,180", **params}, registry()).query
    metric, text = next(iter(params.items()))
    assert query.point == LatLon(-90.0, 180.0) and query.metric == metric
    assert query.limits == tuple(sorted(float(v) for v in text.split(",")))


@pytest.mark.parametrize(
    ("params", "parameter", "message"),
    [
        # missing
        ({"time": "300"}, "point", "is required"),
        ({"point": " ", "time": "300"}, "point", "is required"),
        ({"point": POINT}, "time", "give either time (seconds) or distance (metres)"),
        ({"point": POINT, "time": "300", "distance": "1000"}, "time", "give either time"),
        ({"point": POINT, "time": ""}, "time", "comma-separated seconds"),
        ({"point": POINT, "distance": ""}, "distance", "comma-separated metres"),
        # beyond the bounds
        ({"point": POINT, "time": "0"}, "time", "above 0 and at most 3600"),
        ({"point": POINT, "time": "-300"}, "time", "above 0"),
        ({"point": POINT, "time": "3600.001"}, "time", "at most 3600"),
        ({"point": POINT, "time": "60,120,180,240,300"}, "time", "1 to 4"),
        ({"point": POINT, "distance": "100000.5"}, "distance", "at most 100000"),
        ({"point": POINT, "distance": "0"}, "distance", "above 0"),
        ({"point": "90.0001,24.9", "time": "300"}, "point", "latitude must be between -90 and 90"),
        ({"point": "60.1,-180.5", "time": "300"}, "point", "longitude must be between -180 and 180"),
        # malformed
        ({"point": "60.1699", "time": "300"}, "point", "two numbers"),
        ({"point": "60.1,24.9,3", "time": "300"}, "point", "two numbers"),
        ({"point": "sixty,24.9", "time": "300"}, "point", "decimal numbers"),
        ({"point": POINT, "time": "abc"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "300;600"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "300,"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": ",,,"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "5min"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "300,300"}, "time", "each value at most once"),
        ({"point": POINT, "time": "300", "vehicle": "plane"}, "vehicle", "must be one of"),
        ({"point": POINT, "time": "300", "type": "scenic"}, "type", "must be one of"),
        ({"point": POINT, "time": "300", "provider": "graph"}, "provider", "unknown provider"),
        ({"point": POINT, "time": "300", "provider": "  "}, "provider", "must not be blank"),
        # hostile: not-numbers, overflow, overlong, injected text
        ({"point": POINT, "time": "nan"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "inf"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "-inf"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "1e400"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "0x12c"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "3" + "0" * 50}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "0." + "0" * 45 + "1"}, "time", "comma-separated seconds"),
        ({"point": POINT, "time": "300," * 10_000}, "time", "1 to 4"),
        ({"point": "nan,nan", "time": "300"}, "point", "decimal numbers"),  # ASCII digits only (common.params)
        ({"point": "inf,0", "time": "300"}, "point", "decimal numbers"),
        ({"point": POINT, "time": "300", "vehicle": "car'; DROP TABLE x;--" + "x" * 100}, "vehicle", "must be one of"),
    ],
)
def test_each_bad_parameter_is_named(params: dict[str, str], parameter: str, message: str) -> None:
    found = violations(params)
    assert len(found) == 1, found
    assert found[0][0] == parameter and message in found[0][1], found


def test_a_hostile_value_is_echoed_short() -> None:
    [(_, message)] = violations({"point": POINT, "time": "300", "vehicle": "<script>" + "x" * 1000})
    assert "<script>" in message and len(message) < 200


def test_every_violation_at_once() -> None:
    found = violations(
        {"point": "91,0", "time": "0,7200", "vehicle": "plane", "type": "scenic", "provider": "graph"}
    )
    assert [parameter for parameter, _ in found] == ["point", "vehicle", "type", "time", "provider"]


def test_osrm_named_says_it_computes_no_isochrones() -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_isochrone({**OK, "provider": "osrm"}, registry())
    assert caught.value.violations[0].parameter == "provider" and "computes no isochrones" in caught.value.detail


def test_without_valhalla_the_service_is_unavailable() -> None:
    with pytest.raises(ApiError) as caught:
        parse_isochrone(OK, registry(with_valhalla=False))
    assert isinstance(caught.value, DatasetNotReady) and caught.value.status == 503


def test_the_body_is_a_feature_collection_with_values_and_units() -> None:
    square: dict[str, object] = {"type": "Polygon", "coordinates": [[[24.93, 60.16], [24.94, 60.16], [24.94, 60.17], [24.93, 60.16]]]}
    result = IsochroneResult(Snapped(LatLon(60.1699, 24.9384), 3.2), [square, square])
    for metric, limits, unit in (("time", (300.0, 450.5), "s"), ("distance", (1000.0, 2000.0), "m")):
        body = isochrone_body(result, IsochroneQuery(LatLon(60.1699, 24.9384), limits, metric), "valhalla", "d1")
        assert body["type"] == "FeatureCollection" and body["metric"] == metric
        properties = [f["properties"] for f in body["features"]]
        assert properties == [
            {metric: limits[0], "unit": unit, "mapEndReached": False},
            {metric: limits[1], "unit": unit, "mapEndReached": False},
        ]
        assert all(f["type"] == "Feature" and f["geometry"] is square for f in body["features"])
    ended = IsochroneResult(Snapped(LatLon(60.1699, 24.9384), 3.2), [square, square], [False, True])
    body = isochrone_body(ended, IsochroneQuery(LatLon(60.1699, 24.9384), (300.0, 3600.0), "time"), "valhalla", "d1")
    last = body["features"][1]["properties"]
    assert last["mapEndReached"] is True and "the loaded map ends before it" in last["note"]
    assert "note" not in body["features"][0]["properties"]
    body = isochrone_body(result, IsochroneQuery(LatLon(60.1699, 24.9384), (300.0, 600.0)), "valhalla", "d1")
    assert [type(f["properties"]["time"]) for f in body["features"]] == [int, int], "300, not 300.0"


def test_providers_list_the_capability() -> None:
    listed = providers_body(registry().providers.values(), "osrm")["providers"]
    assert {p["name"]: p["capabilities"]["isochrone"] for p in listed} == {"osrm": False, "valhalla": True}
