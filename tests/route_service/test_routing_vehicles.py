"""Operators choose the vehicles a map serves (ROUTING_VEHICLES) and those OSRM's profiles are
built for (OSRM_VEHICLES, default car and truck; issue 30): a vehicle OSRM has not loaded goes
to Valhalla (matrices to the next provider serving it), one the map does not serve is a 400
naming those it does."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from common.errors import InvalidParameter
from route_service.dataset import Dataset
from route_service.formatter import providers_body
from route_service.importing.importer import ImportResult, MapImporter, osrm_profiles_of, resolve_choice, vehicles_named
from route_service.parsing import parse_matrix, parse_route
from route_service.providers.registry import ProviderRegistry

WALK = {"from": "43.7384,7.4246", "to": "43.7311,7.4197", "vehicle": "pedestrian"}  # Monaco


def test_osrm_is_built_for_the_fastest_routes_of_the_vehicles_named() -> None:
    assert osrm_profiles_of(vehicles_named(" car, Truck ")) == ["car-fastest", "truck-fastest"]
    assert osrm_profiles_of(["pedestrian"]) == ["pedestrian-fastest"]


@pytest.mark.parametrize("text", ["tank", "car,boat", " , "])
def test_an_unknown_vehicle_is_refused_naming_the_known(text: str) -> None:
    with pytest.raises(ValueError, match="known: car, truck, bicycle, pedestrian"):
        vehicles_named(text)


def test_the_importer_refuses_an_unknown_vehicle_before_any_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUTING_VEHICLES", "car,hovercraft")
    assert MapImporter().main(["--osm", "missing.osm.pbf"]) == 1
    assert "unknown vehicles ['hovercraft']" in capsys.readouterr().err


def test_by_default_every_vehicle_is_served_and_osrm_built_for_car_and_truck(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROUTING_VEHICLES", raising=False)
    monkeypatch.delenv("OSRM_VEHICLES", raising=False)
    choice = resolve_choice(None)
    assert choice.vehicles == ("car", "truck", "bicycle", "pedestrian")
    assert choice.profiles == ("car-fastest", "truck-fastest")  # shortest routes: Valhalla


def test_the_operator_s_choices_name_the_vehicles_and_osrm_s_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTING_VEHICLES", "truck,bicycle")
    monkeypatch.delenv("OSRM_VEHICLES", raising=False)
    assert resolve_choice(None) == resolve_choice(None, "bicycle, truck")
    assert resolve_choice(None).vehicles == ("truck", "bicycle")
    assert resolve_choice(None).profiles == ("truck-fastest",)
    monkeypatch.setenv("OSRM_VEHICLES", "bicycle")
    assert resolve_choice(None).profiles == ("bicycle-fastest",)
    monkeypatch.setenv("ROUTING_VEHICLES", "pedestrian")
    with pytest.raises(ValueError, match=r"OSRM_VEHICLES .* names none of the vehicles served"):
        resolve_choice(None)
    chosen = resolve_choice(["truck-shortest", "car-fastest"])  # asked explicitly: as asked, their vehicles
    assert chosen.profiles == ("truck-shortest", "car-fastest") and chosen.vehicles == ("car", "truck")
    assert resolve_choice(["car-fastest"], "pedestrian,car").vehicles == ("car", "pedestrian")
    with pytest.raises(ValueError, match="name vehicles the map does not serve"):
        resolve_choice(["truck-fastest"], "car")


def test_a_vehicle_the_map_does_not_serve_is_a_400_naming_those_it_does(
    city_maps: Callable[[str], ImportResult],
) -> None:
    result = city_maps("monaco")  # OSRM's car-fastest; as if imported with ROUTING_VEHICLES=car
    dataset = Dataset(result.hash, result.path, {**result.record, "vehicles": ["car"]})
    registry = ProviderRegistry.load(dataset)
    assert {c.name: c.info.vehicles for c in registry.providers.values()} == dict.fromkeys(registry.names, ("car",))
    assert providers_body(registry.providers.values(), "osrm", dataset)["coverage"]["vehicles"] == ["car"]
    for named in ({}, {"provider": "valhalla"}, {"provider": "osrm"}):
        with pytest.raises(InvalidParameter) as caught:
            parse_route({**WALK, **named}, registry)
        violation = caught.value.violations[0]
        assert violation.parameter == "vehicle" and "this map serves car (" in violation.message, violation.message


def test_a_vehicle_osrm_has_not_loaded_goes_to_valhalla_routes_and_matrices_alike(
    city_maps: Callable[[str], ImportResult],
) -> None:
    result = city_maps("monaco")  # OSRM's car-fastest, serving every vehicle
    assert result.record["vehicles"] == ["car", "truck", "bicycle", "pedestrian"]
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    assert parse_route(WALK, registry).provider == "valhalla"
    assert parse_route({**WALK, "vehicle": "car", "type": "shortest"}, registry).provider == "valhalla"
    assert parse_route({**WALK, "vehicle": "car"}, registry).provider == "osrm"  # loaded: OSRM's speed
    walked = parse_route(WALK, registry)
    assert walked.plugin(walked.query).routes[0].distance_m > 0
    body = {"sources": [{"lat": 43.7384, "lon": 7.4246}], "destinations": [{"lat": 43.7311, "lon": 7.4197}]}
    matrix = parse_matrix({**body, "vehicle": "pedestrian"}, registry)
    assert matrix.provider == "valhalla"  # what OSRM has not loaded
    with pytest.raises(InvalidParameter) as caught:  # named, OSRM refuses what it has not loaded
        parse_route({**WALK, "provider": "osrm"}, registry)
    assert "provider=valhalla serves it" in caught.value.violations[0].message


def test_two_alternatives_go_where_they_can_be_found(city_maps: Callable[[str], ImportResult]) -> None:
    """OSRM's car data is contracted only (CH finds one alternative at most): without a provider
    named, alternatives=2 goes to Valhalla; named, OSRM answers what it finds and says why."""
    result = city_maps("monaco")
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    drive = {**WALK, "vehicle": "car"}
    assert [parse_route({**drive, "alternatives": str(n)}, registry).provider for n in (0, 1, 2)] == [
        "osrm", "osrm", "valhalla"
    ]  # fmt: skip
    named = parse_route({**drive, "alternatives": "2", "provider": "osrm"}, registry)
    answer = named.plugin(named.query)
    assert len(answer.routes) <= 2 and any("1 alternative route(s) at most" in note for note in answer.notes)
