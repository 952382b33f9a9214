"""POST /v1/match: traces made from real drives on every shared extract (and all five as one
map) with 10-30 m noise are matched to the right road for ≥ 95 % of their points; JSON and GPX
traces, every fault a 4xx naming its place; the detour's own matching unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from bench.maps import BenchMap
from bench.match import right_road_share
from common.errors import MalformedBody, ParameterErrors
from route_service.app import create_app
from route_service.dataset import Dataset
from route_service.importing.importer import ImportResult
from route_service.providers.registry import ProviderRegistry
from route_service.traces import MAX_TRACE_POINTS, TraceTooLong, trace_from_gpx, trace_from_json
from tests.conftest import EVERY_MAP
from tests.route_service.test_route_app import LEGACY, PROBLEM, Client, ClientFactory, make_config


@pytest.mark.parametrize("name", EVERY_MAP)
def test_noisy_traces_of_real_drives_match_the_right_road(name: str, city_maps: Callable[[str], ImportResult]) -> None:
    result = city_maps(name)
    dataset = Dataset(result.hash, result.path, result.record)
    right, total = right_road_share(BenchMap(name, dataset, ProviderRegistry.load(dataset)), 4, 7)
    assert total >= 60, f"{name}: too few points to judge"
    assert right / total >= 0.95, f"{name}: {right}/{total} points on the right road"


# ---------------------------------------------------------------- reading traces


def read_json_trace(body: Any) -> tuple[Any, list[tuple[str | None, str]]]:
    errors = ParameterErrors()
    trace = trace_from_json(body, errors)
    return trace, [(v.parameter, v.message) for v in errors.violations]


POINTS = [{"lat": 60.1685, "lon": 24.9410, "time": 1700000000}, {"lat": 60.1700, "lon": 24.9500, "time": 1700000060}]


def test_a_json_trace_with_times_as_numbers_or_iso_text() -> None:
    trace, errors = read_json_trace({"points": [POINTS[0], {**POINTS[1], "time": "2023-11-14T22:14:20Z"}]})
    assert errors == [] and trace.timestamps == [1700000000, 1700000060]
    trace, errors = read_json_trace({"points": [{k: v for k, v in p.items() if k != "time"} for p in POINTS]})
    assert errors == [] and trace.timestamps is None and trace.gps_accuracy_m == 20


@pytest.mark.parametrize(
    ("body", "parameter", "message"),
    [
        ({"points": POINTS[:1]}, "points", "must be a list of 2 to"),
        ({"points": "x"}, "points", "must be a list"),
        ({"points": [POINTS[0], {**POINTS[1], "lat": 91}]}, "points[1].lat", "between -90 and 90"),
        ({"points": [POINTS[0], {**POINTS[1], "lat": "60"}]}, "points[1].lat", "must be a number"),
        ({"points": [POINTS[0], {"lon": 0}]}, "points[1]", "must be an object {lat, lon, time?}"),
        ({"points": [POINTS[1], POINTS[0]]}, "points[1].time", "must not be earlier"),
        ({"points": [POINTS[0], {"lat": 60.17, "lon": 24.95}]}, "points", "every point or for none"),
        ({"points": [POINTS[0], {**POINTS[1], "time": "yesterday"}]}, "points[1].time", "ISO 8601"),
        ({"points": [POINTS[0], {**POINTS[1], "time": True}]}, "points[1].time", "seconds since 1970"),
        ({"points": POINTS, "gpsAccuracy": 0}, "gpsAccuracy", "from 1 to 100"),
        ({"points": POINTS, "gpsAccuracy": "nan"}, "gpsAccuracy", "from 1 to 100"),
        ({"points": POINTS, "point": []}, "point", "is not a field of this body"),
    ],
)
def test_each_fault_of_a_json_trace_is_named(body: Any, parameter: str, message: str) -> None:
    _, errors = read_json_trace(body)
    assert len(errors) == 1 and errors[0][0] == parameter and message in errors[0][1], errors


def test_too_long_and_not_an_object() -> None:
    with pytest.raises(TraceTooLong) as caught:
        read_json_trace({"points": [POINTS[0]] * (MAX_TRACE_POINTS + 1)})
    assert caught.value.status == 413 and caught.value.code == "ROUTE_ERROR_TRACE_TOO_LONG"
    with pytest.raises(MalformedBody):
        read_json_trace([POINTS])


GPX = b"""<?xml version="1.0" encoding="UTF-8"?>
<gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
<trkpt lat="60.1685" lon="24.9410"><time>2023-11-14T22:13:20Z</time></trkpt>
<trkpt lat="60.1692" lon="24.9440"><time>2023-11-14T22:13:50Z</time></trkpt>
<trkpt lat="60.1700" lon="24.9500"><time>2023-11-14T22:14:20Z</time></trkpt>
</trkseg></trk></gpx>"""


def test_a_gpx_trace() -> None:
    errors = ParameterErrors()
    trace = trace_from_gpx(GPX, {"vehicle": "car", "gpsAccuracy": "15"}, errors)
    assert not errors and len(trace.points) == 3 and trace.timestamps == [1700000000, 1700000030, 1700000060]
    assert trace.gps_accuracy_m == 15 and trace.points[0].lat == 60.1685


@pytest.mark.parametrize(
    "data",
    [
        b"<gpx><trk><trkpt lat='1' lon='2'>",  # not well-formed
        b'<?xml version="1.0"?><!DOCTYPE gpx [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><gpx>&b;</gpx>',
        b'<?xml version="1.0"?><!DOCTYPE gpx SYSTEM "file:///etc/passwd"><gpx/>',
    ],
)
def test_hostile_or_broken_gpx_is_a_400(data: bytes) -> None:
    with pytest.raises(MalformedBody):
        trace_from_gpx(data, {}, ParameterErrors())


def test_gpx_point_faults_are_named() -> None:
    data = GPX.replace(b'lat="60.1692"', b'lat="x"')
    errors = ParameterErrors()
    trace_from_gpx(data, {}, errors)
    assert [v.parameter for v in errors.violations] == ["points[1].lat"]


# ---------------------------------------------------------------- over HTTP (Heidelberg)


@pytest.fixture
async def client(aiohttp_client: ClientFactory, heidelberg_maps: ImportResult, redis_server: str) -> Client:
    return await aiohttp_client(create_app(make_config(heidelberg_maps.path.parent, redis_server)))


HEIDELBERG = [
    {"lat": 49.40945, "lon": 8.69330, "time": 1700000000},
    {"lat": 49.40990, "lon": 8.69100, "time": 1700000020},
    {"lat": 49.41040, "lon": 8.68870, "time": 1700000040},
]


async def test_match_over_http_in_json_and_gpx(client: Client) -> None:
    response = await client.post(
        "/v1/match", data=orjson.dumps({"points": HEIDELBERG}), headers={"Content-Type": "application/json"}
    )
    body = await response.json()
    assert response.status == 200, body
    assert body["geometry"]["type"] == "MultiLineString" and body["provider"] == "osrm"
    assert len(body["points"]) == 3 and body["matchedPoints"] >= 2 and 0 <= body["confidence"] <= 1
    assert all(p["road"] is not None for p in body["points"] if p["matched"])
    gpx = "".join(f'<trkpt lat="{p["lat"]}" lon="{p["lon"]}"/>' for p in HEIDELBERG)
    document = f'<gpx xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>{gpx}</trkseg></trk></gpx>'
    response = await client.post(
        "/v1/match?vehicle=car", data=document, headers={"Content-Type": "application/gpx+xml"}
    )
    assert response.status == 200 and (await response.json())["matchedPoints"] >= 2


@pytest.mark.parametrize("accept", [PROBLEM, LEGACY])
async def test_match_faults_over_http_in_both_formats(client: Client, accept: dict[str, str]) -> None:
    response = await client.post(
        "/v1/match", data=b'{"points": [1]}', headers={"Content-Type": "application/json", **accept}
    )
    assert response.status == 400
    response = await client.post("/v1/match", data=b"x", headers={"Content-Type": "text/csv", **accept})
    assert response.status == 415
    body = orjson.dumps({"points": HEIDELBERG, "provider": "graph"})  # our road graph, deleted (issue 56)
    response = await client.post("/v1/match", data=body, headers={"Content-Type": "application/json", **accept})
    text = await response.text()
    assert response.status == 400 and "graph" in text and "osrm" in text and "valhalla" in text, text


async def test_match_through_valhalla_over_http(client: Client) -> None:
    """The same trace through the valhalla provider (issue 30), in the service's child process."""
    body = orjson.dumps({"points": HEIDELBERG, "provider": "valhalla"})
    response = await client.post("/v1/match", data=body, headers={"Content-Type": "application/json"})
    answer = await response.json()
    assert response.status == 200, answer
    assert answer["provider"] == "valhalla" and answer["geometry"]["type"] == "MultiLineString"
    assert answer["matchedPoints"] == 3 and len(answer["geometry"]["coordinates"]) == 1
    assert len(answer["geometry"]["coordinates"][0]) >= 2


async def test_an_unmatched_point_says_why(client: Client) -> None:
    """Fixes 270 km south of the map are told their distance to the nearest road and that they
    lie outside the map; the others, on the roads but unmatched (the jump leaves OSRM no
    matching), are told so; matched points carry no reason (issue 32: diagnostics on every
    surface)."""
    off_road = [{"lat": 47.0, "lon": 8.69330, "time": 1700000060 + i} for i in range(2)]
    points = [*HEIDELBERG, *off_road]
    response = await client.post(
        "/v1/match", data=orjson.dumps({"points": points}), headers={"Content-Type": "application/json"}
    )
    body = await response.json()
    assert response.status == 200, body
    last = body["points"][-1]
    assert last["matched"] is False and last["reason"].startswith("no road usable by car within 60 m (the nearest is")
    assert "The point lies outside the loaded map" in last["reason"]
    assert body["points"][-2]["reason"] == last["reason"]
    for point in body["points"][:3]:
        assert point["matched"] or "usable by car lies" in point["reason"]
    assert all("reason" not in p for p in body["points"] if p["matched"])
