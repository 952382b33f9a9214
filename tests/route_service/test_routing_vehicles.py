"""Operators choose the vehicles whose OSRM datasets are imported (ROUTING_VEHICLES, issue 30);
a request for one not loaded is a 400 naming what is."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from common.errors import InvalidParameter
from route_service.dataset import Dataset
from route_service.importer import ImportResult, main, profiles_of_vehicles
from route_service.parsing import parse_route
from route_service.providers.registry import ProviderRegistry


def test_the_vehicles_name_their_profiles() -> None:
    assert profiles_of_vehicles(" car, Truck ") == ["car-fastest", "car-shortest", "truck-fastest", "truck-shortest"]
    assert profiles_of_vehicles("pedestrian") == ["pedestrian-fastest", "pedestrian-shortest"]


@pytest.mark.parametrize("text", ["tank", "car,boat", " , "])
def test_an_unknown_vehicle_is_refused_naming_the_known(text: str) -> None:
    with pytest.raises(ValueError, match="known: car, truck, bicycle, pedestrian"):
        profiles_of_vehicles(text)


def test_the_importer_refuses_an_unknown_vehicle_before_any_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUTING_VEHICLES", "car,hovercraft")
    assert main(["--osm", "missing.osm.pbf"]) == 1
    assert "unknown vehicles ['hovercraft']" in capsys.readouterr().err


def test_a_vehicle_not_imported_is_a_400_naming_what_is(city_maps: Callable[[str], ImportResult]) -> None:
    result = city_maps("monaco")  # OSRM's car-fastest only
    registry = ProviderRegistry.load(Dataset(result.hash, result.dataset_dir, result.manifest))
    with pytest.raises(InvalidParameter) as caught:
        parse_route({"from": "43.7384,7.4246", "to": "43.7311,7.4197", "vehicle": "pedestrian"}, registry)
    message = caught.value.violations[0].message
    assert caught.value.violations[0].parameter == "vehicle"
    assert "it serves car/fastest" in message and "provider=graph serves it" in message, message


def test_routing_vehicles_chooses_the_profiles_of_every_import(monkeypatch: pytest.MonkeyPatch) -> None:
    from route_service.importer import resolve_profiles

    monkeypatch.setenv("ROUTING_VEHICLES", "truck")
    assert resolve_profiles(None) == ["truck-fastest", "truck-shortest"]
    assert resolve_profiles(["car-fastest"]) == ["car-fastest"]  # asked explicitly: as asked
    monkeypatch.delenv("ROUTING_VEHICLES")
    assert len(resolve_profiles(None)) == 8
