"""The gateway's pages without a browser: what /docs and /map are served with, the static files
and their limits, the tile server's place in the Content-Security-Policy, and the vendoring's
integrity check. The pages in a browser: tests/integration/test_web_pages.py."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway import vendor
from gateway.app import create_app
from gateway.config import DEFAULT_MAP_TILE_URL, GatewayConfig
from gateway.docs import openapi_spec
from gateway.webpages import static_path, tile_source


async def client_for(aiohttp_client: Any, **config: Any) -> TestClient:
    app = create_app(GatewayConfig(service="gateway", redis_url="redis://127.0.0.1:1/0", **config))
    client: TestClient = await aiohttp_client(app)
    return client


@pytest.mark.parametrize(
    ("template", "source"),
    [
        (DEFAULT_MAP_TILE_URL, "https://tile.openstreetmap.org"),
        ("https://{s}.tile.example.org/{z}/{x}/{y}{r}.png", "https://*.tile.example.org"),
        ("http://127.0.0.1:9/{z}/{x}/{y}.png", "http://127.0.0.1:9"),
        ("https://a{s}.example.org/{z}/{x}/{y}.png", "https:"),
        ("/tiles/{z}/{x}/{y}.png", "'self'"),
        ("", None),
        ("javascript:alert(1)//{z}", None),
        ("tiles/{z}/{x}/{y}.png", None),
    ],
)
def test_tile_source(template: str, source: str | None) -> None:
    assert tile_source(template) == source


async def test_map_page_carries_its_tile_server_and_a_strict_policy(aiohttp_client: Any) -> None:
    if not vendor.LEAFLET.installed():
        pytest.skip("Leaflet is not vendored: run `make install`")
    client = await client_for(aiohttp_client, map_tile_url="https://tiles.example.org/{z}/{x}/{y}.png?a=1&b=2")
    page = await client.get("/map")
    assert page.status == 200
    text = await page.text()
    assert 'data-tile-url="https://tiles.example.org/{z}/{x}/{y}.png?a=1&amp;b=2"' in text
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "connect-src 'self';" in policy
    assert "img-src 'self' data: https://tiles.example.org;" in policy
    assert "/static/vendor/leaflet/leaflet.js" in text and "{{" not in text


async def test_an_unusable_tile_url_means_no_background(aiohttp_client: Any) -> None:
    if not vendor.LEAFLET.installed():
        pytest.skip("Leaflet is not vendored: run `make install`")
    client = await client_for(aiohttp_client, map_tile_url="javascript:alert(1)")
    page = await client.get("/map")
    assert 'data-tile-url=""' in await page.text()
    assert "img-src 'self' data:;" in page.headers["Content-Security-Policy"]


async def test_docs_page_draws_the_spec_and_lists_every_error(aiohttp_client: Any) -> None:
    client = await client_for(aiohttp_client)
    page = await client.get("/docs")
    text = await page.text()
    assert page.status == 200 and "script-src 'self'" in page.headers["Content-Security-Policy"]
    for error in openapi_spec()["x-errors"]:
        assert f"id='error-{error['code']}'" in text
    if vendor.SWAGGER_UI.installed():
        assert "/static/vendor/swagger-ui-dist/swagger-ui-bundle.js" in text and "<noscript>" in text


async def test_static_files(aiohttp_client: Any) -> None:
    client = await client_for(aiohttp_client)
    script = await client.get("/static/map.js")
    assert script.status == 200 and script.headers["Cache-Control"] == "public, max-age=300"
    assert script.content_type in ("application/javascript", "text/javascript")
    for path in (
        "/static/map.html",
        "/static/../docs.py",
        "/static/%2e%2e/docs.py",
        "/static/vendor/",
        "/static/nothing.js",
    ):
        answer = await client.get(path)
        assert answer.status == 404, path
        assert answer.headers["Cache-Control"] == "no-store"


def test_static_path_refuses_hidden_files_and_escapes() -> None:
    assert static_path("map.js") is not None
    for relative in ("vendor/leaflet/.integrity", "../vendor.py", "map.html", "", "vendor"):
        assert static_path(relative) is None, relative


def package_with(files: dict[str, bytes], root: Path) -> tuple[vendor.NpmPackage, bytes]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    tarball = buffer.getvalue()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    return vendor.NpmPackage("demo", "1.0.0", integrity, {"dist/a.js": "a.js"}, root=root), tarball


def test_vendoring_checks_integrity_and_unpacks_only_the_listed_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package, tarball = package_with({"dist/a.js": b"a()", "dist/other.js": b"b()"}, tmp_path)
    with pytest.raises(vendor.VendorError, match="integrity mismatch"):
        vendor.check_integrity(tarball + b"x", package.integrity)
    monkeypatch.setattr(vendor, "download", lambda url: tarball)
    assert vendor.vendor(package, "https://registry.example.org/") is True
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [".integrity", "a.js"]
    assert package.installed() and vendor.vendor(package, "https://registry.example.org") is False
    assert package.tarball_url("https://registry.example.org/") == "https://registry.example.org/demo/-/demo-1.0.0.tgz"
