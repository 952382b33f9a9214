"""An independent feasibility checker of POST /v1/optimize/routes answers (no aiohttp here).

It reads only the request body, the answer body and its own road matrix (`Roads`, asked of the
route service by its caller): none of the solver's code, so a fault in the planner, the
translation of a solver's answer or the formatter shows up here. It checks that no time window,
shift, capacity, skill, break or pickup-before-delivery rule is broken, that every task is
served once or listed as unassigned (a group's other jobs neither, when one is served), that
each route keeps its vehicle's maxWorkingTime, maxDistance, maxStops and maxTrips, that a trip
leaves no earlier than its jobs' release times and reloads only at its vehicle's depots, that a
vehicle under way (`current`) leaves from where it is, not before its time, with its load on
board and serves its committed jobs first, in order, and that times, loads (per trip) and
distances add up.

Used by the tests (tests/optimize_service/test_fleet_app.py, tests/integration) and by the
quality bench (bench/fleet.py) on every answer, ours and the references'. A broken rule raises
`Infeasible` (an AssertionError, so pytest reports it like an assert).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np

LEG_TOLERANCE_S = 1.0  # the solver works in whole seconds of the road matrix's tenths
LEG_TOLERANCE_M = 1.0
MOMENT_TOLERANCE_S = 0.5  # answers carry whole seconds
REASONS = ("no-route", "time-window", "vehicle-limits", "capacity-or-time", "optional", "closed-at-time")


class Infeasible(AssertionError):
    """A rule the answer breaks."""


def need(condition: bool, message: str) -> None:
    if not condition:
        raise Infeasible(message)


def close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance


class Roads:
    """The checker's own road matrix (durations and distances) over every point of a request."""

    def __init__(self, points: list[dict[str, float]], durations: np.ndarray, distances: np.ndarray) -> None:
        self.index = {(p["lat"], p["lon"]): i for i, p in enumerate(points)}
        self.durations, self.distances = durations, distances

    def leg(self, a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
        i, j = self.index[(a["lat"], a["lon"])], self.index[(b["lat"], b["lon"])]
        return float(self.durations[i, j]), float(self.distances[i, j])


def request_points(body: dict[str, Any]) -> list[dict[str, float]]:
    """Every distinct point of a request."""
    points = [v["start"] for v in body["vehicles"]] + [v["end"] for v in body["vehicles"] if "end" in v]
    points += [j["location"] for j in body.get("jobs", [])]
    points += [s[end]["location"] for s in body.get("shipments", []) for end in ("pickup", "delivery")]
    points += [d["location"] for d in body.get("depots", [])]
    points += [v["current"]["location"] for v in body["vehicles"] if "current" in v]
    return list({(p["lat"], p["lon"]): p for p in points}.values())


def same_point(a: dict[str, float], b: dict[str, float]) -> bool:
    return abs(a["lat"] - b["lat"]) < 1e-9 and abs(a["lon"] - b["lon"]) < 1e-9


class Clock:
    """Date-times of the request and answer as seconds after the request's startTime."""

    def __init__(self, body: dict[str, Any], answer: dict[str, Any]) -> None:
        self.start = datetime.fromisoformat(body.get("startTime") or answer["startTime"])

    def seconds(self, text: str) -> float:
        moment = datetime.fromisoformat(text)
        need(moment.utcoffset() == self.start.utcoffset(), f"{text} does not keep the start time's offset")
        return (moment - self.start).total_seconds()

    def at(self, seconds: float) -> str:
        return (self.start + timedelta(seconds=seconds)).isoformat()

    def in_some_window(self, moment: float, windows: list[dict[str, str]] | None) -> bool:
        if not windows:
            return moment >= 0
        tol = MOMENT_TOLERANCE_S
        return any(
            self.seconds(w.get("start", self.at(0))) - tol <= moment <= self.seconds(w["end"]) + tol for w in windows
        )


class Tasks:
    """The request's vehicles, jobs and shipments by id."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.vehicles = {v["id"]: v for v in body["vehicles"]}
        self.jobs = {j["id"]: j for j in body.get("jobs", [])}
        self.shipments = {s["id"]: s for s in body.get("shipments", [])}
        self.depots = {d["id"]: d for d in body.get("depots", [])}

    def place_of(self, step: dict[str, Any]) -> dict[str, Any] | None:
        if step["type"] == "reload":
            return {"location": self.depots[step["id"]]["location"], "serviceTime": 0, "timeWindows": None}
        if step["type"] == "job":
            item = self.jobs[step["id"]]
        elif step["type"] in ("pickup", "delivery"):
            item = self.shipments[step["id"]][step["type"]]
        else:
            return None
        return {
            "location": item["location"],
            "serviceTime": item.get("serviceTime", 0),
            "timeWindows": item.get("timeWindows"),
        }


def check_feasible(body: dict[str, Any], answer: dict[str, Any], roads: Roads | dict[str, Roads]) -> None:
    """`roads`: one matrix, or one per vehicle id or kind (a vehicle's own first: trucks of two
    sizes drive different roads). Raises Infeasible naming the first broken rule."""
    tasks, clock = Tasks(body), Clock(body, answer)
    served: list[str] = []
    used = [route["vehicle"] for route in answer["routes"]]
    need(len(used) == len(set(used)) and set(used) <= set(tasks.vehicles), "a vehicle used twice or unknown")
    for route in answer["routes"]:
        vehicle = tasks.vehicles[route["vehicle"]]
        need(route["kind"] == vehicle.get("kind", "car"), f"route of {route['vehicle']} has another kind")
        own = roads.get(route["vehicle"], roads.get(route["kind"])) if isinstance(roads, dict) else roads
        need(own is not None, f"no road matrix for {route['vehicle']}")
        assert own is not None
        served += check_route(route, vehicle, tasks, own, clock)
    left = [item["id"] for item in answer["unassigned"]]
    alternatives = check_groups(served, tasks)
    need(sorted(served + left) == sorted(set([*tasks.jobs, *tasks.shipments]) - alternatives),
         "every task once: served, unassigned or another job of a served group")  # fmt: skip
    for item in answer["unassigned"]:
        need(item["type"] == ("job" if item["id"] in tasks.jobs else "shipment"), f"type of unassigned {item['id']}")
        need(item["reason"] in REASONS and bool(item["message"]), f"reason of unassigned {item['id']}")
    check_totals(answer, len(tasks.jobs) + len(tasks.shipments) - len(alternatives), len(left))


def check_groups(served: list[str], tasks: Tasks) -> set[str]:
    """At most one job of each group served; the others of a served group (neither served nor
    unassigned)."""
    groups: dict[str, list[str]] = {}
    for ident, job in tasks.jobs.items():
        if job.get("group") is not None:
            groups.setdefault(job["group"], []).append(ident)
    others: set[str] = set()
    for name, members in groups.items():
        done = [m for m in members if m in served]
        need(len(done) <= 1, f"more than one job of the group {name} served")
        others |= set(members) - set(done) if done else set()
    return others


def check_totals(answer: dict[str, Any], tasks: int, left: int) -> None:
    totals = answer["totals"]
    for key in ("distance", "duration", "serviceTime", "waitingTime", "cost"):
        need(totals[key] == sum(route[key] for route in answer["routes"]), f"totals.{key} is not the routes' sum")
    need(totals["vehiclesUsed"] == len(answer["routes"]), "totals.vehiclesUsed")
    need((totals["assigned"], totals["unassigned"]) == (tasks - left, left), "totals.assigned or unassigned")


def check_route(route: dict[str, Any], vehicle: dict[str, Any], tasks: Tasks, roads: Roads, clock: Clock) -> list[str]:
    steps = route["steps"]
    need(steps[0]["type"] == "start" and steps[-1]["type"] == "end", "a route begins with start and ends with end")
    current = vehicle.get("current")
    start = vehicle["start"] if current is None else current["location"]
    need(same_point(steps[0]["location"], start), f"{vehicle['id']} starts elsewhere")
    if current is not None:
        check_current(steps, vehicle, current, clock)
    if "end" in vehicle:
        need(same_point(steps[-1]["location"], vehicle["end"]), f"{vehicle['id']} ends elsewhere")
    shift = vehicle.get("shift", {})
    leaves = clock.seconds(steps[0]["departure"])
    need(leaves >= clock.seconds(shift.get("start", clock.at(0))), f"{vehicle['id']} leaves before its shift")
    if "end" in shift:
        arrives = clock.seconds(steps[-1]["arrival"])
        need(arrives <= clock.seconds(shift["end"]) + MOMENT_TOLERANCE_S, "the shift ends before the route")
    check_times(steps, tasks, roads, route, clock)
    check_loads(steps, vehicle, tasks)
    check_breaks(steps, vehicle, clock)
    check_limits(route, vehicle, clock)
    check_trips(route, vehicle, tasks, clock)
    return check_tasks(steps, vehicle, tasks)


def check_trips(route: dict[str, Any], vehicle: dict[str, Any], tasks: Tasks, clock: Clock) -> None:
    """Reloads only at the vehicle's depots, at most maxTrips trips, each leaving no earlier than
    its jobs' release times (a shipment's pickup begins no earlier than its own)."""
    steps, name = route["steps"], vehicle["id"]
    reloads = [step for step in steps if step["type"] == "reload"]
    need(all(step["id"] in vehicle.get("reloadDepots", []) for step in reloads), f"{name} reloads at another depot")
    need(len(reloads) + 1 <= vehicle.get("maxTrips", len(reloads) + 1), f"{name} makes more trips than its maxTrips")
    leaves = clock.seconds(steps[0]["departure"])
    for step in steps:
        if step["type"] == "reload":
            leaves = clock.seconds(step["departure"])
        released = None
        if step["type"] == "job" and "releaseTime" in tasks.jobs[step["id"]]:
            released, begins = tasks.jobs[step["id"]]["releaseTime"], leaves
        elif step["type"] == "pickup" and "releaseTime" in tasks.shipments[step["id"]]:
            released, begins = tasks.shipments[step["id"]]["releaseTime"], clock.seconds(step["arrival"]) + step["waiting"]
        if released is not None:
            need(begins >= clock.seconds(released) - MOMENT_TOLERANCE_S, f"{step['id']} taken before its releaseTime")
    if "trips" in route:  # answers cached by the benches before trips were listed have none
        need(len(route["trips"]) == len(reloads) + 1, f"{name}: one trip more than its reloads")


def check_current(steps: list[dict[str, Any]], vehicle: dict[str, Any], current: dict[str, Any], clock: Clock) -> None:
    """A vehicle under way leaves when it is there at the earliest, its committed jobs first, in order."""
    name = vehicle["id"]
    if "time" in current:
        need(clock.seconds(steps[0]["departure"]) >= clock.seconds(current["time"]) - MOMENT_TOLERANCE_S, f"{name} leaves before its current time")
    committed = current.get("committed", [])
    served = [step["id"] for step in steps if step["type"] == "job"]
    need(served[: len(committed)] == committed, f"{name} does not serve its committed jobs first, in order")


def check_limits(route: dict[str, Any], vehicle: dict[str, Any], clock: Clock) -> None:
    """maxWorkingTime (leaving the start to arriving at the end), maxDistance and maxStops."""
    steps, name = route["steps"], vehicle["id"]
    if "maxWorkingTime" in vehicle:
        working = clock.seconds(steps[-1]["arrival"]) - clock.seconds(steps[0]["departure"])
        need(working <= vehicle["maxWorkingTime"] + MOMENT_TOLERANCE_S, f"{name} works longer than its maxWorkingTime")
    if "maxDistance" in vehicle:
        need(route["distance"] <= vehicle["maxDistance"] + LEG_TOLERANCE_M, f"{name} drives farther than its maxDistance")
    if "maxStops" in vehicle:
        stops = sum(step["type"] in ("job", "pickup", "delivery") for step in steps)
        need(stops <= vehicle["maxStops"], f"{name} makes more stops than its maxStops")


def check_times(steps: list[dict[str, Any]], tasks: Tasks, roads: Roads, route: dict[str, Any], clock: Clock) -> None:
    here, left_at = steps[0]["location"], clock.seconds(steps[0]["departure"])
    breaks_between, driven_s, driven_m = 0.0, 0.0, 0.0
    for step in steps[1:]:
        arrival = clock.seconds(step["arrival"])
        start = arrival + step["waiting"]
        name = f"{step['type']} {step.get('id')}"
        need(
            close(clock.seconds(step["departure"]), start + step["serviceTime"], MOMENT_TOLERANCE_S),
            f"{name} departure",
        )
        need(step["waiting"] >= 0, f"{name} waits less than nothing")
        if step["type"] == "break":
            need(start >= left_at - MOMENT_TOLERANCE_S, f"{name} begins before the previous step ends")
            breaks_between += step["serviceTime"]
            continue
        leg_s, leg_m = roads.leg(here, step["location"])
        need(bool(np.isfinite(leg_s)), f"no road to {name}")
        need(arrival >= left_at + leg_s + breaks_between - LEG_TOLERANCE_S, f"{name} reached too early")
        driven_s, driven_m = driven_s + leg_s, driven_m + leg_m
        need(close(step["distance"], driven_m, LEG_TOLERANCE_M * len(steps)), f"{name} distance")
        check_place(step, tasks.place_of(step), start, clock)
        here, left_at, breaks_between = step["location"], clock.seconds(step["departure"]), 0.0
    need(close(route["duration"], driven_s, LEG_TOLERANCE_S * len(steps)), "the route's duration is not its legs'")
    need(close(route["distance"], driven_m, LEG_TOLERANCE_M * len(steps)), "the route's distance is not its legs'")


def check_place(step: dict[str, Any], place: dict[str, Any] | None, start: float, clock: Clock) -> None:
    if place is None:
        return
    name = f"{step['type']} {step['id']}"
    need(same_point(step["location"], place["location"]), f"{name} is served elsewhere")
    need(step["serviceTime"] == place["serviceTime"], f"{name} service time")
    need(clock.in_some_window(start, place["timeWindows"]), f"{name} starts outside its windows")


def check_loads(steps: list[dict[str, Any]], vehicle: dict[str, Any], tasks: Tasks) -> None:
    """The load after every step; each trip (from the start or a reload) leaves with its jobs'
    demands and never holds more than the capacity."""
    dimensions = len(vehicle.get("capacity", steps[0]["load"]))
    capacity = vehicle.get("capacity", [10**12] * dimensions)
    nothing = [0] * dimensions

    def demand(step: dict[str, Any]) -> list[int]:
        return list(tasks.jobs[step["id"]].get("demand", nothing)) if step["type"] == "job" else nothing

    load = nothing
    on_board = vehicle.get("current", {}).get("load")
    for index, step in enumerate(steps):
        change = [-x for x in demand(step)]
        if step["type"] == "start" and vehicle.get("current") is not None:  # what is on board, not what it delivers
            load = list(on_board or nothing)
        elif step["type"] in ("start", "reload"):
            trip = next((i for i in range(index + 1, len(steps)) if steps[i]["type"] == "reload"), len(steps))
            load = [sum(column) for column in zip(nothing, *(demand(s) for s in steps[index + 1 : trip]), strict=True)]
        elif step["type"] in ("pickup", "delivery"):
            sign = 1 if step["type"] == "pickup" else -1
            change = [sign * x for x in tasks.shipments[step["id"]]["amount"]]
        load = [a + b for a, b in zip(load, change, strict=True)]
        need(step["load"] == load, f"load after {step['type']} {step.get('id')}")
        need(all(0 <= x <= c for x, c in zip(load, capacity, strict=True)), f"capacity broken at {step.get('id')}")


def check_breaks(steps: list[dict[str, Any]], vehicle: dict[str, Any], clock: Clock) -> None:
    taken = [step for step in steps if step["type"] == "break"]
    wanted = {b["id"]: b for b in vehicle.get("breaks", [])}
    need(sorted(step["id"] for step in taken) == sorted(wanted), f"breaks of {vehicle['id']}")
    for step in taken:
        need(step["serviceTime"] == wanted[step["id"]]["duration"], f"break {step['id']} duration")
        begins = clock.seconds(step["arrival"]) + step["waiting"]
        need(clock.in_some_window(begins, wanted[step["id"]]["timeWindows"]), f"break {step['id']} outside its windows")


def check_tasks(steps: list[dict[str, Any]], vehicle: dict[str, Any], tasks: Tasks) -> list[str]:
    served: list[str] = []
    picked: set[str] = set()
    for step in steps:
        if step["type"] in ("job", "pickup", "delivery"):
            task = tasks.jobs[step["id"]] if step["type"] == "job" else tasks.shipments[step["id"]]
            need(set(task.get("skills", [])) <= set(vehicle.get("skills", [])), f"skills for {step['id']}")
        if step["type"] == "job":
            served.append(step["id"])
        elif step["type"] == "pickup":
            picked.add(step["id"])
        elif step["type"] == "delivery":
            need(step["id"] in picked, f"{step['id']} delivered before its pickup (or by another vehicle)")
            served.append(step["id"])
    need(picked == {i for i in served if i in tasks.shipments}, "a shipment picked up and never delivered")
    return served
