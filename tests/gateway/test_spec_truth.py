"""The spec stays true: each documented default and limit is the code's own, and every
operation behind a token (so rate-limited) documents 429."""

from __future__ import annotations

from typing import Any

import pytest

from common.areas import MAX_AREA_KM2, MAX_POLYGONS, MAX_VERTICES
from common.vehicles import TRUCK_DIMENSIONS
from gateway.docs import openapi_spec
from gateway.routes import PUBLIC_ROUTES
from geo_service import parsing as geo_parsing
from route_service import parsing
from route_service.traces import DEFAULT_GPS_ACCURACY_M, GPS_ACCURACY_RANGE_M, MAX_TRACE_POINTS


def parameter(path: str, method: str, name: str) -> dict[str, Any]:
    spec = openapi_spec()
    for item in spec["paths"][path][method]["parameters"]:
        if "$ref" in item:
            item = spec["components"]["parameters"][item["$ref"].rsplit("/", 1)[-1]]
        if item["name"] == name:
            return dict(item["schema"])
    raise KeyError(name)


@pytest.mark.parametrize(
    ("path", "name", "default", "maximum"),
    [
        ("/v1/geocoder", "limit", geo_parsing.GEOCODE_LIMIT.default, geo_parsing.GEOCODE_LIMIT.high),
        ("/v1/geocoder/reverse", "limit", geo_parsing.REVERSE_LIMIT.default, geo_parsing.REVERSE_LIMIT.high),
        ("/v1/geocoder/autocomplete", "limit", geo_parsing.AUTOCOMPLETE_LIMIT.default, geo_parsing.AUTOCOMPLETE_LIMIT.high),
        ("/v1/match", "gpsAccuracy", DEFAULT_GPS_ACCURACY_M, GPS_ACCURACY_RANGE_M[1]),
    ],
)
def test_documented_defaults_and_maxima_are_the_codes(path: str, name: str, default: float, maximum: float) -> None:
    method = "post" if path == "/v1/match" else "get"
    schema = parameter(path, method, name)
    assert schema.get("default") == default and schema.get("maximum") == maximum


@pytest.mark.parametrize(("name", "field"), [(n, f) for n, f in TRUCK_DIMENSIONS.items()])
def test_truck_dimension_limits(name: str, field: tuple[str, float, str]) -> None:
    assert parameter("/v1/route", "get", name)["maximum"] == field[1]
    schemas = openapi_spec()["components"]["schemas"]
    for schema in ("MatrixRequest", "FleetVehicle"):
        assert schemas[schema]["properties"]["truck"]["properties"][name]["maximum"] == field[1], schema


def test_limits_written_in_descriptions_are_the_codes() -> None:
    spec = openapi_spec()
    avoid = spec["components"]["parameters"]["avoid"]["description"]
    assert (
        f"{MAX_POLYGONS} polygons" in avoid
        and f"{MAX_VERTICES} positions" in avoid
        and f"{MAX_AREA_KM2:g} km²" in avoid
    )
    isochrone = spec["paths"]["/v1/isochrone"]["get"]["description"]
    assert f"at most {parsing.MAX_ISOCHRONE_SECONDS}" in isochrone
    assert f"{parsing.MAX_ISOCHRONE_LIMITS} values" in isochrone
    assert f"{MAX_TRACE_POINTS:,}".replace(",", " ") in spec["paths"]["/v1/match"]["post"]["description"]


def test_every_operation_behind_a_token_documents_429() -> None:
    spec = openapi_spec()
    for route in PUBLIC_ROUTES:
        if not route.requires_token or route.path not in spec["paths"]:
            continue
        for method in route.methods:
            responses = spec["paths"][route.path][method.lower()]["responses"]
            assert "429" in responses, f"{method} {route.path} does not document 429"
