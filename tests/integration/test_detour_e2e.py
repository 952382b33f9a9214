"""POST /v1/detour/file end to end: Redis, auth service, route service on an imported Monaco map
and the gateway as real processes, called over HTTP with a real token."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, user_token

HEADER = "id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon"
CASINO = "43.7393,7.4279"  # Place du Casino, Monte-Carlo
STADIUM = "43.7276,7.4154"  # Stade Louis II, Fontvieille
LARVOTTO = "43.7460,7.4340"  # Larvotto beach, the other way
SEA = "43.6900,7.4500"  # about 4 km out in the Mediterranean


@pytest.fixture(scope="module")
def detour_stack(full_platform: Stack) -> Stack:
    return full_platform


@pytest.fixture(scope="module")
def token(detour_stack: Stack) -> str:
    return user_token(detour_stack)


async def upload(http: aiohttp.ClientSession, stack: Stack, token: str, body: bytes, *, query: str = "",
                 headers: dict[str, str] | None = None) -> tuple[int, Any]:  # fmt: skip
    sent = {"Authorization": f"Bearer {token}", "Content-Type": "text/csv", **PROBLEM, **(headers or {})}
    async with http.post(f"{stack.base_url}/v1/detour/file{query}", data=body, headers=sent) as resp:
        return resp.status, await resp.json(content_type=None)


def line(name: str, origin: str, destination: str, via: str) -> str:
    return f"{name},{origin},{destination},{via}"


async def test_detour_file_through_the_gateway(detour_stack: Stack, token: str, http: aiohttp.ClientSession) -> None:
    text = "\n".join(
        [
            HEADER,
            line("beach", CASINO, STADIUM, LARVOTTO),
            line("sea", CASINO, STADIUM, SEA),
            line("back", STADIUM, CASINO, LARVOTTO),
        ]
    )
    status, body = await upload(
        http, detour_stack, token, text.encode(), headers={"Content-Disposition": 'attachment; filename="trips.csv"'}
    )
    assert status == 200, body
    assert (body["kind"], body["filename"], body["provider"]) == ("detours", "trips.csv", "osrm")
    assert [r["line"] for r in body["results"]] == [2, 4]
    beach = body["results"][0]
    assert beach["id"] == "beach" and beach["extraDistance"] > 1000 and beach["extraPercent"] > 30
    assert [(e["line"], e["code"]) for e in body["errors"]] == [(3, "ROUTE_ERROR_POINT_NOT_ROUTABLE")]
    assert body["errors"][0]["message"].startswith("via: ")
    assert (body["summary"]["linesRead"], body["summary"]["answered"], body["summary"]["failed"]) == (3, 2, 1)


async def test_track_through_the_gateway_with_the_query_filename(
    detour_stack: Stack, token: str, http: aiohttp.ClientSession
) -> None:
    # The track: the vertices of the route the API itself gives from the casino to the stadium.
    route_url = f"{detour_stack.base_url}/v1/route?from={CASINO.replace(',', '%2C')}&to={STADIUM.replace(',', '%2C')}"
    async with http.get(route_url + "&steps=false", headers={"Authorization": f"Bearer {token}"}) as resp:
        route = (await resp.json())["routes"][0]
    vertices = route["geometry"]["coordinates"]
    text = "lat;lon\n" + "".join(f"{lat:.6f};{lon:.6f}\n" for lon, lat in vertices)
    status, body = await upload(http, detour_stack, token, text.encode(), query="?filename=drive.txt")
    assert status == 200, body
    assert body["kind"] == "track" and body["filename"] == "drive.txt" and body["errors"] == []
    (result,) = body["results"]
    assert result["pointsUsed"] == len(vertices) and result["matched"] is True
    assert result["straightLineDistance"] < 0.1 * result["driven"]["distance"]
    # Driving the best route is no detour.
    assert result["best"]["distance"] == pytest.approx(route["distance"], rel=0.01)
    assert abs(result["extraPercent"]) < 5


@pytest.mark.parametrize(("accept", "key"), [(LEGACY, "details"), (PROBLEM, "type")])
async def test_invalid_file_name_through_the_gateway(
    detour_stack: Stack, token: str, http: aiohttp.ClientSession, accept: dict[str, str], key: str
) -> None:
    headers = {**accept, "Content-Disposition": "attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd.csv"}
    status, body = await upload(http, detour_stack, token, f"{HEADER}\n".encode(), headers=headers)
    assert status == 400
    if key == "details":
        assert body["details"][0]["code"] == "DETOUR_ERROR_INVALID_FILENAME"
    else:
        assert body["type"] == "/problems/detour/invalid-filename"


async def test_the_route_services_own_limit_answers_413_through_the_gateway(
    detour_stack: Stack, token: str, http: aiohttp.ClientSession
) -> None:
    """11 MiB: under the gateway's 16 MiB, over the detour file's 10 MiB."""
    body = f"{HEADER}\n".encode() + b"#" * (11 * 1024 * 1024)
    status, answer = await upload(http, detour_stack, token, body, query="?filename=big.csv", headers=LEGACY)
    assert status == 413 and answer["details"][0]["code"] == "DETOUR_ERROR_FILE_TOO_LARGE"


async def test_wrong_content_type_is_415_through_the_gateway(
    detour_stack: Stack, token: str, http: aiohttp.ClientSession
) -> None:
    status, body = await upload(
        http, detour_stack, token, b"{}", query="?filename=a.csv", headers={"Content-Type": "application/json"}
    )
    assert status == 415 and body["type"] == "/problems/general/unsupported-media-type"


async def test_no_token_no_detour(detour_stack: Stack, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{detour_stack.base_url}/v1/detour/file?filename=a.csv", data=b"x") as resp:
        assert resp.status == 401
