"""Large OSRM calls: matrices asked in row blocks into float64 arrays, and run in the worker's
child process (route_service.calls), on the Heidelberg dataset imported for the session."""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import osrm
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from common.geo import LatLon, haversine_m
from common.service import dump_json
from common.vehicles import VEHICLE_TABLE
from route_service.app import create_app
from route_service.calls import LARGE_MATRIX_CELLS, LARGE_ROUTE_WAYPOINTS, SPLIT_MATRIX_SOURCES
from route_service.config import RouteConfig
from route_service.formatter import waypoints_body
from route_service.importing.importer import ImportResult
from route_service.model import MatrixQuery, WaypointsQuery, WaypointsResult
from route_service.parsing import parse_waypoints
from route_service.providers import osrm_provider
from route_service.providers.osrm_provider import OsrmProvider, plain
from route_service.split_tours import SETTLE, SPLIT_TOUR_LEGS
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



async def test_a_heavy_graph_matrix_is_split_between_child_and_worker(client: Client) -> None:
    """Rows of a heavy graph matrix at a time (issue 33: a tour's matrix) are computed half in
    the child, half in the worker: the answer is the rows' own, sources numbered as sent."""
    points = as_json(dense_points(SPLIT_MATRIX_SOURCES + 10, seed=5))
    timed = {"provider": "graph", "departureTime": "2026-12-01T08:00:00+01:00", "annotations": ["duration"]}
    calls = client.app[STATE_KEY].calls
    before = calls.split_matrices
    whole = await client.post("/internal/matrix", json={"sources": points, "destinations": points, **timed})
    assert whole.status == 200 and calls.split_matrices == before + 1
    half = len(points) // 2
    parts = [await client.post("/internal/matrix", json={"sources": rows, "destinations": points, **timed})
             for rows in (points[:half], points[half:])]  # fmt: skip
    assert calls.split_matrices == before + 1  # each part is below the split's size
    body, first, second = await whole.json(), await parts[0].json(), await parts[1].json()
    assert body["durations"] == first["durations"] + second["durations"]
    assert body["sources"] == first["sources"] + second["sources"]
    at_sea = [*points[:-1], {"lat": 49.0, "lon": 8.0}]  # no road near: the last source, as sent
    refused = await client.post("/internal/matrix", json={"sources": at_sea, "destinations": points[:3], **timed},
                                headers=LEGACY)  # fmt: skip
    assert refused.status == 400
    assert f"sources[{len(at_sea) - 1}]" in (await refused.json())["details"][0]["message"]


def unsplit(client: Client, body: dict[str, Any]) -> tuple[WaypointsResult, dict[str, Any]]:
    """The tour routed leg after leg in this process, and as the service writes it."""
    dataset, registry = client.app[STATE_KEY].ready()
    parsed = parse_waypoints({k: v for k, v in body.items() if k != "expectedDepartures"}, registry)
    result = parsed.plugin(parsed.query)
    timed = "departureTime" in body
    return result, json.loads(dump_json(waypoints_body(result, parsed.provider, dataset.hash, timed)))


def tour(**extra: Any) -> dict[str, Any]:
    """A seeded tour of the dense box, each next stop the nearest (as a delivery round drives)."""
    left = dense_points(SPLIT_TOUR_LEGS + 3, seed=8)
    order = [left.pop(0)]
    while left:
        order.append(left.pop(min(range(len(left)), key=lambda i: haversine_m(order[-1], left[i]))))
    points = as_json(order)
    return {"waypoints": points, "provider": "graph", "serviceTimes": [120] * len(points), **extra}


def as_driven(client: Client, body: dict[str, Any], early: timedelta = timedelta(0)) -> list[str]:
    """When each leg of the chained tour leaves, `early` before: what the optimizer expects."""
    result, _ = unsplit(client, body)
    leaves = datetime.fromisoformat(body["departureTime"]) + timedelta(seconds=body["serviceTimes"][0])
    departures = [leaves]
    for leg, service in zip(result.route.legs[:-1], body["serviceTimes"][1:], strict=False):
        assert leg.arrival is not None
        departures.append(leg.arrival + timedelta(seconds=service))
    return [(at - early).isoformat() for at in departures]


def steady_start(client: Client) -> str:
    """An hour of a Sunday or a Tuesday from which no rule by time on the map changes before the
    tour's end."""
    graph = client.app[STATE_KEY].ready()[1].sources["graph"]
    for start in (f"{day}T{hour:02d}:00:00+01:00" for day in ("2026-11-29", "2026-12-01") for hour in range(24)):
        result, _ = unsplit(client, tour(departureTime=start))
        end = result.route.legs[-1].arrival
        assert end is not None
        if graph.next_rule_change(datetime.fromisoformat(start) - timedelta(minutes=1)) > end + SETTLE:
            return start
    raise AssertionError("no steady hour on the map")  # pragma: no cover


async def split_answer(client: Client, body: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
    """The service's answer, and how many tours it split and legs it routed again for it."""
    calls = client.app[STATE_KEY].calls
    before, again = calls.split_tours, calls.split_tour_legs_again
    response = await client.post("/internal/route", json=body)
    assert response.status == 200, await response.text()
    return await response.json(), calls.split_tours - before, calls.split_tour_legs_again - again


async def test_a_long_graph_tour_is_split_and_is_the_chained_tour(client: Client) -> None:
    """A graph tour of 40+ legs is routed half in the child, half in the worker (issue 33), at
    the departures the optimizer expects; the answer is the chained tour's, times and rules
    included. Legs whose rules change between the expected and the true time (Heidelberg's
    old town opens 06:00-11:00) are routed again."""
    steady = tour(departureTime=steady_start(client))
    answer, split, again = await split_answer(client, {**steady, "expectedDepartures": as_driven(client, steady)})
    assert (answer, split, again) == (unsplit(client, steady)[1], 1, 0)
    across = tour(departureTime="2026-12-01T10:00:00+01:00")
    answer, split, again = await split_answer(client, {**across, "expectedDepartures": as_driven(client, across)})
    assert answer == unsplit(client, across)[1] and split == 1 and again >= 1
    early = as_driven(client, across, early=timedelta(minutes=30))
    answer, split, again_early = await split_answer(client, {**across, "expectedDepartures": early})
    assert answer == unsplit(client, across)[1] and split == 1 and again_early > again
    answer, split, _ = await split_answer(client, across)  # nothing expected: leg after leg
    assert answer == unsplit(client, across)[1] and split == 0


async def test_a_split_tour_with_known_departures_is_the_tour_leg_by_leg(client: Client) -> None:
    untimed = tour()
    answer, split, _ = await split_answer(client, untimed)
    assert answer == unsplit(client, untimed)[1] and split == 1
    start = datetime.fromisoformat("2026-12-01T10:00:00+01:00")
    departures = [(start + timedelta(minutes=4 * i)).isoformat() for i in range(SPLIT_TOUR_LEGS + 2)]
    given = tour(departureTime=departures[0], legDepartures=departures)
    answer, split, again = await split_answer(client, given)
    assert answer == unsplit(client, given)[1] and (split, again) == (1, 0)


@pytest.mark.parametrize("extra", [{"departureTime": "2026-12-01T12:00:00+01:00"}, {}])
async def test_a_split_tours_bad_waypoint_is_named_as_sent(client: Client, extra: dict[str, Any]) -> None:
    body = tour(**extra)
    if extra:
        body["expectedDepartures"] = [extra["departureTime"]] * (len(body["waypoints"]) - 1)
    body["waypoints"][-2] = {"lat": 49.0, "lon": 8.0}  # in the second half, no road near
    response = await client.post("/internal/route", json=body, headers=LEGACY)
    assert response.status == 400
    assert f"waypoints[{len(body['waypoints']) - 2}]" in (await response.json())["errors"][0]
