"""GET /v1/route end to end: Redis, auth service, route service on an imported Monaco map and
the gateway as real processes, called over HTTP with a real token."""

from __future__ import annotations

import re
import uuid
from typing import Any

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token

CASINO = "43.7393,7.4279"  # Place du Casino, Monte-Carlo
STADIUM = "43.7276,7.4154"  # Stade Louis II, Fontvieille
SEA = "43.6900,7.4500"  # about 4 km out in the Mediterranean
MONACO_BOX = (43.70, 43.77, 7.38, 7.46)  # lat min, lat max, lon min, lon max (with margin)


@pytest.fixture(scope="module")
def route_stack(full_platform: Stack) -> Stack:
    return full_platform


@pytest.fixture(scope="module")
def token(route_stack: Stack) -> str:
    return user_token(route_stack)


@pytest.fixture
async def get(route_stack: Stack, token: str, http: aiohttp.ClientSession) -> Any:
    """GET through the gateway with the token: (status, headers, JSON body)."""

    async def call(path: str, headers: dict[str, str] | None = None, auth: bool = True) -> tuple[int, Any, Any]:
        sent = {**PROBLEM, **(headers or {})}
        if auth:
            sent["Authorization"] = f"Bearer {token}"
        async with http.get(route_stack.base_url + path, headers=sent) as resp:
            return resp.status, resp.headers, await resp.json(content_type=None)

    return call


def route_path(origin: str, destination: str, extra: str = "") -> str:
    # The comma URL-encoded, as clients are told to send it.
    return f"/v1/route?from={origin.replace(',', '%2C')}&to={destination.replace(',', '%2C')}{extra}"


async def test_known_route_through_the_gateway(get: Any) -> None:
    status, headers, body = await get(route_path(CASINO, STADIUM))
    assert status == 200, body
    assert headers["Content-Type"].startswith("application/json")
    assert (body["provider"], body["vehicle"], body["type"]) == ("osrm", "car", "fastest")
    best = body["routes"][0]
    # The straight line is about 1.6 km; by road it is longer, but not absurdly so.
    assert 1600 < best["distance"] < 6000
    assert best["duration"] > 0
    assert best["geometry"]["type"] == "LineString"
    coordinates = best["geometry"]["coordinates"]
    assert len(coordinates) >= 2
    lat0, lat1, lon0, lon1 = MONACO_BOX
    assert all(lon0 < lon < lon1 and lat0 < lat < lat1 for lon, lat in coordinates)
    assert len(best["legs"]) == 1
    assert best["legs"][0]["steps"], "steps are on by default"
    assert best["legs"][0]["distance"] == pytest.approx(best["distance"], abs=1)
    assert "OpenStreetMap" in body["attribution"]


async def test_alternatives_and_radius_both_too_large_is_one_400_naming_both(get: Any) -> None:
    path = route_path(CASINO, STADIUM, "&alternatives=3&emergencyRoutingRadius=6000")
    status, _, problem = await get(path)
    assert status == 400
    assert problem["type"] == "/problems/general/invalid-parameter/"
    assert "alternatives" in problem["detail"] and "emergencyRoutingRadius" in problem["detail"]
    status, _, legacy = await get(path, LEGACY)
    assert status == 400
    assert len(legacy["details"]) == 2
    assert {d["code"] for d in legacy["details"]} == {"ERROR_INVALID_PARAMETER"}
    assert len(legacy["errors"]) == 2


@pytest.mark.parametrize("name", ["from", "to"])
@pytest.mark.parametrize("value", ["49.4", "a,b", "91,0", "49.4,8.7,1", ""])
async def test_malformed_point_is_400_naming_the_parameter(get: Any, name: str, value: str) -> None:
    points = {"from": CASINO, "to": STADIUM, name: value}
    status, _, problem = await get(route_path(points["from"], points["to"]))
    assert status == 400, problem
    assert problem["type"] == "/problems/general/invalid-parameter/"
    assert problem["detail"].startswith(f"{name}: ")
    assert ";" not in problem["detail"], "only the broken parameter is reported"


async def test_point_far_from_any_road_is_not_routable(get: Any) -> None:
    status, _, problem = await get(route_path(CASINO, SEA), LEGACY)
    assert status == 400, problem
    assert [d["code"] for d in problem["details"]] == ["ROUTE_ERROR_POINT_NOT_ROUTABLE"]
    status, _, problem = await get(route_path(CASINO, SEA))
    assert problem["type"] == "/problems/route/point-not-routable"
    assert problem["detail"].startswith("to: ")


@pytest.mark.parametrize("provider", ["", "&provider=valhalla&emergencyRoutingRadius=100"])
async def test_exchanged_coordinates_are_diagnosed_through_the_gateway_in_both_formats(get: Any, provider: str) -> None:
    """Snapping diagnostics survive the service hop: the point named, the map's bounds given,
    the exchange suggested."""
    lat, lon = CASINO.split(",")
    swapped = f"{lon},{lat}"
    status, _, legacy = await get(route_path(CASINO, swapped, provider), LEGACY)
    assert status == 400, legacy
    assert [d["code"] for d in legacy["details"]] == ["ROUTE_ERROR_POINT_NOT_ROUTABLE"]
    message = legacy["details"][0]["message"]
    assert message.startswith("to: no road usable by car within 1000 m")
    assert "outside the loaded map, which covers latitude" in message
    assert f"With latitude and longitude exchanged ({float(lat):.6f},{float(lon):.6f})" in message
    status, _, problem = await get(route_path(swapped, CASINO, provider))
    assert status == 400 and problem["detail"].startswith("from: no road usable by car within 1000 m")


@pytest.mark.parametrize(("provider", "answering"), [("&provider=valhalla", "valhalla"), ("", "valhalla")])
async def test_emergency_routing_answers_with_valhalla_unless_named(get: Any, provider: str, answering: str) -> None:
    status, _, body = await get(route_path(CASINO, STADIUM, f"&emergencyRoutingRadius=300{provider}"))
    assert status == 200, body
    assert body["provider"] == answering
    assert body["emergencyRoutingRadius"] == 300
    best = body["routes"][0]
    assert best["distance"] > 1600
    assert best["geometry"]["type"] == "LineString"
    assert isinstance(best["emergencySegments"], list)


async def test_osrm_with_a_radius_is_400_naming_the_radius(get: Any) -> None:
    status, _, problem = await get(route_path(CASINO, STADIUM, "&provider=osrm&emergencyRoutingRadius=300"))
    assert status == 400
    assert problem["detail"].startswith("emergencyRoutingRadius: ")


async def test_providers_lists_osrm_and_valhalla(get: Any) -> None:
    status, _, body = await get("/v1/providers")
    assert status == 200, body
    # The gateway gathers every capability's providers; routing's come from the route service.
    routing = body["routing"]
    assert routing["available"] is True
    by_name = {p["name"]: p for p in routing["providers"]}
    assert set(by_name) == {"osrm", "valhalla"}
    assert routing["default"] == "osrm"
    assert by_name["valhalla"]["capabilities"]["emergencyRouting"] is True
    assert by_name["osrm"]["capabilities"]["emergencyRouting"] is False


@pytest.mark.parametrize("header", [None, "Bearer not-a-jwt", "Basic dXNlcjpwdw=="])
async def test_route_without_a_valid_token_is_401(get: Any, header: str | None) -> None:
    status, _, problem = await get(route_path(CASINO, STADIUM), {"Authorization": header} if header else {}, auth=False)
    assert status == 401
    assert problem["type"] == "/problems/general/unauthorized"


async def test_request_id_is_echoed_on_answers_and_errors(get: Any) -> None:
    for path in (route_path(CASINO, STADIUM), route_path(CASINO, SEA)):
        request_id = f"e2e-{uuid.uuid4().hex}"
        status, headers, _ = await get(path, {"X-Request-ID": request_id})
        assert status in (200, 400)
        assert headers["X-Request-ID"] == request_id


async def test_unsafe_request_id_is_replaced_and_fresh_ids_differ(get: Any) -> None:
    _, first, _ = await get(route_path(CASINO, STADIUM), {"X-Request-ID": "bad id with spaces"})
    _, second, _ = await get(route_path(CASINO, STADIUM))
    assert first["X-Request-ID"] != "bad id with spaces"
    assert re.fullmatch(r"[0-9a-f]{32}", first["X-Request-ID"])
    assert first["X-Request-ID"] != second["X-Request-ID"]
