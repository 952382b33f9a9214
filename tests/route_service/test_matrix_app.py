"""POST /v1/matrix on the route service, on the Heidelberg dataset imported for the session:
cells agree with /v1/route, every bad body is a 400 or 413 in both formats, never a 500."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import orjson
import pytest

from common.geo import LatLon
from common.internal_auth import INTERNAL_TIER_HEADER
from common.service import dump_json
from route_service.app import create_app
from route_service.formatter import matrix_body
from route_service.importing.importer import ImportResult
from route_service.model import MatrixResult, Snapped
from tests.route_service.test_route_app import LEGACY, PROBLEM, Client, ClientFactory, make_config

# Central Heidelberg: Bismarckplatz, Hauptbahnhof, Universitätsplatz, Neuenheim, Weststadt.
POINTS = [
    {"lat": 49.4095, "lon": 8.6936},
    {"lat": 49.4036, "lon": 8.6757},
    {"lat": 49.4106, "lon": 8.7060},
    {"lat": 49.4170, "lon": 8.6950},
    {"lat": 49.4020, "lon": 8.6900},
]


@pytest.fixture
async def client(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(heidelberg_maps.path.parent, redis_server)))


async def post(
    client: Client, body: Any, headers: dict[str, str] | None = None, tier: str | None = "standard"
) -> tuple[int, Any]:
    """As the gateway forwards it: with the caller's tier (None: a request without one)."""
    sent = {"Content-Type": "application/json", **(headers or {})}
    if tier is not None:
        sent[INTERNAL_TIER_HEADER] = tier
    response = await client.post("/v1/matrix", data=orjson.dumps(body), headers=sent)
    return response.status, await response.json(content_type=None)


def text(point: dict[str, float]) -> str:
    return f"{point['lat']},{point['lon']}"


async def test_all_to_all_by_default_with_both_tables(client: Client) -> None:
    status, body = await post(client, {"sources": POINTS})
    assert status == 200, body
    n = len(POINTS)
    assert len(body["durations"]) == n and all(len(row) == n for row in body["durations"])
    assert len(body["distances"]) == n and all(len(row) == n for row in body["distances"])
    assert all(body["durations"][i][i] == 0 for i in range(n))
    assert all(c > 0 for i, row in enumerate(body["distances"]) for j, c in enumerate(row) if i != j)
    assert len(body["sources"]) == len(body["destinations"]) == n
    assert {"lat", "lon", "distance", "name"} <= body["sources"][0].keys()
    assert (body["provider"], body["vehicle"], body["type"]) == ("osrm", "car", "fastest")
    assert body["annotations"] == ["duration", "distance"] and "OpenStreetMap" in body["attribution"]


async def test_only_the_tables_asked_for(client: Client) -> None:
    status, body = await post(client, {"sources": POINTS[:2], "destinations": POINTS, "annotations": ["distance"]})
    assert status == 200, body
    assert "durations" not in body and len(body["distances"]) == 2 and len(body["distances"][0]) == len(POINTS)


@pytest.mark.parametrize(
    ("provider", "vehicle", "kind"),
    [
        ("osrm", "car", "fastest"),
        ("osrm", "bicycle", "shortest"),
        ("osrm", "truck", "fastest"),
        ("valhalla", "car", "fastest"),
    ],
)
async def test_a_cell_is_the_route_for_the_same_pair(client: Client, provider: str, vehicle: str, kind: str) -> None:
    options = {"provider": provider, "vehicle": vehicle, "type": kind}
    sources, destinations = POINTS[:2], POINTS[2:]
    status, body = await post(client, {"sources": sources, "destinations": destinations, **options})
    assert status == 200, body
    for i, source in enumerate(sources):
        for j, destination in enumerate(destinations):
            query = f"from={text(source)}&to={text(destination)}&steps=false&" + "&".join(
                f"{k}={v}" for k, v in options.items()
            )
            response = await client.get(f"/v1/route?{query}")
            route = (await response.json())["routes"][0]
            if provider == "valhalla":  # its exact search may find a cheaper way than the route's A*, never a dearer
                assert 0.95 * route["duration"] <= body["durations"][i][j] <= route["duration"] + 0.2, (i, j)
                assert body["distances"][i][j] == pytest.approx(route["distance"], rel=0.05), (i, j)
                continue
            assert body["durations"][i][j] == pytest.approx(route["duration"], abs=0.2), (i, j)
            assert body["distances"][i][j] == pytest.approx(route["distance"], abs=1.0), (i, j)


async def test_a_point_without_a_road_is_named(client: Client) -> None:
    far = {"lat": 49.3000, "lon": 8.4000}  # fields west of the extract
    for body, parameter in [
        ({"sources": [POINTS[0], far], "destinations": POINTS[:2]}, "sources[1]"),
        ({"sources": POINTS[:2], "destinations": [POINTS[0], POINTS[1], far]}, "destinations[2]"),
    ]:
        status, legacy = await post(client, body, LEGACY)
        assert status == 400, legacy
        assert legacy["details"][0]["code"] == "ROUTE_ERROR_POINT_NOT_ROUTABLE"
        assert legacy["details"][0]["message"].startswith(parameter + ":"), legacy


BAD_BODIES = [
    ([POINTS], [None]),
    ("sources", [None]),
    ({}, ["sources"]),
    ({"sources": []}, ["sources"]),
    ({"sources": "49.4,8.6"}, ["sources"]),
    ({"sources": POINTS, "destinations": []}, ["destinations"]),
    ({"sources": POINTS, "destinations": {"lat": 1, "lon": 2}}, ["destinations"]),
    ({"sources": [POINTS[0], 7, {"lat": 49.4}]}, ["sources[1]", "sources[2].lon"]),
    ({"sources": [{"lat": 91, "lon": 8.7}, {"lat": 49.4, "lon": -180.5}]}, ["sources[0].lat", "sources[1].lon"]),
    (
        {"sources": [{"lat": "49.4", "lon": None}, {"lat": True, "lon": 8.7}]},
        ["sources[0].lat", "sources[0].lon", "sources[1].lat"],
    ),
    ({"sources": [{"lat": 1e308 * 10, "lon": 8.7}]}, ["sources[0].lat"]),
    ({"sources": POINTS, "vehicle": "rocket", "type": "scenic"}, ["vehicle", "type"]),
    ({"sources": POINTS, "vehicle": 5}, ["vehicle"]),
    ({"sources": POINTS, "annotations": ["duration", "speed"]}, ["annotations"]),
    ({"sources": POINTS, "annotations": "duration"}, ["annotations"]),
    ({"sources": POINTS, "annotations": []}, ["annotations"]),
    ({"sources": POINTS, "annotations": ["duration", "duration"]}, ["annotations"]),
    ({"sources": POINTS, "annotations": [{"a": 1}]}, ["annotations"]),
    ({"sources": POINTS, "provider": "nowhere"}, ["provider"]),
    ({"sources": POINTS, "destination": POINTS}, ["destination"]),
    ({"sources": [POINTS[0]] * 1001, "destinations": POINTS[:1]}, ["sources"]),
]


@pytest.mark.parametrize(("body", "parameters"), BAD_BODIES)
async def test_bad_bodies_name_every_violation_in_both_formats(
    client: Client, body: Any, parameters: list[str | None]
) -> None:
    status, legacy = await post(client, body, LEGACY)
    assert status == 400, legacy
    messages = [d["message"] for d in legacy["details"]]
    assert len(messages) == len(parameters), messages
    for message, parameter in zip(messages, parameters, strict=True):
        assert parameter is None or message.startswith(parameter + ":"), (message, parameter)
    assert legacy["errors"] == messages
    status, problem = await post(client, body, PROBLEM)
    assert status == 400 and problem["status"] == 400
    assert problem["detail"] == "; ".join(messages) and problem["instance"].startswith("/v1/matrix")


async def test_not_json_and_wrong_media_type(client: Client) -> None:
    response = await client.post("/v1/matrix", data=b"{nope", headers={"Content-Type": "application/json", **LEGACY})
    assert response.status == 400
    response = await client.post("/v1/matrix", data=b"{}", headers={"Content-Type": "text/plain", **PROBLEM})
    assert response.status == 415 and (await response.json(content_type=None))["status"] == 415


@pytest.mark.parametrize(
    ("tier", "side", "limit"),
    [("standard", 100, 10_000), ("demo", 32, 1000), ("gold", 32, 1000), (None, 32, 1000)],
)
async def test_the_tiers_cell_limits(client: Client, tier: str | None, side: int, limit: int) -> None:
    """At the limit answers; one row more is a 413 naming it. A tier the service does not
    know, or no tier at all, gets the smallest limit."""
    point = [POINTS[0]]
    at_limit = {"sources": point * (limit // side), "destinations": point * side, "annotations": ["duration"]}
    status, body = await post(client, at_limit, tier=tier)
    assert status == 200, body
    over = {"sources": point * (limit // side + 1), "destinations": point * side}
    status, legacy = await post(client, over, LEGACY, tier)
    assert status == 413 and legacy["details"][0]["code"] == "ROUTE_ERROR_MATRIX_TOO_LARGE"
    assert f"at most {limit} cells" in legacy["details"][0]["message"]
    status, problem = await post(client, over, PROBLEM, tier)
    assert status == 413 and problem["type"] == "/problems/route/matrix-too-large"
    assert f"at most {limit} cells" in problem["detail"]


async def test_unlimited_goes_past_the_standard_limit(client: Client) -> None:
    many = {"sources": POINTS * 30, "destinations": POINTS * 20, "annotations": ["duration"]}
    status, body = await post(client, many, tier="unlimited")
    assert status == 200 and len(body["durations"]) == 150, body


async def test_too_many_cells_all_to_all(client: Client) -> None:
    status, body = await post(client, {"sources": [POINTS[0]] * 101}, LEGACY)
    assert status == 413 and "10201 cells" in body["details"][0]["message"]


def test_an_unreachable_cell_is_null() -> None:
    """OSRM's and Valhalla's NaN (no route) becomes JSON null."""
    here = Snapped(LatLon(49.4, 8.7), 1.0)
    result = MatrixResult(np.array([[0.0, np.nan]]), np.array([[0.0, np.nan]]), [here], [here, here])
    table = orjson.loads(dump_json(matrix_body(result, "osrm", "x")))
    assert table["durations"] == [[0.0, None]] and table["distances"] == [[0.0, None]]


async def test_100_by_100_timing(client: Client) -> None:
    """Not a benchmark: a guard against an order-of-magnitude regression (goal ≤ 100 ms)."""
    rng = np.random.default_rng(7)
    points = [{"lat": float(49.40 + 0.02 * a), "lon": float(8.67 + 0.04 * b)} for a, b in rng.random((100, 2))]
    await post(client, {"sources": points})  # warm the engine
    started = time.perf_counter()
    status, body = await post(client, {"sources": points})
    elapsed = time.perf_counter() - started
    assert status == 200 and len(body["durations"]) == 100
    print(f"100x100 matrix in-process: {elapsed * 1000:.0f} ms")
    assert elapsed < 2.0


async def test_truck_dimensions_and_their_faults(client: Client) -> None:
    status, body = await post(client, {"sources": POINTS[:3], "vehicle": "truck", "truck": {"height": 3.9, "weight": 18}})
    assert status == 200 and body["provider"] == "valhalla", body
    status, body = await post(client, {"sources": POINTS[:2], "vehicle": "car", "truck": {"height": 0, "hight": 3}})
    assert status == 400, body
    assert [v.split(":")[0] for v in body["detail"].split("; ")] == ["truck.hight", "truck.height"]
