"""Mixed fleets on their own roads (issue 36, item 7): a truck's dimensions choose its road
matrix, so a truck over a real Heidelberg way's limit is planned around it while a small truck
of the same fleet drives it. Against the real route service."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from common.errors import ApiError, NoRouteFound
from optimize_service.fleet.check import Infeasible, check_feasible
from optimize_service.fleet.parsing import parse_fleet_request
from route_service.dataset import Dataset
from route_service.importing.importer import ImportResult
from route_service.model import TRUCK_PARAMETERS
from route_service.parsing import parse_route
from route_service.providers.registry import ProviderRegistry
from tests.optimize_service.conftest import ClientFactory, ServerFactory, optimize_client, route_server
from tests.optimize_service.test_fleet_app import road_matrix
from tests.route_service.test_truck_dimensions import SMALL_TRUCK, LimitedWay, limited_ways, passes_middle, route_params


def a_way_trucks_drive_by_size(result: ImportResult, pbf: str) -> tuple[LimitedWay, dict[str, float]]:
    """A limited way a small truck drives and a truck over its limit is routed around, with
    those too-large dimensions."""
    registry = ProviderRegistry.load(Dataset(result.hash, result.path, result.record))
    for way in limited_ways(pbf):
        small = parse_route(route_params(way, SMALL_TRUCK), registry)
        if not passes_middle(small.plugin(small.query).routes[0].geometry, way):
            continue
        limited = next(i for i, limit in enumerate(way.limits) if math.isfinite(limit))
        over = {**SMALL_TRUCK, TRUCK_PARAMETERS[limited]: f"{way.limits[limited] + 0.5:.2f}"}
        big = parse_route(route_params(way, over), registry)
        try:
            around = big.plugin(big.query).routes[0]
        except NoRouteFound:  # no way round for it: not the case sought
            continue
        if not passes_middle(around.geometry, way):
            return way, {name: float(value) for name, value in over.items()}
    raise AssertionError("no limited way on the map that only a small truck drives")  # pragma: no cover


async def test_each_truck_is_planned_on_the_roads_its_size_may_use(
    aiohttp_client: ClientFactory, aiohttp_server: ServerFactory, city_maps: Callable[[str], ImportResult],
    redis_server: str, shared_osm: str,
) -> None:  # fmt: skip
    result = city_maps("heidelberg")
    way, big = a_way_trucks_drive_by_size(result, f"{shared_osm}/heidelberg.osm.pbf")
    server = await route_server(aiohttp_server, result, redis_server)
    client = await optimize_client(aiohttp_client, str(server.make_url("")).rstrip("/"))
    (lon0, lat0), (lon1, lat1) = way.points[0], way.points[-1]
    start, end = {"lat": lat0, "lon": lon0}, {"lat": lat1, "lon": lon1}
    small = {name: float(value) for name, value in SMALL_TRUCK.items()}
    body: dict[str, Any] = {
        "vehicles": [
            {"id": "small", "kind": "truck", "start": start, "truck": small, "skills": ["small"]},
            {"id": "big", "kind": "truck", "start": start, "truck": big, "skills": ["big"]},
        ],
        "jobs": [
            {"id": "for-small", "location": end, "skills": ["small"]},
            {"id": "for-big", "location": end, "skills": ["big"]},
        ],
    }
    response = await client.post("/v1/optimize/routes", data=orjson.dumps(body), headers={"Content-Type": "application/json"})
    answer: dict[str, Any] = await response.json()
    assert response.status == 200, answer
    routes = {route["vehicle"]: route for route in answer["routes"]}
    assert answer["unassigned"] == [] and set(routes) == {"small", "big"}
    assert routes["big"]["distance"] > routes["small"]["distance"], (way.way_id, routes)
    line = [tuple(p) for p in routes["small"]["geometry"]["coordinates"]]
    assert passes_middle(line, way)  # type: ignore[arg-type]
    assert not passes_middle([tuple(p) for p in routes["big"]["geometry"]["coordinates"]], way)  # type: ignore[arg-type]
    # The independent checker, on each truck's own road matrix (the small one's legs break the big one's).
    roads = {name: await road_matrix(server, body, "truck", size) for name, size in (("small", small), ("big", big))}
    check_feasible(body, answer, roads)
    with pytest.raises(Infeasible):
        check_feasible(body, answer, {"small": roads["big"], "big": roads["big"]})


@pytest.mark.parametrize(
    ("truck", "kind", "field"),
    [({"height": 7}, "truck", "truck.height"), ({"mass": 3}, "truck", "truck.mass"), ({"height": 3}, "car", "truck")],
)
def test_bad_truck_dimensions_are_named(truck: dict[str, Any], kind: str, field: str) -> None:
    here = {"lat": 49.41, "lon": 8.69}
    body = {"vehicles": [{"id": "v", "kind": kind, "start": here, "truck": truck}], "jobs": [{"id": "j", "location": here}]}
    with pytest.raises(ApiError) as caught:
        parse_fleet_request(body, datetime.now(UTC))
    assert [v.parameter for v in caught.value.violations] == [f"vehicles[0].{field}"]
