"""Several trips, release times, groups and prizes (issue 36, items 1, 2, 5 and 10): POST
/v1/optimize/routes over HTTP against the real route service on Monaco, each answer checked by
the independent feasibility checker (which reads the request's depots, reloadDepots, maxTrips,
releaseTime and group)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from aiohttp.test_utils import TestServer

from optimize_service.fleet.check import check_feasible
from tests.optimize_service.test_app import LEGACY, PROBLEM
from tests.optimize_service.test_fleet_app import START, Client, at, point, post, road_matrix

DEPOT = point(0)


def day(jobs: list[dict[str, Any]], **van: Any) -> dict[str, Any]:
    """One van of capacity 4 from the depot and back, 08:00-16:00, and these jobs."""
    vehicle = {"id": "van", "start": DEPOT, "end": DEPOT, "capacity": [4], "shift": {"start": at(0), "end": at(8 * 3600)}}
    return {
        "startTime": START.isoformat(),
        "depots": [{"id": "hub", "location": DEPOT}],
        "vehicles": [vehicle | van],
        "jobs": jobs,
        "timeLimit": 1,
    }


def parcels(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"id": f"p{i}", "location": point(i + 1), "serviceTime": 120, "demand": [1], **extra} for i in range(count)]


async def planned(client: Client, server: TestServer, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = await post(client, body)
    assert status == 200, answer
    check_feasible(body, answer, await road_matrix(server, body))
    return answer


def served(answer: dict[str, Any]) -> list[str]:
    return [s["id"] for r in answer["routes"] for s in r["steps"] if s["type"] == "job"]


async def test_a_van_reloads_for_a_second_trip(client: Client, monaco_route: TestServer) -> None:
    """Eight parcels, a van of four: with the depot to reload at it serves all in two trips,
    each leaving with its own parcels; without, or with maxTrips 1, only four."""
    two_trips = await planned(client, monaco_route, day(parcels(8), reloadDepots=["hub"], maxTrips=2))
    assert sorted(served(two_trips)) == [f"p{i}" for i in range(8)] and not two_trips["unassigned"]
    route = two_trips["routes"][0]
    reloads = [s for s in route["steps"] if s["type"] == "reload"]
    assert len(reloads) == 1 and reloads[0]["id"] == "hub" and reloads[0]["location"] == DEPOT
    assert [trip["depot"] for trip in route["trips"]] == [None, "hub"]
    assert [trip["load"] for trip in route["trips"]] == [[4], [4]] and [t["tasks"] for t in route["trips"]] == [4, 4]
    for name, van in (("no reloads", {}), ("one trip", {"reloadDepots": ["hub"], "maxTrips": 1})):
        answer = await planned(client, monaco_route, day(parcels(8), **van))
        assert len(served(answer)) == 4, name
        assert {u["reason"] for u in answer["unassigned"]} == {"capacity-or-time"}, name


async def test_a_trip_leaves_no_earlier_than_its_parcels_are_ready(client: Client, monaco_route: TestServer) -> None:
    """Two parcels ready at 10:00 (releaseTime), two due by 09:00, a van of two: the trip that
    carries the late ones leaves the depot at 10:00 or later, the first does not wait for them;
    a shipment's pickup waits for its own release."""
    jobs = parcels(4)
    for job in jobs[:2]:
        job["timeWindows"] = [{"start": at(0), "end": at(3600)}]
    for job in jobs[2:]:
        job["releaseTime"] = at(2 * 3600)
    answer = await planned(client, monaco_route, day(jobs, reloadDepots=["hub"], capacity=[2]))
    assert sorted(served(answer)) == ["p0", "p1", "p2", "p3"]
    steps = answer["routes"][0]["steps"]
    late = [s for s in steps if s.get("id") in ("p2", "p3")]
    early = [s for s in steps if s.get("id") in ("p0", "p1")]
    ready = datetime.fromisoformat(at(2 * 3600))
    assert all(datetime.fromisoformat(s["arrival"]) > ready for s in late)
    assert all(datetime.fromisoformat(s["arrival"]) < ready for s in early), "the first trip does not wait"
    shipment = {"id": "s", "pickup": {"location": point(1)}, "delivery": {"location": point(2)}, "amount": [1],
                "releaseTime": at(3600)}  # fmt: skip
    body = day([]) | {"jobs": [], "shipments": [shipment]}
    answer = await planned(client, monaco_route, body)
    pickup = next(s for s in answer["routes"][0]["steps"] if s["type"] == "pickup")
    begins = datetime.fromisoformat(pickup["arrival"]) + timedelta(seconds=pickup["waiting"])
    assert begins >= datetime.fromisoformat(at(3600))


async def test_exactly_one_job_of_a_group_is_served(client: Client, monaco_route: TestServer) -> None:
    """Home or parcel locker (`group`): one of them is visited, the other is neither a stop nor
    unassigned; the one the van reaches in its window is chosen."""
    home = {"id": "home", "location": point(3), "group": "order-7", "timeWindows": [{"start": at(9 * 3600), "end": at(10 * 3600)}]}
    locker = {"id": "locker", "location": point(4), "group": "order-7"}
    answer = await planned(client, monaco_route, day([home, locker, *parcels(1)]))
    assert sorted(served(answer)) == ["locker", "p0"] and not answer["unassigned"]
    assert answer["totals"]["assigned"] == 2


async def test_an_optional_job_is_served_only_when_its_prize_pays(client: Client, monaco_route: TestServer) -> None:
    """An optional job (`prize`) far from the route: left out with the reason `optional` when its
    prize is below what the detour costs (3600 a driven hour, the default), served when above."""
    far = {"id": "far", "location": point(5), "prize": 1}
    answer = await planned(client, monaco_route, day([far, *parcels(1)]))
    assert served(answer) == ["p0"] and [(u["id"], u["reason"]) for u in answer["unassigned"]] == [("far", "optional")]
    rich = await planned(client, monaco_route, day([far | {"prize": 100_000}, *parcels(1)]))
    assert sorted(served(rich)) == ["far", "p0"]


async def test_contradictions_are_named_at_once(client: Client) -> None:
    """Issue 36, item 10: a release after every shift ends, an unknown reload depot, maxTrips
    without reloads, a release before every pickup window closes, and rules PyVRP alone plans
    beside a break: one 400 naming each."""
    body = day(parcels(2), reloadDepots=["hub"])
    body["jobs"][0]["releaseTime"] = at(9 * 3600)
    shift = {"start": at(0), "end": at(8 * 3600)}
    lunch = {"id": "b", "timeWindows": [{"start": at(3600), "end": at(7200)}], "duration": 600}
    body["vehicles"] += [{"id": "car", "start": DEPOT, "shift": shift, "breaks": [lunch]},
                         {"id": "bike", "start": DEPOT, "maxTrips": 2}, {"id": "cab", "start": DEPOT, "reloadDepots": ["nowhere"]}]  # fmt: skip
    body["shipments"] = [{"id": "s", "pickup": {"location": point(1), "timeWindows": [{"start": at(0), "end": at(3600)}]},
                          "delivery": {"location": point(2)}, "releaseTime": at(7200)}]  # fmt: skip
    wanted = {"jobs[0].releaseTime", "vehicles[1].breaks", "vehicles[2].maxTrips", "vehicles[3].reloadDepots[0]",
              "shipments[0].releaseTime", "shipments"}  # fmt: skip
    assert wanted <= await named(client, body, LEGACY) and wanted <= await named(client, body, PROBLEM)


async def named(client: Client, body: dict[str, Any], headers: dict[str, str]) -> set[str]:
    """The parameters a 400 names, in either error format."""
    status, answer = await post(client, body, headers)
    assert status == 400, answer
    if headers is LEGACY:
        return {d["message"].split(": ")[0] for d in answer["details"]}
    return {part.split(": ")[0] for part in answer["detail"].split("; ")}


async def test_a_group_no_vehicle_can_serve_is_refused(client: Client) -> None:
    """Both jobs of a group closed before the van's shift begins: a 400 naming the group."""
    closed = [{"start": at(0), "end": at(60)}]
    jobs = [{"id": f"g{i}", "location": point(i + 3), "group": "either", "timeWindows": closed} for i in range(2)]
    body = day([*jobs, *parcels(1)])
    body["vehicles"][0]["shift"] = {"start": at(3600), "end": at(8 * 3600)}
    assert await named(client, body, LEGACY) == await named(client, body, PROBLEM) == {"jobs[0].group"}
