"""Re-planning a day under way (issue 36, item 6): POST /v1/optimize/routes with each vehicle's
`current` place, time, load and committed jobs, over HTTP against the real route service on
Monaco, every answer checked by the independent feasibility checker."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aiohttp.test_utils import TestServer

from optimize_service.fleet.check import check_feasible
from tests.optimize_service.test_app import LEGACY, PROBLEM
from tests.optimize_service.test_fleet_app import START, Client, at, point, post, road_matrix
from tests.optimize_service.test_fleet_trips import named


def morning() -> dict[str, Any]:
    """Two vans, ten 40-minute jobs of one parcel each, a day from 08:00 to 18:00."""
    shift = {"start": at(0), "end": at(10 * 3600)}
    vans = [{"id": f"van-{v}", "start": point(v * 7), "end": point(v * 7), "capacity": [8], "shift": shift} for v in range(2)]
    jobs = [{"id": f"j{i}", "location": point(i + 1), "serviceTime": 2400, "demand": [1]} for i in range(10)]
    return {"startTime": START.isoformat(), "vehicles": vans, "jobs": jobs, "timeLimit": 1}


async def planned(client: Client, server: TestServer, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = await post(client, body)
    assert status == 200, answer
    check_feasible(body, answer, await road_matrix(server, body))
    return answer


def noon(body: dict[str, Any], plan: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]], str]:
    """The day at the moment half its jobs are done: each van where it last served, its load,
    its next stop committed; the jobs done gone, three urgent ones added."""
    departures = sorted(datetime.fromisoformat(s["departure"]) for r in plan["routes"] for s in r["steps"] if s["type"] == "job")
    now = departures[len(departures) // 2 - 1]
    done, committed, vans = set(), {}, []
    for vehicle in body["vehicles"]:
        route = next(r for r in plan["routes"] if r["vehicle"] == vehicle["id"])
        served = [s for s in route["steps"] if s["type"] == "job"]
        finished = [s for s in served if datetime.fromisoformat(s["departure"]) <= now]
        done |= {s["id"] for s in finished}
        last = finished[-1] if finished else route["steps"][0]
        committed[vehicle["id"]] = [s["id"] for s in served[len(finished) : len(finished) + 1]]
        current = {"location": last["location"], "time": now.isoformat(), "load": last["load"], "committed": committed[vehicle["id"]]}
        vans.append(vehicle | {"current": current})
    urgent = [{"id": f"urgent-{k}", "location": point(11 + k), "serviceTime": 600,
               "timeWindows": [{"start": now.isoformat(), "end": at(9 * 3600)}]} for k in range(3)]  # fmt: skip
    jobs = [job for job in body["jobs"] if job["id"] not in done] + urgent
    return body | {"vehicles": vans, "jobs": jobs}, committed, now.isoformat()


async def test_a_noon_re_plan_keeps_the_committed_steps_and_places_the_urgent_jobs(
    client: Client, monaco_route: TestServer
) -> None:
    """Plan a day; at the moment half its jobs are done re-plan with each van's place, load and
    next stop committed, and three urgent jobs: every van serves its committed job first, from
    where it is and not before now, the urgent jobs are all placed, the rest of the morning's
    jobs too, and the checker finds no rule broken."""
    body = morning()
    plan = await planned(client, monaco_route, body)
    assert not plan["unassigned"]
    replan_body, committed, now = noon(body, plan)
    assert sum(map(len, committed.values())) >= 1 and len(replan_body["jobs"]) >= 6
    replan = await planned(client, monaco_route, replan_body)
    assert not replan["unassigned"], replan["unassigned"]
    for route in replan["routes"]:
        served = [s["id"] for s in route["steps"] if s["type"] == "job"]
        mine = committed[route["vehicle"]]
        assert served[: len(mine)] == mine
        assert datetime.fromisoformat(route["steps"][0]["departure"]) >= datetime.fromisoformat(now)
    urgent = {s["id"] for r in replan["routes"] for s in r["steps"] if s.get("id", "") and s["id"].startswith("urgent")}
    assert urgent == {"urgent-0", "urgent-1", "urgent-2"}


async def test_a_van_under_way_delivers_only_what_is_on_board(client: Client, monaco_route: TestServer) -> None:
    """A van with two parcels on board, one committed: of three more parcel jobs it can take one;
    without `current` (a fresh day from the depot) all three."""
    van = {"id": "van", "start": point(0), "end": point(0), "capacity": [8]}
    jobs = [{"id": f"p{i}", "location": point(i + 1), "demand": [1]} for i in range(4)]
    fresh = await planned(client, monaco_route, {"startTime": START.isoformat(), "vehicles": [van], "jobs": jobs})
    assert not fresh["unassigned"]
    current = {"location": point(5), "time": at(3600), "load": [2], "committed": ["p0"]}
    under_way = {"startTime": START.isoformat(), "vehicles": [van | {"current": current}], "jobs": jobs}
    answer = await planned(client, monaco_route, under_way)
    steps = answer["routes"][0]["steps"]
    assert steps[0]["location"] == point(5) and steps[1]["id"] == "p0" and len(answer["unassigned"]) == 2
    assert [s["load"] for s in steps if s["type"] == "job"] == [[1], [0]]


async def test_contradictions_of_a_day_under_way_are_named_at_once(client: Client) -> None:
    """Committed jobs needing more than the load on board, an unknown job, a job committed by two
    vans, a load above the capacity, and a committed job whose window has closed: one 400."""
    vans = [
        {"id": "a", "start": point(0), "capacity": [2], "current": {"location": point(1), "load": [1], "committed": ["j1", "j2"]}},
        {"id": "b", "start": point(0), "capacity": [2], "current": {"location": point(1), "load": [2], "committed": ["nope", "j1"]}},
        {"id": "c", "start": point(0), "capacity": [2], "current": {"location": point(1), "load": [3]}},
    ]
    jobs = [{"id": f"j{i}", "location": point(i + 2), "demand": [1]} for i in range(3)]
    body = {"startTime": START.isoformat(), "vehicles": vans, "jobs": jobs}
    wanted = {"vehicles[0].current.load", "vehicles[1].current.committed[0]", "vehicles[1].current.committed[1]",
              "vehicles[2].current.load"}  # fmt: skip
    assert await named(client, body, LEGACY) == await named(client, body, PROBLEM) == wanted
    closed = {"startTime": START.isoformat(), "jobs": [*jobs[:1], jobs[1] | {"timeWindows": [{"start": at(0), "end": at(60)}]}],
              "vehicles": [vans[0] | {"current": {"location": point(1), "time": at(3600), "load": [2], "committed": ["j1"]}}]}  # fmt: skip
    assert await named(client, closed, PROBLEM) == {"vehicles[0].current.committed[0]"}
