"""POST /v1/matrix end to end: the real processes on the imported Monaco map, called through
the gateway with real tokens (the tier's cell limit travels as the gateway's tier header)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token
from tests.integration.test_route_e2e import CASINO, SEA, STADIUM, route_path

PALACE = "43.7314,7.4200"  # Prince's Palace, Monaco-Ville
POINTS = [dict(zip(("lat", "lon"), map(float, p.split(",")), strict=True)) for p in (CASINO, STADIUM, PALACE)]


@pytest.fixture(scope="module")
def tokens(full_platform: Stack) -> dict[str, str]:
    return {tier: user_token(full_platform, tier) for tier in ("standard", "unlimited")}


@pytest.fixture
async def call(full_platform: Stack, tokens: dict[str, str], http: aiohttp.ClientSession) -> Any:
    async def send(
        method: str, path: str, body: Any = None, tier: str | None = "standard", accept: dict[str, str] = PROBLEM
    ) -> tuple[int, Any, Any]:
        headers = {**accept, **({"Authorization": f"Bearer {tokens[tier]}"} if tier else {})}
        async with http.request(method, full_platform.base_url + path, json=body, headers=headers) as resp:
            return resp.status, resp.headers, await resp.json(content_type=None)

    return send


async def test_cells_equal_the_routes_through_the_gateway(call: Any) -> None:
    status, headers, body = await call("POST", "/v1/matrix", {"sources": POINTS})
    assert status == 200, body
    assert "RateLimit-Remaining" in headers
    for i, source in enumerate(POINTS):
        for j, destination in enumerate(POINTS):
            if i == j:
                continue
            origin, target = (f"{p['lat']},{p['lon']}" for p in (source, destination))
            _, _, route = await call("GET", route_path(origin, target, "&steps=false"))
            best = route["routes"][0]
            assert body["durations"][i][j] == pytest.approx(best["duration"], abs=0.2), (i, j)
            assert body["distances"][i][j] == pytest.approx(best["distance"], abs=1.0), (i, j)
    assert [s["distance"] < 100 for s in body["sources"]] == [True] * len(POINTS)


async def test_needs_a_token(call: Any) -> None:
    status, _, body = await call("POST", "/v1/matrix", {"sources": POINTS}, tier=None)
    assert status == 401 and body["type"] == "/problems/general/unauthorized"


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_too_many_cells_for_the_tier_in_both_formats(call: Any, accept: dict[str, str]) -> None:
    body = {"sources": [POINTS[0]] * 101, "destinations": [POINTS[1]] * 100}
    status, _, error = await call("POST", "/v1/matrix", body, accept=accept)
    assert status == 413, error
    text = error["detail"] if accept is PROBLEM else error["details"][0]["message"]
    assert "at most 10000 cells" in text
    if accept is LEGACY:
        assert error["details"][0]["code"] == "ROUTE_ERROR_MATRIX_TOO_LARGE"
    status, _, ok = await call("POST", "/v1/matrix", {**body, "annotations": ["duration"]}, tier="unlimited")
    assert status == 200 and len(ok["durations"]) == 101, ok


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_bad_points_and_roadless_points_are_named(call: Any, accept: dict[str, str]) -> None:
    status, _, error = await call(
        "POST", "/v1/matrix", {"sources": [POINTS[0], {"lat": 91, "lon": "x"}]}, accept=accept
    )
    assert status == 400
    text = error["detail"] if accept is PROBLEM else "; ".join(d["message"] for d in error["details"])
    assert "sources[1].lat:" in text and "sources[1].lon:" in text
    sea = dict(zip(("lat", "lon"), map(float, SEA.split(",")), strict=True))
    status, _, error = await call("POST", "/v1/matrix", {"sources": POINTS, "destinations": [sea]}, accept=accept)
    assert status == 400
    text = error["detail"] if accept is PROBLEM else error["details"][0]["message"]
    assert text.startswith("destinations[0]:"), text


async def test_providers_list_the_matrix_capability(call: Any) -> None:
    status, _, body = await call("GET", "/v1/providers")
    assert status == 200
    assert all(p["capabilities"]["matrix"] for p in body["routing"]["providers"] if p["name"] == "osrm")
