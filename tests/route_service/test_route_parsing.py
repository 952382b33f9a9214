"""Parsing, instructions, cache keys and the registry's choice (no map data needed)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest

from common.errors import DatasetNotReady, InvalidParameter, ParameterErrors
from common.geo import LatLon
from route_service.cache import cache_key
from route_service.instructions import StepText, instruction
from route_service.model import (
    EVERY_PROFILE,
    NO_SIGNS,
    Maneuver,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    Restrictions,
    RouteQuery,
    RouteResult,
    TruckDimensions,
    Wording,
)
from route_service.parsing import MAX_MATRIX_SIDE, parse_matrix, parse_route
from route_service.providers.base import Plugins
from route_service.providers.registry import ProviderRegistry

OK = {"from": "49.41,8.69", "to": "49.42,8.70"}


class FakeProvider:
    def __init__(self, name: str, emergency: bool, profiles: frozenset[tuple[str, str]] = EVERY_PROFILE) -> None:
        self.name = name
        self.emergency = emergency
        self.profiles = profiles

    def info(self) -> ProviderInfo:
        return ProviderInfo(self.name, "fake", self.profiles, self.emergency)

    def plugins(self) -> Plugins:
        return Plugins(route=self.route, matrix=self.matrix)

    def route(self, query: RouteQuery) -> RouteResult:
        raise NotImplementedError

    def matrix(self, query: MatrixQuery) -> MatrixResult:
        raise NotImplementedError


def registry(with_valhalla: bool = True) -> ProviderRegistry:
    providers = {"osrm": FakeProvider("osrm", False)}
    if with_valhalla:
        providers["valhalla"] = FakeProvider("valhalla", True)
    return ProviderRegistry(providers, "osrm")


def violations(params: dict[str, str]) -> list[tuple[str | None, str]]:
    with pytest.raises(InvalidParameter) as caught:
        parse_route(params, registry())
    return [(v.parameter, v.message) for v in caught.value.violations]


def test_defaults() -> None:
    parsed = parse_route(OK, registry())
    assert parsed.provider == "osrm"
    assert parsed.query == RouteQuery(LatLon(49.41, 8.69), LatLon(49.42, 8.70), "car", "fastest", 0, 0, True)


def test_all_parameters() -> None:
    params = {**OK, "vehicle": "Truck", "type": "shortest", "alternatives": "2", "emergencyRoutingRadius": "5000",
              "provider": "valhalla", "steps": "false"}  # fmt: skip
    parsed = parse_route(params, registry())
    assert parsed.provider == "valhalla"
    q = parsed.query
    assert (q.vehicle, q.route_type, q.alternatives, q.emergency_radius_m, q.steps) == (
        "truck",
        "shortest",
        2,
        5000,
        False,
    )


@pytest.mark.parametrize("value", ["49.4", "a,b", "91,0", "49.4,8.7,1", "", "  ", "49.4,181", "nan,8", "49.4;8.7"])
@pytest.mark.parametrize("name", ["from", "to"])
def test_malformed_points_name_the_parameter(name: str, value: str) -> None:
    assert [p for p, _ in violations({**OK, name: value})] == [name]


def test_missing_points() -> None:
    assert [p for p, _ in violations({})] == ["from", "to"]


@pytest.mark.parametrize(
    ("name", "value"),
    [("alternatives", "3"), ("alternatives", "-1"), ("alternatives", "1.5"), ("alternatives", "x"),
     ("emergencyRoutingRadius", "5001"), ("emergencyRoutingRadius", "-5"), ("emergencyRoutingRadius", "10.0"),
     ("vehicle", "plane"), ("type", "scenic"), ("provider", "nope"), ("provider", ""), ("steps", "maybe")],
)  # fmt: skip
def test_invalid_values_name_the_parameter(name: str, value: str) -> None:
    assert [p for p, _ in violations({**OK, name: value})] == [name]


def test_several_violations_are_reported_together() -> None:
    found = violations({**OK, "alternatives": "3", "emergencyRoutingRadius": "6000"})
    assert [p for p, _ in found] == ["alternatives", "emergencyRoutingRadius"]
    assert "2" in found[0][1] and "5000" in found[1][1]


def test_unknown_provider_lists_the_known_ones() -> None:
    [(_, message)] = violations({**OK, "provider": "here"})
    assert "osrm" in message and "valhalla" in message


def test_emergency_radius_with_osrm_is_refused() -> None:
    [(parameter, message)] = violations({**OK, "provider": "osrm", "emergencyRoutingRadius": "100"})
    assert parameter == "emergencyRoutingRadius" and "provider=valhalla" in message


def choose(reg: ProviderRegistry, name: str | None, emergency: bool = False) -> str:
    return reg.choose(name, "car", "fastest", ParameterErrors(), emergency=emergency).name


def test_registry_sends_emergency_queries_to_the_capable_provider() -> None:
    reg = registry()
    assert choose(reg, None) == "osrm"
    assert choose(reg, None, emergency=True) == "valhalla"
    assert choose(reg, "valhalla") == "valhalla"
    with pytest.raises(InvalidParameter):
        choose(reg, "osrm", emergency=True)
    with pytest.raises(DatasetNotReady):
        choose(registry(with_valhalla=False), None, emergency=True)
    with pytest.raises(InvalidParameter) as caught:
        choose(reg, "x")
    assert caught.value.violations[0].parameter == "provider"
    assert reg.names == ["osrm", "valhalla"]


def test_a_request_never_reaches_a_provider_without_its_vehicle() -> None:
    only_car = ProviderRegistry({"osrm": FakeProvider("osrm", False, frozenset({("car", "fastest")}))}, "osrm")
    assert parse_route(OK, only_car).provider == "osrm"
    with pytest.raises(InvalidParameter) as caught:
        parse_route({**OK, "vehicle": "truck"}, only_car)
    assert [v.parameter for v in caught.value.violations] == ["vehicle"]
    # reported only for an otherwise valid request, as a provider reported it before
    with pytest.raises(InvalidParameter) as caught:
        parse_route({**OK, "vehicle": "truck", "alternatives": "3"}, only_car)
    assert [v.parameter for v in caught.value.violations] == ["alternatives"]


def test_a_request_carries_the_plugin_that_answers_it() -> None:
    reg = registry()
    parsed = parse_route({**OK, "emergencyRoutingRadius": "100"}, reg)
    assert parsed.provider == "valhalla" and parsed.plugin == reg.providers["valhalla"].route


def test_matrix_body() -> None:
    parsed = parse_matrix(
        {"sources": [{"lat": 49.4, "lon": 8.7}], "destinations": ["49.41,8.69"], "vehicle": "bicycle"}, registry()
    )
    query = parsed.query
    assert parsed.provider == "osrm" and query.vehicle == "bicycle"
    assert query.sources == [LatLon(49.4, 8.7)] and query.destinations == [LatLon(49.41, 8.69)]


@pytest.mark.parametrize(
    ("body", "parameters"),
    [
        ([], [None]),
        ({}, ["sources", "destinations"]),
        (
            {"sources": [{"lat": 91, "lon": 0}], "destinations": [{"lat": "1", "lon": 2}]},
            ["sources[0].lat", "destinations[0].lat"],  # the field itself is named
        ),
        (
            {"sources": [{"lat": 1, "lon": 1}] * (MAX_MATRIX_SIDE + 1), "destinations": [{"lat": 1, "lon": 1}]},
            ["sources"],
        ),
        ({"sources": [{"lat": 1, "lon": 1}], "destinations": [{"lat": 1}], "type": "x"}, ["destinations[0].lon", "type"]),
    ],
)
def test_matrix_body_violations(body: object, parameters: list[str | None]) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_matrix(body, registry())
    assert [v.parameter for v in caught.value.violations] == parameters


def turn(kind: str, modifier: str | None = None, exit: int | None = None, bearing_after: int = 0) -> Maneuver:
    return Maneuver(kind, (8.7, 49.4), 0, bearing_after, modifier, exit)


def english(maneuver: Maneuver, name: str) -> str:
    return instruction(StepText.of(maneuver, name, "driving", NO_SIGNS))


def test_instructions() -> None:
    assert english(turn("depart", bearing_after=92), "Hauptstraße") == "Head east on Hauptstraße"
    assert english(turn("turn", "left"), "Plöck") == "Turn left onto Plöck"
    assert english(turn("turn", "uturn"), "") == "Make a U-turn"
    assert english(turn("new name", "straight"), "B 37") == "Continue onto B 37"
    assert english(turn("roundabout", exit=3), "Ring") == "Enter the roundabout and take the 3rd exit onto Ring"
    assert english(turn("arrive", "right"), "") == "You have arrived at your destination, on the right"
    assert english(turn("fork", "slight left"), "") == "Keep left at the fork"
    assert english(turn("something new", "right"), "X") == "Turn right onto X"
    assert [english(turn("depart", bearing_after=b), "") for b in (0, 44, 180, 359)] == [
        "Head north", "Head northeast", "Head south", "Head north"]  # fmt: skip


def test_cache_key_covers_everything_that_changes_the_answer() -> None:
    """Every field of RouteQuery, the provider and the dataset: a field added to the query is in
    the key with nothing else to change (issue 57)."""
    base = RouteQuery(LatLon(49.41, 8.69), LatLon(49.42, 8.70))
    key = cache_key(base, "osrm", "abc")
    assert key == cache_key(RouteQuery(LatLon(49.41000001, 8.69), LatLon(49.42, 8.70)), "osrm", "abc")
    changed: dict[str, Any] = {
        "origin": LatLon(49.4101, 8.69), "destination": LatLon(49.42, 8.7001), "vehicle": "truck",
        "route_type": "shortest", "alternatives": 1, "emergency_radius_m": 10, "steps": False,
        "restrictions": Restrictions(truck=TruckDimensions(height_m=3.0)), "wording": Wording("de"), "geometry": False,
    }  # fmt: skip
    assert changed.keys() == {field.name for field in fields(RouteQuery)}
    variants = [cache_key(replace(base, **{name: value}), "osrm", "abc") for name, value in changed.items()]
    variants += [cache_key(base, "valhalla", "abc"), cache_key(base, "osrm", "abd")]
    assert len({key, *variants}) == len(variants) + 1


def test_parameter_errors_stay_typed() -> None:
    errors = ParameterErrors()
    with pytest.raises(InvalidParameter):
        registry().choose("nope", "car", "fastest", errors)
    assert errors and errors.violations[0].code == "ERROR_INVALID_PARAMETER"


def test_provider_names_follow_the_house_rule() -> None:
    # common.providers: no case, no surrounding spaces, blank refused (as geocoding and stop order).
    assert choose(registry(), " Valhalla ") == "valhalla"
    [(parameter, message)] = violations({**OK, "provider": "  "})
    assert parameter == "provider" and "blank" in message
