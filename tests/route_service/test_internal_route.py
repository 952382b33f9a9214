"""POST /internal/route: one route through many waypoints (the optimize service's tour),
over HTTP on the Heidelberg dataset imported for the session, with both providers."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from route_service.app import create_app
from route_service.config import RouteConfig
from route_service.importing.importer import ImportResult

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]
LEGACY = {"Accept": "application/json"}
# Bismarckplatz → Hauptbahnhof → Universitätsplatz → Bergheim, in the dense city.
WAYPOINTS = [
    {"lat": 49.4095, "lon": 8.6936},
    {"lat": 49.4036, "lon": 8.6757},
    {"lat": 49.4106, "lon": 8.7060},
    {"lat": 49.4080, "lon": 8.6860},
]


@pytest.fixture
async def client(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult, redis_server: str) -> Client:
    config = RouteConfig.from_env(
        "route_service", map_dir=heidelberg_maps.path.parent, redis_url=redis_server, port=0, preload=False
    )
    return await aiohttp_client(create_app(config))


async def post(client: Client, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    response = await client.post("/internal/route", json=body, headers=headers or {})
    return response.status, await response.json(content_type=None)


async def leg_by_leg(client: Client, provider: str) -> list[dict[str, Any]]:
    legs = []
    for a, b in itertools.pairwise(WAYPOINTS):
        query = f"from={a['lat']},{a['lon']}&to={b['lat']},{b['lon']}&steps=false&provider={provider}"
        response = await client.get(f"/v1/route?{query}")
        assert response.status == 200
        legs.append((await response.json())["routes"][0])
    return legs


@pytest.mark.parametrize("provider", ["osrm", "valhalla"])
async def test_route_through_waypoints_has_one_leg_per_pair(client: Client, provider: str) -> None:
    status, body = await post(client, {"waypoints": WAYPOINTS, "provider": provider})
    assert status == 200, body
    assert body["provider"] == provider and body["dataset"]
    assert len(body["legs"]) == len(WAYPOINTS) - 1 and len(body["waypoints"]) == len(WAYPOINTS)
    assert body["distance"] == pytest.approx(sum(leg["distance"] for leg in body["legs"]), abs=1)
    assert body["duration"] == pytest.approx(sum(leg["duration"] for leg in body["legs"]), abs=1)
    assert all(leg["distance"] > 100 and leg["duration"] > 10 for leg in body["legs"])
    line = body["geometry"]
    assert line["type"] == "LineString" and len(line["coordinates"]) > 10
    # The line starts and ends where the first and last waypoints met the roads.
    first, last = body["waypoints"][0], body["waypoints"][-1]
    assert line["coordinates"][0] == pytest.approx([first["lon"], first["lat"]], abs=1e-5)
    assert line["coordinates"][-1] == pytest.approx([last["lon"], last["lat"]], abs=1e-5)
    # Each leg is the route between its two waypoints (OSRM may turn at a waypoint, /v1/route
    # starts and ends the same way, so the lengths agree closely).
    singles = await leg_by_leg(client, provider)
    for leg, single in zip(body["legs"], singles, strict=True):
        assert leg["distance"] == pytest.approx(single["distance"], rel=0.1, abs=50)


async def test_osrm_legs_match_the_matrix(client: Client) -> None:
    """The optimize service orders stops on the matrix and reports these legs: they must agree."""
    status, body = await post(client, {"waypoints": WAYPOINTS})
    assert status == 200
    response = await client.post("/internal/matrix", json={"sources": WAYPOINTS, "destinations": WAYPOINTS})
    durations = (await response.json())["durations"]
    for i, leg in enumerate(body["legs"]):
        assert leg["duration"] == pytest.approx(durations[i][i + 1], abs=1.0)


async def test_vehicle_and_type_change_the_route(client: Client) -> None:
    _, car = await post(client, {"waypoints": WAYPOINTS[:2]})
    _, walk = await post(client, {"waypoints": WAYPOINTS[:2], "vehicle": "pedestrian", "type": "shortest"})
    assert walk["duration"] > 2 * car["duration"]


@pytest.mark.parametrize(
    ("body", "parameters"),
    [
        ([WAYPOINTS], [None]),
        ({"waypoints": WAYPOINTS[:1]}, ["waypoints"]),
        ({"waypoints": "x"}, ["waypoints"]),
        (
            {"waypoints": [WAYPOINTS[0], {"lat": 91, "lon": 8.7}, {"lat": True, "lon": 8.7}]},
            ["waypoints[1].lat", "waypoints[2].lat"],
        ),
        ({"waypoints": WAYPOINTS, "vehicle": "rocket", "type": "scenic"}, ["vehicle", "type"]),
        ({"waypoints": WAYPOINTS, "provider": "nowhere"}, ["provider"]),
    ],
)
async def test_invalid_bodies_name_every_violation(client: Client, body: Any, parameters: list[str | None]) -> None:
    status, legacy = await post(client, body, LEGACY)
    assert status == 400, legacy
    messages = [d["message"] for d in legacy["details"]]
    assert len(messages) == len(parameters)
    for message, parameter in zip(messages, parameters, strict=True):
        assert parameter is None or message.startswith(f"{parameter}: ")


@pytest.mark.parametrize("provider", ["osrm", "valhalla"])
async def test_a_waypoint_far_from_roads_is_named(client: Client, provider: str) -> None:
    far = {"lat": 49.30, "lon": 8.40}  # fields west of Heidelberg, outside the extract
    status, legacy = await post(client, {"waypoints": [*WAYPOINTS[:2], far], "provider": provider}, LEGACY)
    assert status == 400, legacy
    assert legacy["details"][0]["code"] == "ROUTE_ERROR_POINT_NOT_ROUTABLE"
    assert legacy["details"][0]["message"].startswith("waypoints[2]: ")


async def test_invalid_json_is_400(client: Client) -> None:
    response = await client.post("/internal/route", data=b"{", headers={"Content-Type": "application/json", **LEGACY})
    assert response.status == 400
    assert (await response.json())["details"][0]["code"] == "ERROR_MALFORMED_BODY"
