"""The geocoder end to end: gateway with a real token → geocoding service → the Munich index."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest

from geo_service.importer import run_import
from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, console_ok, login, make_stack

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def geo_platform(tmp_path_factory: pytest.TempPathFactory, shared_osm: Path) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("geo-platform")
    # The service opens `<DATA_DIR>/geo/current.json`, so the index is imported before it starts.
    run_import([shared_osm / "munich.osm.pbf"], data_dir / "geo", emit=lambda line: None)
    stack = make_stack(data_dir, ["auth_service", "geo_service"])
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


async def token_for(stack: Stack, http: aiohttp.ClientSession) -> str:
    email = f"geo{uuid.uuid4().hex[:10]}@example.com"
    console_ok(stack, "add-user", email, "--password", PASSWORD, "--tier", "standard")
    return await login(http, stack, email, PASSWORD)


async def test_a_known_munich_address_through_the_gateway(geo_platform: Stack, http: aiohttp.ClientSession) -> None:
    token = await token_for(geo_platform, http)
    url = f"{geo_platform.base_url}/v1/geocoder?address={quote('Marienplatz 8, 80331 München')}&limit=3"
    async with http.get(url, headers={"Authorization": f"Bearer {token}", **PROBLEM}) as resp:
        assert resp.status == 200
        body = await resp.json()
    assert body["provider"] == "osm"
    first = body["results"][0]
    assert first["label"] == "Marienplatz 8, 80331 München" and first["type"] == "address"
    assert abs(first["coordinate"]["lat"] - 48.13739) < 1e-3 and abs(first["coordinate"]["lon"] - 11.57606) < 1e-3

    reverse = f"{geo_platform.base_url}/v1/geocoder/reverse?lat=48.1373943&lon=11.5760552&limit=1"
    async with http.get(reverse, headers={"Authorization": f"Bearer {token}"}) as resp:
        assert resp.status == 200
        assert (await resp.json())["results"][0]["label"] == "Marienplatz 8, 80331 München"


async def test_geocoder_errors_pass_through_the_gateway(geo_platform: Stack, http: aiohttp.ClientSession) -> None:
    token = await token_for(geo_platform, http)
    url = f"{geo_platform.base_url}/v1/geocoder?address=%20&limit=51"
    async with http.get(url, headers={"Authorization": f"Bearer {token}", **LEGACY}) as resp:
        assert resp.status == 400
        codes = [d["code"] for d in (await resp.json())["details"]]
    assert codes == ["GEOCODER_ERROR_MISSING_ADDRESS", "ERROR_INVALID_PARAMETER"]


@pytest.mark.parametrize("path", ["/v1/geocoder?address=Tal%204", "/v1/geocoder/reverse?lat=48.1&lon=11.5"])
async def test_without_a_token_the_geocoder_is_401(geo_platform: Stack, http: aiohttp.ClientSession, path: str) -> None:
    async with http.get(f"{geo_platform.base_url}{path}", headers=PROBLEM) as resp:
        assert resp.status == 401
        assert (await resp.json(content_type=None))["type"] == "/problems/general/unauthorized"
