"""OSRM's answers (the binding's JSON trees) as our typed results: routes with their legs, steps
and signs, snapped points, matchings, table rows (`osrm_provider` asks, this reads)."""

from __future__ import annotations

from typing import Any

import numpy as np
import osrm

from common.geo import LatLon
from route_service.model import (
    NO_SIGNS,
    Leg,
    Maneuver,
    Matching,
    MatchResult,
    Route,
    RouteQuery,
    RouteResult,
    Signs,
    Snapped,
    Step,
)
from route_service.polyline import decode, point_count


def copy_rows(rows: Any, target: np.ndarray) -> None:
    """The binding's array of rows into `target`; null (no route) becomes NaN. One Python
    list per row at a time: 0.14 s for 1000x1000, where `plain()` took 1.07 s (and 200 MiB).
    By index: iterating the binding's array copies every row first."""
    for i in range(len(rows)):
        target[i] = list(rows[i])


def plain(value: Any) -> Any:
    """osrm.Object/osrm.Array → dict/list (the binding's JSON tree is not a Python mapping)."""
    if isinstance(value, osrm.Object):
        return {key: plain(value[key]) for key in value}
    if isinstance(value, osrm.Array):
        return [plain(item) for item in value]
    return value


def to_snapped(waypoint: Any) -> Snapped:
    lon, lat = waypoint["location"]
    return Snapped(LatLon(lat, lon), round(float(waypoint["distance"]), 1), str(waypoint["name"]))


def to_result(response: Any, query: RouteQuery) -> RouteResult:
    routes = [to_route(r, query.steps) for r in response["routes"]][: 1 + query.alternatives]
    waypoints = response["waypoints"]
    notes = []
    if len(routes) - 1 < query.alternatives:
        notes.append(f"{query.alternatives} alternative route(s) requested, {len(routes) - 1} found")
    return RouteResult(
        routes=routes,
        origin=to_snapped(plain(waypoints[0])),
        destination=to_snapped(plain(waypoints[1])),
        alternatives_requested=query.alternatives,
        notes=notes,
    )


def to_route(route: Any, with_steps: bool) -> Route:
    geometry = decode(str(route["geometry"]))
    return Route(
        distance_m=round(float(route["distance"]), 1),
        duration_s=round(float(route["duration"]), 1),
        geometry=geometry,
        legs=[to_leg(leg, with_steps, len(geometry) - 1) for leg in route["legs"]],
    )


def to_leg(leg: Any, with_steps: bool, last_index: int) -> Leg:
    """A leg with its steps; a step's geometry index points into the route's overview geometry."""
    steps: list[Step] = []
    index = 0
    # Only the fields we answer are converted: the intersections make up most of the tree.
    for step in leg["steps"] if with_steps else []:
        end = min(index + max(point_count(str(step["geometry"])) - 1, 0), last_index)
        steps.append(to_step(step, index, end))
        index = end
    return Leg(round(float(leg["distance"]), 1), round(float(leg["duration"]), 1), str(leg["summary"]), steps)


def to_step(step: Any, start: int, end: int) -> Step:
    # Positional arguments: keywords cost a third more per step (measured), on every route.
    raw = step["maneuver"]
    lon, lat = raw["location"]
    maneuver = Maneuver(
        str(raw["type"]),
        (lon, lat),
        int(raw["bearing_before"]),
        int(raw["bearing_after"]),
        str(raw["modifier"]) if "modifier" in raw else None,
        int(raw["exit"]) if "exit" in raw else None,
    )
    distance, duration = round(float(step["distance"]), 1), round(float(step["duration"]), 1)
    return Step(str(step["name"]), distance, duration, (start, end), str(step["mode"]), maneuver, signs_of(step))


def member(item: Any, key: str, default: Any) -> Any:
    return item[key] if key in item else default  # noqa: SIM401 - the binding's objects have no get


SIDE_ONLY = {side: Signs(driving_side=side) for side in ("right", "left")}


def signs_of(step: Any) -> Signs:
    """The step's signs for its sentence; most steps have none (one shared object). The
    binding's objects answer `in` and `[]`, not `get`."""
    crossings = member(step, "intersections", ())
    crossing = crossings[0] if len(crossings) else {}
    lanes, classes = member(crossing, "lanes", ()), member(crossing, "classes", ())
    side = str(member(step, "driving_side", ""))
    texts = [str(member(step, key, "")) for key in ("ref", "destinations", "exits", "rotary_name")]
    if not (any(texts) or len(lanes) or len(classes)):
        return SIDE_ONLY.get(side, NO_SIGNS)
    valid = tuple(bool(lane["valid"]) for lane in lanes)
    return Signs(texts[0], texts[1], texts[2], texts[3], valid, "motorway" in [str(c) for c in classes], side)


def to_match(response: Any, count: int, detail: bool = False) -> MatchResult:
    """Which input points each matching covers, from the tracepoints' `matchings_index`; with
    `detail` also each point's place on the road and each matching's geometry."""
    matched = [False] * count
    snapped: list[Snapped | None] = [None] * count if detail else []
    spans: dict[int, list[int]] = {}
    tracepoints = response["tracepoints"]
    for index in range(len(tracepoints)):
        tracepoint = tracepoints[index]
        if tracepoint is not None:
            matched[index] = True
            span = spans.setdefault(int(tracepoint["matchings_index"]), [index, index])
            span[1] = index
            if detail:
                snapped[index] = to_snapped(plain(tracepoint))
    matchings = [
        Matching(
            spans[i][0],
            spans[i][1],
            float(m["distance"]),
            float(m["duration"]),
            float(m["confidence"]),
            decode(str(m["geometry"]), 6) if detail else None,
        )
        for i, m in enumerate(response["matchings"])
        if i in spans
    ]
    return MatchResult(sorted(matchings, key=lambda m: m.first_index), matched, snapped)
