"""POST /v1/match end to end on the imported Monaco map: a trace along a real route, as JSON
and as GPX, through the gateway with a token; too long a trace and a missing token refused in
our formats."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bench.match import synthetic_trace
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
