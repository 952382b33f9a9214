"""POST /v1/optimize/stops over HTTP, against the real route service on Monaco (in-process)."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.route_service.osm_samples import TinyMap

Client = TestClient[Any, Any]
LEGACY = {"Accept": "application/json"}
PROBLEM = {"Accept": "application/json, application/problem+json"}
URL = "/v1/optimize/stops"
# Places spread over Monaco (all within a few hundred metres of a road).
MONACO = [
    ("Casino", 43.7394, 7.4276),
    ("Port Hercule", 43.7347, 7.4217),
    ("Palais", 43.7312, 7.4198),
    ("Fontvieille", 43.7280, 7.4150),
    ("Larvotto", 43.7450, 7.4340),
    ("Jardin Exotique", 43.7312, 7.4110),
    ("Gare", 43.7390, 7.4215),
    ("Hopital", 43.7380, 7.4150),
    ("Stade Louis II", 43.7275, 7.4155),
    ("Saint-Roman", 43.7490, 7.4390),
    ("Moneghetti", 43.7340, 7.4140),
    ("Condamine", 43.7360, 7.4190),
    ("Monte-Carlo Beach", 43.7510, 7.4420),
    ("Musee Oceanographique", 43.7307, 7.4255),
    ("Grimaldi Forum", 43.7435, 7.4310),
]


def stops(count: int, **flags_by_index: dict[str, Any]) -> list[dict[str, Any]]:
    body = [{"name": n, "coordinate": {"lat": lat, "lon": lon}} for n, lat, lon in MONACO[:count]]
    for key, flags in flags_by_index.items():
        body[int(key.lstrip("s"))].update(flags)
    return body


async def optimize(client: Client, body: Any, query: str = "", headers: dict[str, str] | None = None) -> Any:
    response = await client.post(f"{URL}{query}", data=orjson.dumps(body), headers={"Content-Type": "application/json", **(headers or {})})
    return response.status, await response.json(content_type=None)


def assert_consistent(body: dict[str, Any], count: int) -> None:
    visits = body["stops"]
    assert sorted({v["index"] for v in visits}) == list(range(count))
    assert [v["position"] for v in visits] == list(range(len(visits)))
    assert len(body["legs"]) == len(visits) - 1
    assert body["distance"] == pytest.approx(sum(leg["distance"] for leg in body["legs"]), abs=1)
    assert body["duration"] == pytest.approx(sum(leg["duration"] for leg in body["legs"]), abs=1)
    for before, after, leg in zip(visits, visits[1:], body["legs"], strict=False):
        assert (leg["from"], leg["to"]) == (before["index"], after["index"])
        assert (after["distance"], after["duration"]) == (leg["distance"], leg["duration"])
        gap = datetime.fromisoformat(after["arrival"]) - datetime.fromisoformat(before["departure"])
        assert abs(gap.total_seconds() - leg["duration"]) <= 1
    geometry = body["geometry"]
    assert geometry["type"] == "LineString" and len(geometry["coordinates"]) >= 2
    assert all(len(c) == 2 and 7.3 < c[0] < 7.5 and 43.7 < c[1] < 43.8 for c in geometry["coordinates"])


async def test_open_tour_is_the_exact_optimum_on_the_road_matrix(client: Client, monaco_route: TestServer) -> None:
    status, body = await optimize(client, stops(7), "?startTime=2025-01-01T23:50:00%2B05:30")
    assert status == 200, body
    assert_consistent(body, 7)
    assert body["openTour"] and not body["roundTrip"] and body["stops"][0]["index"] == 0
    assert body["solver"]["method"] == "held-karp" and body["solver"]["optimal"]
    assert body["startTime"] == "2025-01-01T23:50:00+05:30"
    assert all(v["arrival"].endswith("+05:30") for v in body["stops"])
    assert (body["vehicle"], body["type"], body["provider"]) == ("car", "fastest", "osrm")
    # Brute force over the real matrix: no other order is faster.
    durations = await fetch_matrix(client, monaco_route, 7)
    best = min(path_cost(durations, [0, *p]) for p in itertools.permutations(range(1, 7)))
    assert body["solver"]["matrixDuration"] == pytest.approx(best, abs=0.1)
    assert path_cost(durations, [v["index"] for v in body["stops"]]) == pytest.approx(best, abs=0.1)


async def fetch_matrix(client: Client, route: TestServer, count: int) -> np.ndarray:
    points = [{"lat": lat, "lon": lon} for _, lat, lon in MONACO[:count]]
    response = await client.session.post(route.make_url("/internal/matrix"), json={"sources": points, "destinations": points})
    assert response.status == 200
    return np.array((await response.json())["durations"], dtype=float)


def path_cost(durations: np.ndarray, order: list[int]) -> float:
    return float(sum(durations[a, b] for a, b in itertools.pairwise(order)))


async def test_start_destination_and_round_trip(client: Client) -> None:
    status, fixed = await optimize(client, stops(6, s3={"start": True}, s1={"destination": True}))
    assert status == 200, fixed
    assert_consistent(fixed, 6)
    order = [v["index"] for v in fixed["stops"]]
    assert order[0] == 3 and order[-1] == 1 and not fixed["openTour"]

    status, trip = await optimize(client, stops(6, s2={"start": True, "destination": True, "serviceTime": 300}))
    assert status == 200, trip
    order = [v["index"] for v in trip["stops"]]
    assert trip["roundTrip"] and order[0] == order[-1] == 2 and len(order) == 7
    assert_consistent(trip, 6)
    assert trip["serviceTime"] == 300  # at the start, not again on the return
    first = trip["stops"][0]
    assert datetime.fromisoformat(first["departure"]) - datetime.fromisoformat(first["arrival"]) == timedelta(seconds=300)


async def test_more_stops_than_the_exact_limit_use_a_timed_search(client: Client) -> None:
    status, body = await optimize(client, stops(15, s4={"start": True}), "?timeLimit=0.3&startTime=2025-06-01T10:00:00Z")
    assert status == 200, body
    assert_consistent(body, 15)
    assert body["stops"][0]["index"] == 4
    assert body["solver"] == {"method": "pyvrp-ils", "optimal": False, "matrixDuration": pytest.approx(body["duration"], rel=0.02), "timeLimit": 0.3}


async def test_one_and_two_stops_are_trivial(client: Client) -> None:
    status, one = await optimize(client, stops(1), "?startTime=2025-06-01T10:00:00-08:00")
    assert status == 200, one
    assert [v["index"] for v in one["stops"]] == [0] and one["legs"] == [] and one["distance"] == 0
    assert one["startTime"] == one["endTime"] == "2025-06-01T10:00:00-08:00"
    assert one["geometry"]["type"] == "LineString"
    status, two = await optimize(client, stops(2, s1={"start": True}))
    assert status == 200, two
    assert [v["index"] for v in two["stops"]] == [1, 0] and len(two["legs"]) == 1 and two["distance"] > 0


@pytest.mark.parametrize(
    ("body", "query", "status", "code", "parameters"),
    [
        ({"a": 1}, "", 400, "ERROR_MALFORMED_BODY", [None]),
        ([], "", 400, "ERROR_INVALID_PARAMETER", ["stops"]),
        (
            [{"name": 1, "coordinate": {"lat": 95, "lon": False}, "start": "x"}, {"name": "B"}],
            "?startTime=2025-01-01T10:00:00&provider=nowhere",
            400,
            "ERROR_INVALID_PARAMETER",
            ["stops[0].name", "stops[0].coordinate.lat", "stops[0].coordinate.lon", "stops[0].start", "stops[1].coordinate", "startTime", "provider"],
        ),
        (stops(3, s0={"start": True}, s1={"start": True}), "", 400, "ERROR_INVALID_PARAMETER", ["stops[1].start"]),
        # Paris is 690 km from Monaco: inside the 1200 km rule, but no road of this map reaches it.
        ([*stops(2), {"name": "Paris", "coordinate": {"lat": 48.8566, "lon": 2.3522}}], "", 400, "ROUTE_ERROR_POINT_NOT_ROUTABLE", ["stops[2]"]),
        ([*stops(2), {"name": "Oslo", "coordinate": {"lat": 59.91, "lon": 10.75}}], "", 413, "OPTIMIZE_ERROR_DIAMETER_TOO_LARGE", ["stops"]),
        ([{"name": "x", "coordinate": {"lat": 43.73, "lon": 7.42}}] * 1001, "", 413, "OPTIMIZE_ERROR_TOO_MANY_STOPS", ["stops"]),
        (stops(3), "?provider=nowhere", 400, "ERROR_INVALID_PARAMETER", ["provider"]),
        (stops(3), "?vehicle=truck", 400, "ERROR_INVALID_PARAMETER", ["vehicle"]),  # no truck profile imported
    ],
)
async def test_errors_in_both_formats(
    client: Client, body: Any, query: str, status: int, code: str, parameters: list[str | None]
) -> None:
    got, legacy = await optimize(client, body, query, LEGACY)
    assert got == status, legacy
    assert [d["code"] for d in legacy["details"]][:1] == [code]
    assert legacy["status"] == status and len(legacy["errors"]) == len(parameters)
    for detail, parameter in zip(legacy["details"], parameters, strict=True):
        if parameter is not None:
            assert detail["message"].startswith(f"{parameter}: ")
    got, problem = await optimize(client, body, query, PROBLEM)
    assert got == status and problem["status"] == status
    assert problem["instance"] == URL + query and problem["title"] and problem["type"].startswith("/problems/")
    assert problem["detail"].count("; ") == len(parameters) - 1


async def test_a_stop_far_from_roads_is_named(client: Client) -> None:
    body = [*stops(3), {"name": "At sea", "coordinate": {"lat": 43.70, "lon": 7.50}}]
    status, problem = await optimize(client, body, "", PROBLEM)
    assert status == 400 and problem["type"] == "/problems/route/point-not-routable"
    assert problem["detail"].startswith("stops[3]: stop 'At sea': no road usable by car")


def island_stops(tiny: TinyMap, **roles: dict[str, bool]) -> list[dict[str, Any]]:
    """Two stops on the west street, one on the east street that no road joins with it."""
    points = {"West 1": tiny.west[0], "West 2": tiny.west[1], "East": tiny.east[0]}
    return [{"name": name, "coordinate": {"lat": p.lat, "lon": p.lon}, **roles.get(name.replace(" ", ""), {})}
            for name, p in points.items()]  # fmt: skip


async def test_a_stop_no_road_joins_is_left_out_and_the_tour_goes_on(
    islands_client: Client, tiny_islands: tuple[TinyMap, Any]
) -> None:
    status, body = await optimize(islands_client, island_stops(tiny_islands[0]))
    assert status == 200, body
    assert [v["index"] for v in body["stops"]] == [0, 1] and len(body["legs"]) == 1
    assert [(u["index"], u["name"], u["reason"]) for u in body["unassigned"]] == [(2, "East", "unreachable")]
    assert "'East'" in body["unassigned"][0]["message"] and "'West 1'" in body["unassigned"][0]["message"]
    status, whole = await optimize(islands_client, island_stops(tiny_islands[0])[:2])
    assert status == 200 and whole["unassigned"] == []


async def test_strict_fails_naming_every_stop_no_road_joins(islands_client: Client, tiny_islands: tuple[TinyMap, Any]) -> None:
    status, legacy = await optimize(islands_client, island_stops(tiny_islands[0]), "?strict=true", LEGACY)
    assert status == 400, legacy
    assert legacy["details"] == [
        {"code": "ROUTE_ERROR_NO_ROUTE", "message": "stops[2]: stop 'East' cannot be reached by road from the other stops, or they not from it"}
    ]


async def test_a_cut_off_start_is_blamed_not_the_others(islands_client: Client, tiny_islands: tuple[TinyMap, Any]) -> None:
    body = island_stops(tiny_islands[0], East={"start": True})
    status, problem = await optimize(islands_client, body, "", PROBLEM)
    assert status == 400, problem
    assert problem["detail"].startswith("stops[2]: the start 'East' is cut off: no road joins it both ways with 2 of")


async def test_a_destination_the_start_cannot_reach_is_named(
    islands_client: Client, tiny_islands: tuple[TinyMap, Any]
) -> None:
    body = island_stops(tiny_islands[0], West1={"start": True}, East={"destination": True})
    status, problem = await optimize(islands_client, body, "", PROBLEM)
    assert status == 400, problem
    assert problem["detail"].startswith("stops[2]: the destination 'East' cannot be reached by road from the start 'West 1'")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_wrong_content_type_is_415(client: Client, content_type: str | None) -> None:
    headers = {**LEGACY, **({"Content-Type": content_type} if content_type else {})}
    response = await client.post(URL, data=orjson.dumps(stops(2)), headers=headers)
    assert response.status == 415
    assert (await response.json())["details"][0]["code"] == "ERROR_UNSUPPORTED_MEDIA_TYPE"


async def test_invalid_json_is_400(client: Client) -> None:
    response = await client.post(URL, data=b"[{'name': 1}", headers={"Content-Type": "application/json", **PROBLEM})
    assert response.status == 400
    assert (await response.json(content_type=None))["type"] == "/problems/general/malformed-body"
