"""Every operation of the spec has an example request and an example answer, the answers
are valid against their own schemas, and every coordinate in them lies inside the default map
(central Helsinki), so that `make up` followed by /docs' "Try it out" answers them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from gateway.docs import openapi_spec, parameter

# The default map (README: latitude 60.164 to 60.179, longitude 24.935 to 24.953), with a margin of
# about 100 m for points snapped onto its edge roads.
LAT_RANGE = (60.163, 60.180)
LON_RANGE = (24.933, 24.955)
PAIR = re.compile(r"(-?\d{1,3}\.\d+)\s*,\s*(-?\d{1,3}\.\d+)")
GPX_POINT = re.compile(r'lat="(-?[\d.]+)" lon="(-?[\d.]+)"')
SPEC_URI = "urn:routing-api:openapi"


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    spec = openapi_spec()
    return [(path, method, op) for path, item in spec["paths"].items() for method, op in item.items()]


def media_examples(media: dict[str, Any]) -> list[Any]:
    named = [example["value"] for example in media.get("examples", {}).values()]
    return [media["example"], *named] if "example" in media else named


def request_examples(operation: dict[str, Any]) -> list[Any]:
    spec = openapi_spec()
    found: list[Any] = []
    for item in operation.get("parameters", []):
        param = parameter(spec, item)
        value = param.get("example", param.get("schema", {}).get("example"))
        if value is not None:
            found.append({param["name"]: value})  # `lat` and `lon` of one point stay together
    for media in operation.get("requestBody", {}).get("content", {}).values():
        found.extend(media_examples(media))
    return found


def response_content(spec: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in response:
        response = spec["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    content: dict[str, Any] = response.get("content", {})
    return content


def coordinates(value: Any) -> Iterator[tuple[float, float]]:
    """(lat, lon) of every point an example holds: `{lat, lon}` objects, GeoJSON `[lon, lat]`
    positions, `lat,lon` text (query values, CSV lines) and GPX points."""
    if isinstance(value, dict):
        if isinstance(value.get("lat"), float | int) and isinstance(value.get("lon"), float | int):
            yield value["lat"], value["lon"]
        for key, item in value.items():
            if key != "bounds":  # [min lon, min lat, max lon, max lat]: checked as two corners
                yield from coordinates(item)
        if isinstance(value.get("bounds"), list):
            west, south, east, north = value["bounds"]
            yield from ((south, west), (north, east))
    elif isinstance(value, list):
        if len(value) == 2 and all(isinstance(x, float) for x in value):
            yield value[1], value[0]
        else:
            for item in value:
                yield from coordinates(item)
    elif isinstance(value, str) and value.startswith(("{", "[")):
        try:
            yield from coordinates(json.loads(value))  # GeoJSON in a query parameter
        except json.JSONDecodeError:  # JSON lines (a geocoder batch)
            for line in filter(str.strip, value.splitlines()):
                yield from coordinates(json.loads(line))
    elif isinstance(value, str):
        for lat, lon in [*PAIR.findall(value), *GPX_POINT.findall(value)]:
            yield float(lat), float(lon)


@pytest.mark.parametrize(("path", "method", "operation"), operations(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_operation_has_an_example_request_and_answer(path: str, method: str, operation: dict[str, Any]) -> None:
    spec = openapi_spec()
    required = [parameter(spec, p) for p in operation.get("parameters", [])]
    for param in required:
        if param.get("required"):
            assert "example" in param or "example" in param["schema"], f"{path} {param['name']}"
    body = operation.get("requestBody", {}).get("content", {})
    first = next(iter(body.values()), None)  # the main media type of the body
    assert first is None or media_examples(first), f"{method.upper()} {path}: no example body"
    ok = response_content(spec, operation["responses"]["200"])
    assert any(media_examples(media) for media in ok.values()), f"{method.upper()} {path}: no example answer"


@pytest.mark.parametrize(("path", "method", "operation"), operations(), ids=lambda x: x if isinstance(x, str) else "")
def test_example_points_lie_in_the_default_map(path: str, method: str, operation: dict[str, Any]) -> None:
    spec = openapi_spec()
    answers = [example for response in operation["responses"].values()
               for media in response_content(spec, response).values() for example in media_examples(media)]  # fmt: skip
    # An isochrone holds the points within the snapping radius (1000 m) of the roads it reaches,
    # and the coverage outline is made of 0.005° cells, so both reach past the map's last roads.
    margin = {"/v1/isochrone": (0.0095, 0.019), "/v1/providers": (0.005, 0.005)}.get(path, (0.0, 0.0))
    for lat, lon in coordinates(request_examples(operation)):
        assert LAT_RANGE[0] <= lat <= LAT_RANGE[1] and LON_RANGE[0] <= lon <= LON_RANGE[1], (path, lat, lon)
    for lat, lon in coordinates(answers):
        assert LAT_RANGE[0] - margin[0] <= lat <= LAT_RANGE[1] + margin[0], (path, lat, lon)
        assert LON_RANGE[0] - margin[1] <= lon <= LON_RANGE[1] + margin[1], (path, lat, lon)


@pytest.mark.parametrize(("path", "method", "operation"), operations(), ids=lambda x: x if isinstance(x, str) else "")
def test_example_answers_match_their_schemas(path: str, method: str, operation: dict[str, Any]) -> None:
    spec = {**openapi_spec(), "$id": SPEC_URI}
    registry: Registry[Any] = Registry().with_resource(SPEC_URI, Resource.from_contents(spec, DRAFT202012))
    for status, response in operation["responses"].items():
        if "$ref" in response:
            pointer = "/components/responses/" + response["$ref"].rsplit("/", 1)[1]
        else:
            pointer = "/paths/" + path.replace("~", "~0").replace("/", "~1") + f"/{method}/responses/{status}"
        for media_type, media in response_content(spec, response).items():
            escaped = media_type.replace("~", "~0").replace("/", "~1")
            validator = Draft202012Validator(
                {"$ref": f"{SPEC_URI}#{pointer}/content/{escaped}/schema"}, registry=registry
            )
            for example in media_examples(media):
                errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(example)]
                assert errors == [], f"{method.upper()} {path} {status} {media_type}"
