"""POST /v1/match end to end on the imported Monaco map: a trace along a real route, as JSON
and as GPX, through the gateway with a token; too long a trace and a missing token refused in
our formats; a trace that would take the route service ~45 CPU-s stops soon after its
client has gone (issue 29), in the production server, which does not cancel handlers itself."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import numpy as np
import psutil
import pytest

from bench.match import synthetic_trace
from bench.processes import cpu_seconds
from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, Caller
from tests.integration.test_route_e2e import CASINO, STADIUM, route_path


@pytest.fixture
async def trace(api: Caller) -> dict[str, Any]:
    status, body = await api("GET", route_path(CASINO, STADIUM, "&steps=false"))
    assert status == 200, body
    route = body["routes"][0]
    return synthetic_trace(np.array(route["geometry"]["coordinates"]), route["duration"], np.random.default_rng(1))


async def test_a_json_trace_is_matched_through_the_gateway(api: Caller, trace: dict[str, Any]) -> None:
    status, body = await api("POST", "/v1/match", trace)
    assert status == 200, body
    assert body["matchedPoints"] >= 0.9 * len(trace["points"]) and body["distance"] > 500
    assert body["geometry"]["type"] == "MultiLineString" and body["provider"] == "osrm"
    assert len(body["points"]) == len(trace["points"])


async def test_a_gpx_trace_is_matched_through_the_gateway(api: Caller, trace: dict[str, Any]) -> None:
    points = "".join(f'<trkpt lat="{p["lat"]}" lon="{p["lon"]}"></trkpt>' for p in trace["points"])
    gpx = f'<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>{points}</trkseg></trk></gpx>'
    status, body = await api("POST", "/v1/match?gpsAccuracy=25", gpx.encode(), {"Content-Type": "application/gpx+xml"})
    assert status == 200, body
    assert body["matchedPoints"] >= 0.9 * len(trace["points"])


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_too_long_a_trace_and_no_token(api: Caller, trace: dict[str, Any], accept: dict[str, str]) -> None:
    long = {"points": [{"lat": 43.7393, "lon": 7.4279}] * 10_001}
    status, body = await api("POST", "/v1/match", long, accept)
    assert status == 413, body
    code = body["details"][0]["code"] if accept is LEGACY else body["type"]
    assert code in ("ROUTE_ERROR_TRACE_TOO_LONG", "/problems/route/trace-too-long")
    status, body = await api("POST", "/v1/match", trace, accept, auth=False)
    assert status == 401


# 1.1 km zigzags across Monaco at the largest GPS accuracy: ~0.46 CPU-s a step in OSRM, so
# about 45 CPU-s for the whole trace (the campaign's 10 000-point trace cost 46-50).
ZIGZAG = {"points": [{"lat": 43.728 + (i % 2) * 0.01, "lon": 7.415 + i * 2e-5} for i in range(100)], "gpsAccuracy": 100}


@pytest.mark.parametrize("through", ["route service", "gateway"])
async def test_an_abandoned_match_stops_within_seconds(
    full_platform: Stack, api_token: str, http: aiohttp.ClientSession, through: str
) -> None:
    """Like `curl -m2`, straight to the route service or through the gateway (which then drops
    its own call upstream): the matching stops, its CPU stops growing."""
    route = psutil.Process(full_platform.processes["route_service"].pid)
    if through == "gateway":
        url, headers = full_platform.base_url, {"Authorization": f"Bearer {api_token}"}
    else:
        url, headers = full_platform.url("route_service"), full_platform.internal_headers()
    before = cpu_seconds(route)
    with pytest.raises(TimeoutError):
        async with http.post(
            url + "/v1/match", json=ZIGZAG, headers=headers, timeout=aiohttp.ClientTimeout(total=2)
        ) as response:
            await response.read()
    gone = time.monotonic()
    window: list[float] = []
    while time.monotonic() - gone < 20:
        start = cpu_seconds(route)
        await asyncio.sleep(1)
        window.append(cpu_seconds(route) - start)
        if window[-1] < 0.3:
            break
    spent = cpu_seconds(route) - before
    print(f"abandoned match: {spent:.1f} CPU-s in all; per second after the client went: {window}")
    assert window[-1] < 0.3 and spent < 10, (spent, window)
