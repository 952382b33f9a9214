"""The geocoder end to end: gateway with a real token → geocoding service → the Munich index."""

from __future__ import annotations

from urllib.parse import quote

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token


@pytest.fixture(scope="module")
def geo_platform(full_platform: Stack) -> Stack:
    return full_platform


async def token_for(stack: Stack, http: aiohttp.ClientSession) -> str:
    return user_token(stack, tier="standard")


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


async def test_structured_input_and_notes_through_the_gateway(geo_platform: Stack, http: aiohttp.ClientSession) -> None:
    token = await token_for(geo_platform, http)
    headers = {"Authorization": f"Bearer {token}", **PROBLEM}
    url = f"{geo_platform.base_url}/v1/geocoder?street=Marienplatz&houseNumber=8&city={quote('München')}"
    async with http.get(url, headers=headers) as resp:
        assert resp.status == 200
        assert (await resp.json())["results"][0]["label"] == "Marienplatz 8, 80331 München"
    empty = f"{geo_platform.base_url}/v1/geocoder?address=Marienplatz%208&country=PRT"
    async with http.get(empty, headers=headers) as resp:
        body = await resp.json()
    assert body["results"] == [] and [n["code"] for n in body["notes"]] == ["COUNTRY_NOT_LOADED"]
    both = f"{geo_platform.base_url}/v1/geocoder?address=Tal&street=Tal"
    async with http.get(both, headers={"Authorization": f"Bearer {token}", **LEGACY}) as resp:
        assert resp.status == 400
        details = (await resp.json())["details"]
    assert details[0]["code"] == "ERROR_INVALID_PARAMETER" and "street" in details[0]["message"]


async def test_autocomplete_through_the_gateway(geo_platform: Stack, http: aiohttp.ClientSession) -> None:
    token = await token_for(geo_platform, http)
    headers = {"Authorization": f"Bearer {token}", **PROBLEM}
    url = f"{geo_platform.base_url}/v1/geocoder/autocomplete?text=Marienpl&focus=48.137%2C11.575&limit=3"
    async with http.get(url, headers=headers) as resp:
        assert resp.status == 200
        body = await resp.json()
    assert body["provider"] == "osm" and 1 <= len(body["results"]) <= 3
    assert body["results"][0]["label"] == "Marienplatz, 80331 München"
    async with http.get(
        f"{geo_platform.base_url}/v1/geocoder/autocomplete?text=Tal&focus=91,0", headers=headers
    ) as resp:
        assert resp.status == 400
        problem = await resp.json(content_type=None)
    assert problem["type"] == "/problems/general/invalid-parameter/" and problem["detail"].startswith("focus: ")


@pytest.mark.parametrize(
    "path",
    ["/v1/geocoder?address=Tal%204", "/v1/geocoder/reverse?lat=48.1&lon=11.5", "/v1/geocoder/autocomplete?text=Tal"],
)
async def test_without_a_token_the_geocoder_is_401(geo_platform: Stack, http: aiohttp.ClientSession, path: str) -> None:
    async with http.get(f"{geo_platform.base_url}{path}", headers=PROBLEM) as resp:
        assert resp.status == 401
        assert (await resp.json(content_type=None))["type"] == "/problems/general/unauthorized"
