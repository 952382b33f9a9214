"""The OpenAPI document stays true to the gateway's routing table and the error library."""

from __future__ import annotations

import importlib
import pkgutil
from functools import partial
from typing import Any

from aiohttp.test_utils import TestClient
from openapi_spec_validator import validate

from common.errors import ApiError, UpstreamError, all_error_classes
from common.vocabulary import ROUTE_TYPES, VEHICLES
from gateway.app import create_app
from gateway.config import GatewayConfig
from gateway.docs import docs_html, openapi_spec, parameter
from gateway.routes import PUBLIC_ROUTES


def test_spec_is_valid_openapi_3_1() -> None:
    spec = openapi_spec()
    assert spec["openapi"].startswith("3.1")
    validate(spec)


def test_every_public_route_is_documented_with_its_methods_and_nothing_else() -> None:
    documented = {(path, method.upper()) for path, item in openapi_spec()["paths"].items() for method in item}
    routed = {(route.path, method) for route in PUBLIC_ROUTES for method in route.methods}
    assert documented == routed


def test_token_requirement_matches_the_routing_table() -> None:
    spec = openapi_spec()
    for route in PUBLIC_ROUTES:
        for method in route.methods:
            operation = spec["paths"][route.path][method.lower()]
            open_operation = operation.get("security") == []
            assert open_operation == (not route.requires_token), route.path
            if route.requires_token:
                assert "401" in operation["responses"], route.path


def test_every_error_type_is_listed() -> None:
    listed = {(e["code"], e["type"], e["status"]) for e in openapi_spec()["x-errors"]}
    for cls in all_error_classes():
        if cls in (ApiError, UpstreamError):
            continue
        assert (cls.code, cls.type, cls.status) in listed, cls.__name__


def test_vehicles_and_route_types_are_the_services_own() -> None:
    spec = openapi_spec()
    operations = [
        ("/v1/route", "get"),
        ("/v1/optimize/stops", "post"),
        ("/v1/detour/file", "post"),
        ("/v1/match", "post"),
        ("/v1/isochrone", "get"),
    ]
    for path, method in operations:
        named = {p["name"]: p for p in map(partial(parameter, spec), spec["paths"][path][method]["parameters"])}
        assert named["vehicle"]["schema"]["enum"] == list(VEHICLES), path
        assert named["type"]["schema"]["enum"] == list(ROUTE_TYPES), path
    html = docs_html()
    assert html.count("<code>vehicle</code>") == len(operations)


def test_fixed_errors_of_the_contract_are_present() -> None:
    by_code = {e["code"]: e for e in openapi_spec()["x-errors"]}
    assert by_code["GEOCODER_ERROR_MISSING_ADDRESS"]["type"] == "/problems/geocoder/missing-address"
    assert by_code["DETOUR_ERROR_INVALID_FILENAME"]["type"] == "/problems/detour/invalid-filename"
    assert by_code["ERROR_INVALID_PARAMETER"]["type"] == "/problems/general/invalid-parameter/"
    assert by_code["OPTIMIZE_ERROR_DIAMETER_TOO_LARGE"]["status"] == 413
    assert by_code["ERROR_UNAUTHORIZED"]["type"] == "/problems/general/unauthorized"


async def test_spec_and_docs_are_served_without_a_token(aiohttp_client: Any) -> None:
    client: TestClient = await aiohttp_client(
        create_app(GatewayConfig(service="gateway", redis_url="redis://127.0.0.1:1/0"))
    )
    spec = await client.get("/v1/openapi.json")
    assert spec.status == 200
    assert (await spec.json())["info"]["title"]
    docs = await client.get("/docs")
    assert docs.status == 200
    html = await docs.text()
    assert "GET /v1/route" in html and "OPTIMIZE_ERROR_DIAMETER_TOO_LARGE" in html


def test_every_error_type_lives_in_the_shared_library() -> None:
    """The gateway's catalogue sees only the error types its own process imports: one defined
    in a service module would be missing from the live /v1/openapi.json."""
    for package in ("auth_service", "geo_service", "route_service", "optimize_service", "job_service", "gateway"):
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    outside = [cls.__qualname__ for cls in all_error_classes() if cls.__module__ != "common.errors"]
    assert outside == [], "define error types in common/errors.py"


def test_every_operation_sits_in_its_group() -> None:
    from gateway.docs import TAGS, openapi_spec

    spec = openapi_spec()
    assert [tag["name"] for tag in spec["tags"]] == [name for name, _, _ in TAGS]
    untagged = [f"{method} {path}" for path, item in spec["paths"].items() for method, op in item.items() if not op.get("tags")]
    assert untagged == []
    assert spec["paths"]["/v1/optimize/stops"]["post"]["tags"] == ["optimization"]


def test_optional_parameters_show_an_example_that_try_it_out_does_not_fill_in() -> None:
    """A pre-filled optional value changes the request (an example avoid area sent a plain
    route to another provider): examples stand in the words, never as `example`."""
    from gateway.docs import openapi_spec, parameter

    spec = openapi_spec()
    checked = 0
    for item in spec["paths"].values():
        for operation in item.values():
            for entry in operation.get("parameters", []):
                found = parameter(spec, entry)
                if found.get("in") != "query" or found.get("required"):
                    continue
                checked += 1
                assert "example" not in found and "example" not in found.get("schema", {}), found["name"]
                assert "Example: `" in found.get("description", ""), found["name"]
    assert checked > 30
