"""GET /v1/isochrone end to end on the imported Monaco map, through the gateway with a token."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
import shapely
import shapely.geometry

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token

CASINO = "43.7393,7.4279"


@pytest.fixture(scope="module")
def token(full_platform: Stack) -> str:
    return user_token(full_platform)


async def get(
    http: aiohttp.ClientSession, stack: Stack, path: str, token: str | None, accept: dict[str, str]
) -> tuple[int, Any]:
    headers = {**accept, **({"Authorization": f"Bearer {token}"} if token else {})}
    async with http.get(stack.base_url + path, headers=headers) as resp:
        return resp.status, await resp.json(content_type=None)


async def test_nested_areas_through_the_gateway(full_platform: Stack, http: aiohttp.ClientSession, token: str) -> None:
    status, body = await get(http, full_platform, f"/v1/isochrone?point={CASINO}&time=120,300", token, PROBLEM)
    assert status == 200, body
    small, large = (shapely.geometry.shape(f["geometry"]) for f in body["features"])
    assert large.buffer(1e-9).contains(small) and small.contains(shapely.Point(7.4279, 43.7393))
    assert body["provider"] == "valhalla" and [f["properties"]["time"] for f in body["features"]] == [120, 300]


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_faults_in_both_formats(
    full_platform: Stack, http: aiohttp.ClientSession, token: str, accept: dict[str, str]
) -> None:
    status, body = await get(http, full_platform, f"/v1/isochrone?point={CASINO}&time=4000", token, accept)
    assert status == 400, body
    status, body = await get(http, full_platform, f"/v1/isochrone?point={CASINO}&time=300", None, accept)
    assert status == 401, body
