"""POST /v1/optimize/routes over HTTP against the real route service on Monaco (in-process),
checked by the independent feasibility checker (optimize_service/fleet/check.py).

The checker reads only the request and the answer, and its own road matrix asked of the route
service: none of the solver's code. On seeded instances (time windows, capacities in
two dimensions, skills, shipments, breaks, open and closed routes) it checks that no time
window, shift, capacity, skill, break or pickup-before-delivery rule is broken, that every
task is served once or listed as unassigned, and that times, loads and distances add up.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import aiohttp
import numpy as np
import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from optimize_service.fleet.check import Roads, check_feasible, request_points
from route_service.importing.importer import ImportResult
from tests.optimize_service.conftest import ClientFactory, ServerFactory, import_quietly, optimize_client, route_server
from tests.optimize_service.test_app import LEGACY, MONACO, PROBLEM
from tests.route_service.osm_samples import TinyMap

Client = TestClient[Any, Any]
URL = "/v1/optimize/routes"
START = datetime.fromisoformat("2026-11-23T08:00:00+01:00")


def at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat()


def point(index: int, jitter: float = 0.0, rng: random.Random | None = None) -> dict[str, float]:
    _, lat, lon = MONACO[index % len(MONACO)]
    if rng is not None:
        lat, lon = lat + rng.uniform(-jitter, jitter), lon + rng.uniform(-jitter, jitter)
    return {"lat": round(lat, 6), "lon": round(lon, 6)}


async def post(client: Client, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    response = await client.post(URL, data=orjson.dumps(body), headers={"Content-Type": "application/json", **(headers or {})})
    return response.status, await response.json(content_type=None)


# ---------------------------------------------------------------- seeded instances


def window(rng: random.Random, span_s: int) -> dict[str, str]:
    opens = rng.randrange(0, 4 * 3600)
    return {"start": at(opens), "end": at(opens + span_s)}


def seeded_instance(seed: int, jobs: int, shipments: int, vehicles: int) -> dict[str, Any]:
    rng = random.Random(seed)
    scale = max(1, jobs // (5 * vehicles))  # capacities grow with the jobs, so both rules bind
    fleet = []
    for v in range(vehicles):
        item: dict[str, Any] = {
            "id": f"v{v}",
            "start": point(v, 0.002, rng),
            "capacity": [rng.randint(8, 15) * scale, rng.randint(4, 8) * scale],
            "shift": {"start": at(rng.choice([0, 600])), "end": at(rng.choice([3, 4, 6]) * 3600)},
            "skills": ["cold"] if v % 2 == 0 else ["lift"],
        }
        if v % 3 != 2:
            item["end"] = item["start"]
        if v == 0:
            item["breaks"] = [{"id": "lunch", "timeWindows": [{"start": at(3600), "end": at(7200)}], "duration": 900}]
        fleet.append(item)
    body: dict[str, Any] = {"startTime": START.isoformat(), "vehicles": fleet, "timeLimit": 1}
    body["jobs"] = [
        {
            "id": f"j{j}",
            "location": point(rng.randrange(len(MONACO)), 0.002, rng),
            "serviceTime": rng.choice([0, 60, 180, 300]),
            "timeWindows": [window(rng, rng.choice([900, 1800, 3600]))] if rng.random() < 0.6 else [window(rng, 600), window(rng, 1800)] if rng.random() < 0.3 else None,
            "demand": [rng.randint(0, 3), rng.randint(0, 2)],
            "skills": [rng.choice(["cold", "lift"])] if rng.random() < 0.2 else [],
            "priority": rng.choice([0, 0, 10, 100]),
        }
        for j in range(jobs)
    ]
    for item in body["jobs"]:
        if item["timeWindows"] is None:
            del item["timeWindows"]
    body["shipments"] = [
        {
            "id": f"s{s}",
            "pickup": {"location": point(rng.randrange(len(MONACO)), 0.002, rng), "serviceTime": 120},
            "delivery": {
                "location": point(rng.randrange(len(MONACO)), 0.002, rng),
                "serviceTime": 60,
                "timeWindows": [window(rng, 5400)],
            },
            "amount": [rng.randint(1, 4), rng.randint(0, 2)],
        }
        for s in range(shipments)
    ]
    return body


# ---------------------------------------------------------------- the checker's road matrix


def seconds(text: str) -> float:
    return (datetime.fromisoformat(text) - START).total_seconds()


async def road_matrix(route_server: TestServer, body: dict[str, Any], kind: str = "car", truck: dict[str, float] | None = None) -> Roads:
    unique = request_points(body)
    query = {"sources": unique, "destinations": unique, "annotations": ["duration", "distance"], "vehicle": kind}
    if truck:
        query["truck"] = truck
    async with aiohttp.ClientSession() as http, http.post(str(route_server.make_url("/internal/matrix")), json=query) as resp:
        assert resp.status == 200, await resp.text()
        answer = await resp.json()
    durations = np.array(answer["durations"], dtype=np.float64)
    distances = np.array(answer["distances"], dtype=np.float64)
    return Roads(unique, durations, distances)


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize(("seed", "jobs", "shipments", "vehicles"), [(1, 25, 0, 2), (2, 40, 6, 3), (3, 60, 10, 4)])
async def test_seeded_instances_break_no_rule(
    client: Client, monaco_route: TestServer, seed: int, jobs: int, shipments: int, vehicles: int
) -> None:
    body = seeded_instance(seed, jobs, shipments, vehicles)
    status, answer = await post(client, body)
    assert status == 200, answer
    check_feasible(body, answer, await road_matrix(monaco_route, body))
    assert answer["totals"]["assigned"] >= (jobs + shipments) // 2, "most tasks fit these shifts"
    assert answer["solver"]["method"] == "vroom" and answer["attribution"]


async def test_the_checker_catches_broken_answers(client: Client, monaco_route: TestServer) -> None:
    """The checker is worth something only if it fails on a broken answer."""
    body = seeded_instance(4, 12, 2, 2)
    status, answer = await post(client, body)
    assert status == 200, answer
    roads = await road_matrix(monaco_route, body)
    check_feasible(body, answer, roads)
    route = next(r for r in answer["routes"] if any(s["type"] == "job" for s in r["steps"]))
    job_step = next(s for s in route["steps"] if s["type"] == "job")
    breakers = [
        lambda a: a["unassigned"].append({"id": job_step["id"], "type": "job", "reason": "time-window", "message": "x"}),
        lambda a: job_step.update(load=[x + 1 for x in job_step["load"]]),
        lambda a: job_step.update(arrival=at(seconds(route["steps"][0]["departure"]) - 60)),
        lambda a: route["steps"].reverse(),
        lambda a: a["routes"].remove(route),
    ]
    for index, breaker in enumerate(breakers):
        broken = orjson.loads(orjson.dumps(answer))
        route = next(r for r in broken["routes"] if r["vehicle"] == route["vehicle"])
        job_step = next(s for s in route["steps"] if s["type"] == "job")
        breaker(broken)
        with pytest.raises(AssertionError):
            check_feasible(body, broken, roads)
        assert index >= 0


async def test_answer_shape_and_geometry(client: Client) -> None:
    body = {
        "startTime": START.isoformat(),
        "vehicles": [{"id": "van", "start": point(0), "end": point(0), "capacity": [5]}],
        "jobs": [{"id": f"j{i}", "location": point(i), "demand": [1], "serviceTime": 60} for i in (1, 2, 3)],
        "shipments": [{"id": "parcel", "pickup": {"location": point(4)}, "delivery": {"location": point(5)}, "amount": [2]}],
    }
    status, answer = await post(client, body)
    assert status == 200, answer
    (route,) = answer["routes"]
    assert route["vehicle"] == "van" and route["kind"] == "car" and answer["unassigned"] == []
    assert [s["type"] for s in route["steps"]].count("job") == 3
    assert route["steps"][0]["load"] == [3] and route["steps"][-1]["load"] == [0]
    line = route["geometry"]
    assert line["type"] == "LineString" and len(line["coordinates"]) > 7
    first, last = line["coordinates"][0], line["coordinates"][-1]
    assert abs(first[0] - point(0)["lon"]) < 0.003 and abs(first[1] - point(0)["lat"]) < 0.003
    assert abs(last[0] - point(0)["lon"]) < 0.003 and abs(last[1] - point(0)["lat"]) < 0.003
    assert answer["startTime"] == "2026-11-23T08:00:00+01:00" and answer["dataset"]


async def test_impossible_windows_are_unassigned_with_a_reason(client: Client, monaco_route: TestServer) -> None:
    body = {
        "startTime": START.isoformat(),
        "vehicles": [{"id": "van", "start": point(0), "capacity": [2], "shift": {"end": at(3 * 3600)}}],
        "jobs": [
            # Open only in the first second: nobody drives across Monaco that fast.
            {"id": "too-soon", "location": point(12), "timeWindows": [{"end": at(1)}]},
            # Opens after the shift ends.
            {"id": "after-shift", "location": point(3), "timeWindows": [{"start": at(4 * 3600), "end": at(5 * 3600)}]},
            {"id": "a", "location": point(1), "demand": [2]},
            {"id": "b", "location": point(2), "demand": [2]},
        ],
    }
    status, answer = await post(client, body)
    assert status == 200, answer
    check_feasible(body, answer, await road_matrix(monaco_route, body))
    reasons = {item["id"]: item["reason"] for item in answer["unassigned"]}
    assert reasons["too-soon"] == "time-window" and reasons["after-shift"] == "time-window"
    # Two loads of 2 in a van of 2: one of them waits for another day.
    assert len({"a", "b"} & set(reasons)) == 1 and "capacity-or-time" in reasons.values()


async def test_priority_decides_who_is_left_out(client: Client) -> None:
    body = {
        "vehicles": [{"id": "van", "start": point(0), "capacity": [1]}],
        "jobs": [
            {"id": "low", "location": point(1), "demand": [1]},
            {"id": "high", "location": point(13), "demand": [1], "priority": 100},
        ],
    }
    status, answer = await post(client, body)
    assert status == 200, answer
    assert [item["id"] for item in answer["unassigned"]] == ["low"]


async def test_cost_per_km_and_fixed_cost_are_used(client: Client) -> None:
    """Two vans, one with a high fixed cost: the cheap one takes everything."""
    body = {
        "vehicles": [
            {"id": "dear", "start": point(0), "costs": {"fixed": 100000}},
            {"id": "cheap", "start": point(0), "costs": {"perHour": 3600, "perKm": 10}},
        ],
        "jobs": [{"id": f"j{i}", "location": point(i)} for i in (1, 2, 3)],
    }
    status, answer = await post(client, body)
    assert status == 200, answer
    assert [route["vehicle"] for route in answer["routes"]] == ["cheap"]
    assert answer["routes"][0]["cost"] > answer["routes"][0]["duration"]  # the kilometres count too


@pytest.mark.parametrize("headers", [LEGACY, PROBLEM])
async def test_errors_in_both_formats_name_every_field(client: Client, headers: dict[str, str]) -> None:
    body = {
        "vehicles": [{"id": "v", "start": point(0), "capacity": [3], "skills": ["cold"]}],
        "jobs": [
            {"id": "a", "location": point(1), "timeWindows": [{"start": at(3600), "end": at(60)}]},
            {"id": "b", "location": point(2), "demand": [4]},
            {"id": "c", "location": point(3), "skills": ["frozen"]},
            {"id": "a", "location": point(4)},
        ],
    }
    status, answer = await post(client, body, headers)
    assert status == 400
    names = ["jobs[0].timeWindows[0]", "jobs[3].id", "jobs[1].demand", "jobs[2].skills"]
    if headers is LEGACY:
        assert answer["status"] == 400 and [d["code"] for d in answer["details"]] == ["ERROR_INVALID_PARAMETER"] * 4
        assert [d["message"].split(": ")[0] for d in answer["details"]] == names
    else:
        assert answer["type"] == "/problems/general/invalid-parameter/" and answer["instance"] == URL
        assert [part.split(": ")[0] for part in answer["detail"].split("; ")] == names


async def test_too_many_stops_is_413(client: Client) -> None:
    body = {"vehicles": [{"id": "v", "start": point(0)}], "jobs": [{"id": str(i), "location": point(i)} for i in range(501)]}
    status, problem = await post(client, body, PROBLEM)
    assert status == 413 and problem["type"] == "/problems/optimize/too-many-stops"
    status, legacy = await post(client, {"vehicles": [{}] * 51, "jobs": []}, LEGACY)
    assert status == 413 and legacy["details"][0]["code"] == "ERROR_PAYLOAD_TOO_LARGE"


async def test_a_point_far_from_roads_and_an_unmapped_kind_are_named(client: Client) -> None:
    at_sea = {"vehicles": [{"id": "v", "start": point(0)}], "jobs": [{"id": "boat", "location": {"lat": 43.70, "lon": 7.50}}]}
    status, problem = await post(client, at_sea, PROBLEM)
    assert status == 400 and problem["type"] == "/problems/route/point-not-routable"
    assert problem["detail"].startswith("jobs[0].location: ")
    truck = {"vehicles": [{"id": "v", "start": point(0)}, {"id": "t", "kind": "truck", "start": point(0)}], "jobs": [{"id": "j", "location": point(1)}]}
    status, legacy = await post(client, truck, LEGACY)  # only car profiles are imported here
    assert status == 400 and legacy["details"][0]["message"].startswith("vehicles[1].kind: ")


async def test_tasks_no_road_reaches_are_unassigned(islands_client: Client, tiny_islands: tuple[TinyMap, Any]) -> None:
    tiny = tiny_islands[0]
    west, east = [{"lat": p.lat, "lon": p.lon} for p in tiny.west], [{"lat": p.lat, "lon": p.lon} for p in tiny.east]
    body = {
        "vehicles": [{"id": "v", "start": west[0], "end": west[0]}],
        "jobs": [{"id": "near", "location": west[1]}, {"id": "island", "location": east[0]}],
    }
    status, answer = await post(islands_client, body)
    assert status == 200, answer
    assert [item["id"] for item in answer["unassigned"]] == ["island"]
    assert answer["unassigned"][0]["reason"] == "no-route"
    assert [s.get("id") for s in answer["routes"][0]["steps"]] == [None, "near", None]


@pytest.fixture(scope="module")
def monaco_car_and_bicycle(tmp_path_factory: pytest.TempPathFactory, shared_osm: Any) -> ImportResult:
    out = tmp_path_factory.mktemp("monaco-two-kinds")
    return import_quietly(shared_osm / "monaco.osm.pbf", out, ["car-fastest", "bicycle-fastest"])


async def test_each_vehicle_kind_drives_on_its_own_road_times(
    aiohttp_client: ClientFactory, aiohttp_server: ServerFactory, monaco_car_and_bicycle: ImportResult, redis_server: str
) -> None:
    server = await route_server(aiohttp_server, monaco_car_and_bicycle, redis_server)
    client = await optimize_client(aiohttp_client, str(server.make_url("")))
    body = seeded_instance(21, 16, 3, 2)
    body["vehicles"][1]["kind"] = "bicycle"
    status, answer = await post(client, body)
    assert status == 200, answer
    roads = {kind: await road_matrix(server, body, kind) for kind in ("car", "bicycle")}
    check_feasible(body, answer, roads)
    assert {route["kind"] for route in answer["routes"]} == {"car", "bicycle"}
    # The two kinds' times differ: a route checked on the other kind's matrix would not hold.
    assert not np.allclose(roads["car"].durations, roads["bicycle"].durations)


async def test_vehicle_limits_hold_and_say_why_a_job_is_left_out(client: Client, monaco_route: TestServer) -> None:
    """maxStops, maxWorkingTime and maxDistance of a route (issue 36, item 3) hold in the plan
    (the checker reads them from the request), and bind: what no route can take is unassigned,
    a job beyond every vehicle's maxDistance with the reason `vehicle-limits`."""
    jobs: list[dict[str, Any]] = [{"id": f"j{i}", "location": point(i), "serviceTime": 300} for i in range(1, 9)]
    first = {"startTime": START.isoformat(), "vehicles": [{"id": "van", "start": point(0)}], "jobs": jobs}
    roads = await road_matrix(monaco_route, first)
    cases: dict[str, tuple[dict[str, int], int | None]] = {
        "maxStops": ({"maxStops": 3}, 3),
        "maxWorkingTime": ({"maxWorkingTime": 1500}, None),
    }
    for name, (limit, most) in cases.items():
        van = {"id": "van", "start": point(0), "end": point(0), **limit}
        body = {"startTime": START.isoformat(), "vehicles": [van], "jobs": jobs}
        status, answer = await post(client, body)
        assert status == 200, answer
        check_feasible(body, answer, roads)
        served = sum(s["type"] == "job" for r in answer["routes"] for s in r["steps"])
        assert 0 < served < len(jobs) and (most is None or served == most), (name, served)
        assert {u["reason"] for u in answer["unassigned"]} == {"capacity-or-time"}, name
    home = point(0)
    far = max(jobs, key=lambda job: roads.leg(home, job["location"])[1])
    reach = roads.leg(home, far["location"])[1] + roads.leg(far["location"], home)[1]
    body = {"vehicles": [{"id": "van", "start": home, "end": home, "maxDistance": int(reach) - 50}], "jobs": jobs}
    status, answer = await post(client, body)
    assert status == 200, answer
    check_feasible(body, answer, roads)
    reasons = {u["id"]: u["reason"] for u in answer["unassigned"]}
    assert reasons[far["id"]] == "vehicle-limits" and answer["routes"][0]["distance"] <= reach - 50


async def test_the_checker_catches_a_broken_limit(client: Client, monaco_route: TestServer) -> None:
    body: dict[str, Any] = {"startTime": START.isoformat(), "vehicles": [{"id": "van", "start": point(0), "end": point(0)}],
                            "jobs": [{"id": f"j{i}", "location": point(i), "serviceTime": 60} for i in range(1, 5)]}  # fmt: skip
    status, answer = await post(client, body)
    assert status == 200, answer
    roads = await road_matrix(monaco_route, body)
    check_feasible(body, answer, roads)
    route = answer["routes"][0]
    working = (datetime.fromisoformat(route["steps"][-1]["arrival"]) - datetime.fromisoformat(route["steps"][0]["departure"]))
    van: dict[str, Any] = body["vehicles"][0]
    for limit in ({"maxStops": 3}, {"maxDistance": route["distance"] - 10}, {"maxWorkingTime": working.seconds - 10}):
        broken = {**body, "vehicles": [{**van, **limit}]}
        with pytest.raises(AssertionError, match="max"):
            check_feasible(broken, answer, roads)


def working(route: dict[str, Any]) -> float:
    return (datetime.fromisoformat(route["steps"][-1]["arrival"]) - datetime.fromisoformat(route["steps"][0]["departure"])).total_seconds()


async def test_a_balanced_plan_keeps_the_longest_route_shorter(client: Client, monaco_route: TestServer) -> None:
    """`objective: {balance: duration}` (issue 36, item 4): three vans at one depot share twelve
    jobs; the cheapest plan loads one van with most of them, the balanced one's longest route is
    shorter, it leaves no more out and breaks no rule."""
    vans = [{"id": f"van{i}", "start": point(0), "end": point(0)} for i in range(3)]
    jobs = [{"id": f"j{i}", "location": point(i + 1), "serviceTime": 600} for i in range(12)]
    body: dict[str, Any] = {"startTime": START.isoformat(), "vehicles": vans, "jobs": jobs, "timeLimit": 1}
    roads = await road_matrix(monaco_route, body)
    answers = {}
    for name, extra in (("cheapest", {}), ("balanced", {"objective": {"balance": "duration"}})):
        status, answer = await post(client, {**body, **extra})
        assert status == 200, answer
        check_feasible({**body, **extra}, answer, roads)
        answers[name] = answer
    cheapest, balanced = answers["cheapest"], answers["balanced"]
    longest = {name: max(working(r) for r in a["routes"]) for name, a in answers.items()}
    assert longest["balanced"] < longest["cheapest"], longest
    assert len(balanced["unassigned"]) <= len(cheapest["unassigned"])
    balance = balanced["solver"]["balance"]
    assert balance["objective"] == {"balance": "duration"} and balance["rounds"] >= 1
    assert balance["longestRoute"] <= balance["longestRouteCheapest"] and "balance" not in cheapest["solver"]
