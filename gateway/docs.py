"""The OpenAPI document of the public API and a human page rendered from it."""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

from common.errors import ApiError, UpstreamError, all_error_classes
from common.vocabulary import (
    DEFAULT_ROUTE_TYPE,
    DEFAULT_UNITS,
    DEFAULT_VEHICLE,
    INSTRUCTION_LANGUAGES,
    LANGUAGES,
    ROUTE_TYPES,
    UNITS,
    VEHICLES,
)
from gateway.vendor import SWAGGER_UI
from gateway.webpages import page_headers

SPEC_PATH = Path(__file__).with_name("openapi.yaml")
EXAMPLES_PATH = Path(__file__).with_name("openapi-examples.json")


def error_catalog() -> list[dict[str, Any]]:
    """Every error type of the platform, from the shared library itself."""
    rows = {
        cls.code: {"status": cls.status, "type": cls.type, "code": cls.code, "title": cls.title}
        for cls in all_error_classes()
        if cls not in (ApiError, UpstreamError)
    }
    return sorted(rows.values(), key=lambda row: (row["status"], row["code"]))


def write_vocabulary(spec: dict[str, Any]) -> None:
    """The vehicles and route types the services accept, from the one list they all use."""
    parameters = spec["components"]["parameters"]
    parameters["vehicle"]["schema"].update(enum=list(VEHICLES), default=DEFAULT_VEHICLE)
    parameters["type"]["schema"].update(enum=list(ROUTE_TYPES), default=DEFAULT_ROUTE_TYPE)
    language = parameters["language"]
    language["description"] += f" Supported: {', '.join(INSTRUCTION_LANGUAGES)}."
    parameters["namesLanguage"]["description"] += f" Supported: {', '.join(LANGUAGES)}."
    parameters["units"]["schema"].update(enum=list(UNITS), default=DEFAULT_UNITS)


def write_example_answers(spec: dict[str, Any]) -> None:
    """The 200 answers the platform gave to the spec's example requests (gateway.spec_examples)."""
    answers = orjson.loads(EXAMPLES_PATH.read_bytes()) if EXAMPLES_PATH.is_file() else {}
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            answer = answers.get(f"{method.upper()} {path}")
            media = operation["responses"].get("200", {}).get("content", {}).get("application/json")
            if answer is not None and media is not None:
                media["example"] = answer


# The operations' groups in /docs, by path: (tag, description, path prefixes).
TAGS = (
    ("auth", "Tokens: sign in with a password or an API key.", ("/v1/authenticate",)),
    ("geocoding", "Addresses to coordinates, coordinates to addresses, suggestions while typing.", ("/v1/geocoder",)),
    ("routing", "Routes, matrices, reachable areas, GPS traces and what the loaded map serves.",
     ("/v1/route", "/v1/matrix", "/v1/isochrone", "/v1/match", "/v1/providers")),
    ("optimization", "The order of one vehicle's stops; routes for a fleet.", ("/v1/optimize/",)),
    ("files", "Detours of many trips from a CSV file.", ("/v1/detour/",)),
    ("jobs", "Large requests run in the background (`?async=true`).", ("/v1/jobs",)),
    ("accounts", "Your account and API keys; users, for administrators.", ("/v1/account", "/v1/admin/")),
)  # fmt: skip
# An example for every optional query parameter, shown in its description and never filled in
# by "Try it out": a filled optional value changes the request (an example avoid area once sent
# a plain route to another provider, 1 528 m instead of 917 m; issue 32). On the default map.
OPTIONAL_EXAMPLES: dict[str, object] = {
    "provider": "osrm", "street": "Mannerheimintie", "houseNumber": "1", "postalCode": "00100",
    "city": "Helsinki", "country": "FI", "limit": 3, "vehicle": "truck", "type": "shortest",
    "alternatives": 2, "emergencyRoutingRadius": 500, "height": 4.0, "width": 2.55, "length": 16.5,
    "weight": 40, "axleLoad": 11.5, "gpsAccuracy": 10, "async": "true", "timeLimit": 2, "strict": "true",
    "filename": "trips.csv", "avoid": '{"type":"Polygon","coordinates":[[[24.94,60.168],[24.946,60.168],[24.946,60.171],[24.94,60.171],[24.94,60.168]]]}',
    "startTime": "2026-11-23T08:00:00+02:00", "departureTime": "2026-12-01T08:00:00+01:00",
    "arrivalTime": "2026-12-01T08:30:00+01:00", "language": "de", "units": "imperial", "steps": "false",
    "geometry": "false",
}  # fmt: skip


def write_tags(spec: dict[str, Any]) -> None:
    """Each operation in its group (TAGS), the groups in that order."""
    spec["tags"] = [{"name": name, "description": text} for name, text, _ in TAGS]
    for path, item in spec["paths"].items():
        tag = next((name for name, _, prefixes in TAGS if path.startswith(prefixes)), None)
        for operation in item.values():
            if tag is not None:
                operation["tags"] = [tag]


def write_optional_examples(spec: dict[str, Any]) -> None:
    """Optional query parameters: their example in words, never a value "Try it out" fills in."""
    shared = spec["components"]["parameters"]
    for item in spec["paths"].values():
        for operation in item.values():
            for entry in operation.get("parameters", []):
                ref = entry.get("$ref", "")
                target = shared[ref.rsplit("/", 1)[1]] if ref.startswith("#/components/parameters/") else entry
                if target.get("required") or target.get("in") != "query":
                    continue
                example = target.pop("example", None)
                example = target.get("schema", {}).pop("example", example)
                example = OPTIONAL_EXAMPLES.get(target["name"], example)
                if example is None:
                    continue
                words = entry if "description" in entry else target
                if "Example:" not in words.get("description", ""):
                    words["description"] = f"{words.get('description', '').rstrip()} Example: `{example}`.".lstrip()


@cache
def openapi_spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
    spec["x-errors"] = error_catalog()
    write_vocabulary(spec)
    write_example_answers(spec)
    write_tags(spec)
    write_optional_examples(spec)
    return spec


@cache
def openapi_bytes() -> bytes:
    return orjson.dumps(openapi_spec())


# The spec and its page change only with a release: browsers may keep them a while.
DOCS_CACHE_CONTROL = {"Cache-Control": "public, max-age=300"}


async def openapi_json(request: web.Request) -> web.Response:
    return web.Response(body=openapi_bytes(), content_type="application/json", headers=DOCS_CACHE_CONTROL)


def parameter(spec: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """An operation's parameter, a shared one (`$ref`) looked up, with the operation's own words."""
    ref = item.get("$ref", "")
    if not ref.startswith("#/components/parameters/"):
        return item
    shared: dict[str, Any] = spec["components"]["parameters"][ref.rsplit("/", 1)[1]]
    return {**shared, **{key: value for key, value in item.items() if key != "$ref"}}


def schema_facts(schema: dict[str, Any]) -> str:
    """A parameter's type, allowed values, default and limits, in a few words."""
    facts = [str(schema.get("type", "string"))]
    if "enum" in schema:
        facts.append("one of " + ", ".join(map(str, schema["enum"])))
    for key, word in (
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("minLength", "length ≥"),
        ("maxLength", "length ≤"),
        ("pattern", "pattern"),
    ):
        if key in schema:
            facts.append(f"{word} {schema[key]}")
    if "default" in schema:
        facts.append(f"default {schema['default']}")
    return "; ".join(facts)


def _operation_html(spec: dict[str, Any], path: str, method: str, operation: dict[str, Any]) -> str:
    params = "".join(
        f"<li><code>{html.escape(p.get('name', ''))}</code> ({html.escape(schema_facts(p.get('schema', {})))}) "
        f"{html.escape(p.get('description', ''))}</li>"
        for p in (parameter(spec, item) for item in operation.get("parameters", []))
        if "name" in p
    )
    auth = "no token" if operation.get("security") == [] else "Bearer token"
    codes = ", ".join(sorted(operation.get("responses", {})))
    return (
        f"<h3><code>{method.upper()} {html.escape(path)}</code> — {html.escape(operation.get('summary', ''))}</h3>"
        f"<p>Auth: {auth}. Responses: {codes}.</p><ul>{params}</ul>"
    )


def reference_html(spec: dict[str, Any]) -> str:
    """Every operation as plain HTML: the page's content without JavaScript."""
    return "".join(
        _operation_html(spec, path, method, op) for path, item in spec["paths"].items() for method, op in item.items()
    )


def errors_html(spec: dict[str, Any]) -> str:
    """The error catalogue (`x-errors`), one row per legacy code, each row a link target."""
    rows = "".join(
        f"<tr id='error-{html.escape(e['code'])}'><td>{e['status']}</td><td><code>{html.escape(e['type'])}</code></td>"
        f"<td><code>{html.escape(e['code'])}</code></td><td>{html.escape(e['title'])}</td></tr>"
        for e in spec["x-errors"]
    )
    return (
        "<section id='errors' class='errors'><h2>Errors</h2>"
        "<p>Every error of the API: its HTTP status, its problem type (problem detail, "
        "<code>application/problem+json</code>) and its legacy code (<code>Accept: application/json</code>). "
        "The same list is the spec's <code>x-errors</code>.</p>"
        "<table><thead><tr><th>Status</th><th>Problem type</th><th>Legacy code</th><th>Title</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


@cache
def _docs_html(interactive: bool) -> str:
    """Swagger UI (vendored, gateway.vendor) draws the reference from /v1/openapi.json with
    try-it and token entry; the error catalogue follows it. Without JavaScript, or before the
    renderer is installed, the plain reference shows instead."""
    spec = openapi_spec()
    title = html.escape(spec["info"]["title"])
    reference = reference_html(spec)
    head = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><link rel='icon' href='data:,'>"
    )
    links = (
        "<p class='links'>The machine-readable spec: <a href='/v1/openapi.json'>/v1/openapi.json</a> "
        "(OpenAPI 3.1) · <a href='#errors'>every error</a> · the demo map: <a href='/map'>/map</a></p>"
    )
    if not interactive:
        description = html.escape(spec["info"]["description"]).replace("\n\n", "</p><p>")
        return (
            f"{head}<link rel='stylesheet' href='/static/docs.css'></head><body class='plain'>"
            f"<h1>{title}</h1>{links}<p>{description}</p><h2>Operations</h2>{reference}"
            f"{errors_html(spec)}</body></html>"
        )
    return (
        f"{head}<link rel='stylesheet' href='/static/vendor/swagger-ui-dist/swagger-ui.css'>"
        "<link rel='stylesheet' href='/static/docs.css'></head><body>"
        f"<header class='docs-header'><h1>{title}</h1>{links}</header>"
        "<main id='swagger-ui'></main>"
        f"<noscript><h2>Operations</h2>{reference}</noscript>"
        f"{errors_html(spec)}"
        "<script src='/static/vendor/swagger-ui-dist/swagger-ui-bundle.js'></script>"
        "<script src='/static/docs.js'></script></body></html>"
    )


def docs_html() -> str:
    return _docs_html(SWAGGER_UI.installed())


async def docs_page(request: web.Request) -> web.Response:
    return web.Response(text=docs_html(), content_type="text/html", headers=page_headers())
