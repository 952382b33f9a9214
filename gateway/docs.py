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
from common.vocabulary import DEFAULT_ROUTE_TYPE, DEFAULT_VEHICLE, ROUTE_TYPES, VEHICLES

SPEC_PATH = Path(__file__).with_name("openapi.yaml")


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


@cache
def openapi_spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
    spec["x-errors"] = error_catalog()
    write_vocabulary(spec)
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


def _operation_html(spec: dict[str, Any], path: str, method: str, operation: dict[str, Any]) -> str:
    params = "".join(
        f"<li><code>{html.escape(p.get('name', ''))}</code> {html.escape(p.get('description', ''))}</li>"
        for p in (parameter(spec, item) for item in operation.get("parameters", []))
        if "name" in p
    )
    auth = "no token" if operation.get("security") == [] else "Bearer token"
    codes = ", ".join(sorted(operation.get("responses", {})))
    return (
        f"<h3><code>{method.upper()} {html.escape(path)}</code> — {html.escape(operation.get('summary', ''))}</h3>"
        f"<p>Auth: {auth}. Responses: {codes}.</p><ul>{params}</ul>"
    )


@cache
def docs_html() -> str:
    spec = openapi_spec()
    operations = "".join(
        _operation_html(spec, path, method, op) for path, item in spec["paths"].items() for method, op in item.items()
    )
    errors = "".join(
        f"<tr><td>{e['status']}</td><td><code>{e['type']}</code></td><td><code>{e['code']}</code></td>"
        f"<td>{html.escape(e['title'])}</td></tr>"
        for e in spec["x-errors"]
    )
    description = html.escape(spec["info"]["description"]).replace("\n\n", "</p><p>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Routing and Geocoding API</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}td{padding:.2em .6em}</style></head><body>"
        f"<h1>{html.escape(spec['info']['title'])}</h1><p>{description}</p>"
        "<p>The machine-readable spec: <a href='/v1/openapi.json'>/v1/openapi.json</a> (OpenAPI 3.1).</p>"
        f"<h2>Operations</h2>{operations}"
        f"<h2>Errors</h2><table><tr><th>Status</th><th>Problem type</th><th>Legacy code</th><th>Title</th></tr>{errors}</table>"
        "</body></html>"
    )


async def docs_page(request: web.Request) -> web.Response:
    return web.Response(text=docs_html(), content_type="text/html", headers=DOCS_CACHE_CONTROL)
