"""Large OSRM calls: matrices asked in row blocks into float64 arrays, and run in the worker's
child process (route_service.calls), on the Heidelberg dataset imported for the session."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import osrm
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from common.geo import LatLon
from common.vehicles import VEHICLE_TABLE
from route_service.app import create_app
from route_service.calls import LARGE_MATRIX_CELLS, LARGE_ROUTE_WAYPOINTS
from route_service.config import RouteConfig
from route_service.importing.importer import ImportResult
from route_service.model import MatrixQuery, WaypointsQuery
from route_service.providers import osrm_provider
from route_service.providers.osrm_answers import plain
from route_service.providers.osrm_provider import OsrmProvider
from route_service.state import STATE_KEY
from tests.route_service.osm_samples import DENSE_BOX

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]
LEGACY = {"Accept": "application/json"}


def dense_points(count: int, seed: int) -> list[LatLon]:
    """Seeded points of the dense city box; the seeds used all lie within reach of a road."""
    rng = random.Random(seed)
    lat0, lat1, lon0, lon1 = DENSE_BOX
    return [LatLon(round(rng.uniform(lat0, lat1), 6), round(rng.uniform(lon0, lon1), 6)) for _ in range(count)]


def as_json(points: list[LatLon]) -> list[dict[str, float]]:
    return [{"lat": p.lat, "lon": p.lon} for p in points]


@pytest.fixture
async def client(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult, redis_server: str) -> Client:
    config = RouteConfig.from_env(
        "route_service", map_dir=heidelberg_maps.path.parent, redis_url=redis_server, port=0, preload=False
    )
    return await aiohttp_client(create_app(config))


def test_row_blocks_give_the_single_table_call(osrm_hd: OsrmProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    sources, destinations = dense_points(23, seed=5), [*dense_points(20, seed=6), LatLon(49.3990, 8.6460)]
    engine = osrm_hd._engine("car-fastest")
    coordinates = [(p.lon, p.lat) for p in [*sources, *destinations]]
    params = osrm.TableParameters(
        coordinates=coordinates,
        sources=list(range(23)),
        destinations=list(range(23, len(coordinates))),
        annotations=["duration", "distance"],
        radiuses=[VEHICLE_TABLE["car"].snap_radius_m] * len(coordinates),
        generate_hints=False,
    )
    table = plain(engine.Table(params))  # the conversion used before: lists with None
    monkeypatch.setattr(osrm_provider, "MAX_TABLE_VALUES", 5 * len(destinations) * 2)  # 5 rows a call
    result = osrm_hd.matrix(MatrixQuery(sources, destinations))
    for name, values in (("durations", result.durations_s), ("distances", result.distances_m)):
        expected = np.array(table[name], dtype=np.float64)  # None → NaN
        np.testing.assert_array_equal(values, expected)
    assert [s.location for s in result.snapped_sources] == [LatLon(lat, lon) for lon, lat in (w["location"] for w in table["sources"])]
    assert len(result.snapped_destinations) == len(destinations)


async def test_a_large_matrix_from_the_child_equals_the_workers(client: Client) -> None:
    points = as_json(dense_points(150, seed=3))
    assert len(points) ** 2 >= LARGE_MATRIX_CELLS and client.app[STATE_KEY].calls.large is not None
    response = await client.post("/internal/matrix", json={"sources": points, "destinations": points})
    assert response.status == 200
    large = await response.json()
    response = await client.post("/internal/matrix", json={"sources": points[:10], "destinations": points})
    small = await response.json()  # 1500 cells: in the worker
    assert large["durations"][:10] == small["durations"] and large["distances"][:10] == small["distances"]
    assert large["sources"][:10] == small["sources"] and large["destinations"] == small["destinations"]


async def test_annotations_choose_the_tables(client: Client) -> None:
    points = as_json(dense_points(5, seed=2))
    response = await client.post("/internal/matrix", json={"sources": points, "destinations": points, "annotations": ["duration"]})
    body = await response.json()
    assert response.status == 200 and "distances" not in body and len(body["durations"]) == 5
    for bad in (["time"], [], "duration", ["duration", "duration"]):
        response = await client.post(
            "/internal/matrix", json={"sources": points, "destinations": points, "annotations": bad}, headers=LEGACY
        )
        assert response.status == 400
        assert (await response.json())["errors"][0].startswith("annotations: must be a list of distinct values")


async def test_a_long_tour_from_the_child_equals_the_providers(client: Client) -> None:
    points = dense_points(LARGE_ROUTE_WAYPOINTS + 10, seed=3)
    response = await client.post("/internal/route", json={"waypoints": as_json(points)})
    assert response.status == 200
    body = await response.json()
    _, registry = client.app[STATE_KEY].ready()  # the worker's plugins: surface roads and all
    waypoints = registry.providers["osrm"].waypoints
    assert waypoints is not None
    expected = waypoints(WaypointsQuery(points)).route
    assert (body["distance"], body["duration"]) == (expected.distance_m, expected.duration_s)
    assert len(body["legs"]) == len(points) - 1 and len(body["geometry"]["coordinates"]) == len(expected.geometry)


async def test_a_long_tours_bad_waypoint_is_named_as_sent(client: Client) -> None:
    """A tour routed in the child names its point at fault as the caller sent it."""
    body = {"waypoints": as_json(dense_points(LARGE_ROUTE_WAYPOINTS + 10, seed=3))}  # all near roads (above)
    body["waypoints"][-2] = {"lat": 49.0, "lon": 8.0}  # no road near
    response = await client.post("/internal/route", json=body, headers=LEGACY)
    assert response.status == 400
    assert f"waypoints[{len(body['waypoints']) - 2}]" in (await response.json())["errors"][0]
