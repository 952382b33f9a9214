"""The route service over HTTP, on the Heidelberg dataset imported for the session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import shapely
import shapely.geometry
from aiohttp import web
from aiohttp.test_utils import TestClient

from route_service.app import create_app
from route_service.config import RouteConfig
from route_service.importing.importer import ImportResult

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]
LEGACY = {"Accept": "application/json"}
PROBLEM = {"Accept": "application/json, application/problem+json"}
OK = "from=49.4105,8.7050&to=49.4170,8.6950"


def make_config(map_dir: Path, redis_url: str) -> RouteConfig:
    return RouteConfig.from_env("route_service", map_dir=map_dir, redis_url=redis_url, port=0, preload=False)


@pytest.fixture
async def client(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(heidelberg_maps.path.parent, redis_server)))


async def test_route(client: Client) -> None:
    response = await client.get(f"/v1/route?{OK}&alternatives=1")
    assert response.status == 200
    body = await response.json()
    assert body["provider"] == "osrm" and body["vehicle"] == "car" and body["type"] == "fastest"
    route = body["routes"][0]
    assert route["distance"] > 0 and route["duration"] > 0 and route["emergencySegments"] == []
    assert route["geometry"]["type"] == "LineString" and len(route["geometry"]["coordinates"][0]) == 2
    step = route["legs"][0]["steps"][0]
    assert {"instruction", "name", "distance", "duration", "maneuver"} <= step.keys()
    assert {"lat", "lon", "distance", "name"} <= body["snappedFrom"].keys()
    assert body["alternativesFound"] == len(body["routes"]) - 1
    assert isinstance(body["notes"], list) and "OpenStreetMap" in body["attribution"]


@pytest.mark.parametrize("vehicle", ["car", "truck", "bicycle", "pedestrian"])
@pytest.mark.parametrize("kind", ["fastest", "shortest"])
async def test_every_vehicle_and_type(client: Client, vehicle: str, kind: str) -> None:
    response = await client.get(f"/v1/route?{OK}&vehicle={vehicle}&type={kind}&steps=false")
    assert response.status == 200
    body = await response.json()
    assert (body["vehicle"], body["type"]) == (vehicle, kind) and body["routes"][0]["legs"][0]["steps"] == []


async def test_geometry_false_answers_the_same_route_without_its_line(client: Client) -> None:
    with_line = await (await client.get(f"/v1/route?{OK}&vehicle=truck")).json()
    response = await client.get(f"/v1/route?{OK}&vehicle=truck&geometry=false")
    assert response.status == 200 and response.headers["X-Cache"] == "miss"  # not the answer with a line
    route, lined = (await response.json())["routes"][0], with_line["routes"][0]
    assert route["geometry"] is None and lined["geometry"]["type"] == "LineString"
    assert (route["distance"], route["duration"], route["legs"]) == (lined["distance"], lined["duration"], lined["legs"])
    refused = await client.get(f"/v1/route?{OK}&geometry=maybe", headers=PROBLEM)
    assert refused.status == 400 and "geometry" in await refused.text()


async def test_second_identical_request_is_a_cache_hit(client: Client) -> None:
    query = f"/v1/route?{OK}&vehicle=bicycle&alternatives=2"
    first = await client.get(query)
    second = await client.get(query)
    assert first.headers["X-Cache"] in ("miss", "hit")  # an earlier test run may have filled it
    assert second.headers["X-Cache"] == "hit"
    assert await first.json() == await second.json()


async def test_redis_down_changes_nothing(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult) -> None:
    config = make_config(heidelberg_maps.path.parent, "redis://127.0.0.1:9/0")  # nothing listens on 9
    client = await aiohttp_client(create_app(config))
    for _ in range(2):
        response = await client.get(f"/v1/route?{OK}")
        assert response.status == 200 and response.headers["X-Cache"] == "miss"
    health = await (await client.get("/health")).json()
    assert health["status"] == "ok" and health["checks"]["redis"] == "down"


INVALID = [
    ("from=49.4&to=49.42,8.70", ["from"]),
    ("from=a,b&to=49.42,8.70", ["from"]),
    ("from=91,0&to=49.42,8.70", ["from"]),
    ("from=49.4,8.7,1&to=49.42,8.70", ["from"]),
    ("from=&to=49.42,8.70", ["from"]),
    ("from=49.4105,8.7050&to=", ["to"]),
    ("to=49.42,8.70", ["from"]),
    (f"{OK}&vehicle=plane", ["vehicle"]),
    (f"{OK}&type=scenic", ["type"]),
    (f"{OK}&provider=nope", ["provider"]),
    (f"{OK}&alternatives=3", ["alternatives"]),
    (f"{OK}&alternatives=-1", ["alternatives"]),
    (f"{OK}&alternatives=1.5", ["alternatives"]),
    (f"{OK}&emergencyRoutingRadius=5001", ["emergencyRoutingRadius"]),
    (f"{OK}&emergencyRoutingRadius=-1", ["emergencyRoutingRadius"]),
    (f"{OK}&emergencyRoutingRadius=abc", ["emergencyRoutingRadius"]),
    (f"{OK}&alternatives=3&emergencyRoutingRadius=6000", ["alternatives", "emergencyRoutingRadius"]),
    (f"{OK}&provider=osrm&emergencyRoutingRadius=100", ["emergencyRoutingRadius"]),
]


@pytest.mark.parametrize(("query", "parameters"), INVALID)
async def test_invalid_parameters_in_both_formats(client: Client, query: str, parameters: list[str]) -> None:
    legacy = await client.get(f"/v1/route?{query}", headers=LEGACY)
    assert legacy.status == 400 and legacy.content_type == "application/json"
    body = await legacy.json()
    assert body["status"] == 400 and len(body["details"]) == len(parameters) == len(body["errors"])
    for detail, parameter in zip(body["details"], parameters, strict=True):
        assert detail["code"] == "ERROR_INVALID_PARAMETER" and detail["message"].startswith(f"{parameter}: ")

    problem = await client.get(f"/v1/route?{query}", headers=PROBLEM)
    assert problem.status == 400 and problem.content_type == "application/problem+json"
    body = await problem.json()
    assert body["type"] == "/problems/general/invalid-parameter/"
    assert body["title"] == "Some parameters have invalid values"
    assert [part.split(":")[0] for part in body["detail"].split("; ")] == parameters
    assert body["instance"].startswith("/v1/route") and body["timestamp"]


@pytest.mark.parametrize("headers", [LEGACY, PROBLEM])
async def test_point_far_from_roads(client: Client, headers: dict[str, str]) -> None:
    response = await client.get("/v1/route?from=49.0,8.69&to=49.417,8.695", headers=headers)
    assert response.status == 400
    body = await response.json()
    if headers is LEGACY:
        assert body["details"][0]["code"] == "ROUTE_ERROR_POINT_NOT_ROUTABLE"
        assert body["details"][0]["message"].startswith("from: ")
    else:
        assert body["type"] == "/problems/route/point-not-routable" and body["detail"].startswith("from: ")


async def test_emergency_radius_goes_to_valhalla(client: Client) -> None:
    response = await client.get(f"/v1/route?{OK}&emergencyRoutingRadius=300")
    assert response.status == 200
    body = await response.json()
    assert body["provider"] == "valhalla" and body["emergencyRoutingRadius"] == 300


async def test_providers(client: Client) -> None:
    body = await (await client.get("/v1/providers")).json()
    assert body["default"] == "osrm"
    by_name = {p["name"]: p for p in body["providers"]}
    assert by_name["osrm"]["default"] and not by_name["osrm"]["capabilities"]["emergencyRouting"]
    assert by_name["osrm"]["vehicles"] == ["car", "truck", "bicycle", "pedestrian"]
    assert by_name["valhalla"]["capabilities"]["emergencyRouting"]
    assert by_name["valhalla"]["capabilities"]["avoidAreas"] and not by_name["osrm"]["capabilities"]["avoidAreas"]
    assert "graph" not in by_name, "our road graph is deleted (issue 56)"


async def test_providers_say_what_the_map_covers(client: Client) -> None:
    coverage = (await (await client.get("/v1/providers")).json())["coverage"]
    min_lon, min_lat, max_lon, max_lat = coverage["bounds"]
    bismarckplatz = shapely.Point(8.6936, 49.4095)
    assert min_lon < bismarckplatz.x < max_lon and min_lat < bismarckplatz.y < max_lat
    outline = shapely.geometry.shape(coverage["outline"])
    assert outline.geom_type == "MultiPolygon" and outline.contains(bismarckplatz)
    assert not outline.contains(shapely.Point(8.6936, 48.0)), "the outline is where the roads are, not the world"
    assert outline.area < (max_lon - min_lon) * (max_lat - min_lat)
    assert coverage["sources"] == ["heidelberg.osm.pbf"] and coverage["importedAt"].startswith("20")


async def test_matrix(client: Client) -> None:
    body = {
        "sources": [{"lat": 49.4105, "lon": 8.7050}, {"lat": 49.4170, "lon": 8.6950}],
        "destinations": [{"lat": 49.4000, "lon": 8.6800}],
        "vehicle": "car",
    }
    response = await client.post("/internal/matrix", json=body)
    assert response.status == 200
    result = await response.json()
    assert len(result["durations"]) == 2 and len(result["durations"][0]) == 1
    assert result["distances"][0][0] > 0 and len(result["sources"]) == 2
    bad = await client.post("/internal/matrix", data=b"{", headers=LEGACY)
    assert bad.status == 400
    empty = await client.post("/internal/matrix", json={"sources": []}, headers=LEGACY)
    assert empty.status == 400 and len((await empty.json())["details"]) == 2


async def test_health_reports_the_dataset(client: Client, heidelberg_maps: ImportResult) -> None:
    body = await (await client.get("/health")).json()
    assert body["status"] == "ok" and body["checks"]["dataset"] == heidelberg_maps.hash
    assert body["checks"]["providers"] == ["osrm", "valhalla"]


async def test_without_a_dataset_the_service_is_unready(
    aiohttp_client: ClientFactory, tmp_path: Path, redis_server: str
) -> None:
    client = await aiohttp_client(create_app(make_config(tmp_path / "empty", redis_server)))
    health = await client.get("/health")
    assert health.status == 503
    response = await client.get(f"/v1/route?{OK}", headers=LEGACY)
    assert response.status == 503
    assert (await response.json())["details"][0]["code"] == "ROUTE_ERROR_DATASET_NOT_READY"


async def test_truck_dimensions_over_http(client: Client) -> None:
    base = "/v1/route?from=49.4095,8.6936&to=49.4036,8.6757&vehicle=truck"
    response = await client.get(base + "&height=3.9&weight=18")
    body = await response.json()
    assert response.status == 200 and body["provider"] == "valhalla", body
    response = await client.get(base + "&height=abc", headers=PROBLEM)
    problem = await response.json()
    assert response.status == 400 and problem["detail"].startswith("height: must be a number of m")


async def test_instructions_in_the_language_asked(client: Client) -> None:
    """`language` (issue 35): German sentences, said in the answer; Accept-Language without it;
    each language cached apart."""
    english = await (await client.get(f"/v1/route?{OK}")).json()
    german = await (await client.get(f"/v1/route?{OK}&language=de-AT")).json()
    finnish = await (await client.get(f"/v1/route?{OK}", headers={"Accept-Language": "cs, fi;q=0.8"})).json()
    assert (english["language"], german["language"], finnish["language"]) == ("en", "de", "fi")
    first = [body["routes"][0]["legs"][0]["steps"][0]["instruction"] for body in (english, german, finnish)]
    assert first[0].startswith("Head ") and first[1].startswith("Fahren Sie Richtung") and len(set(first)) == 3
    last = german["routes"][0]["legs"][0]["steps"][-1]["instruction"]
    assert last.startswith("Sie haben Ihr Ziel erreicht")


async def test_spoken_distances_in_the_units_asked(client: Client) -> None:
    body = await (await client.get(f"/v1/route?{OK}&units=imperial")).json()
    steps = body["routes"][0]["legs"][0]["steps"]
    assert body["units"] == "imperial"
    assert steps[0]["voiceInstruction"] == steps[0]["instruction"]  # the start: nothing before it
    assert steps[1]["voiceInstruction"].startswith("In ") and steps[1]["voiceInstruction"].split(",")[0][-2:] in ("ft", "mi")


async def test_an_unsupported_language_is_a_400_naming_the_supported(client: Client) -> None:
    legacy = await client.get(f"/v1/route?{OK}&language=xx&units=furlongs", headers=LEGACY)
    assert legacy.status == 400
    messages = [d["message"] for d in (await legacy.json())["details"]]
    assert [m.split(":")[0] for m in messages] == ["language", "units"]
    assert "de, en" in messages[0].split("supported: ")[1]
    problem = await client.get(f"/v1/route?{OK}&language=xx", headers=PROBLEM)
    assert problem.status == 400 and (await problem.json())["detail"].startswith("language: unsupported language")
