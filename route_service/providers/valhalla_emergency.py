"""Emergency routes on Valhalla (issue 56): relaxations only within `emergencyRoutingRadius`.

Valhalla relaxes a whole route (`ignore_oneways`, `ignore_access`), not a radius. So a route
is asked for with both relaxations, then walked edge by edge (`trace_attributes`, edge_walk on
its own shape): an edge against its one-way direction or closed to the vehicle is a
relaxation, allowed only when all of its stretch lies within the radius of the requested start
or of the requested destination (straight line), never on a motorway or trunk (a closure or a
one-way there is a separate carriageway), and past no bollard. A route the walk does not
follow is never vouched for. Each offending edge is excluded (`exclude_locations` at its
middle) and the route asked again, ROUNDS times at most, while it beats the normal route; then
the normal route answers. Measured (`python -m bench route_emergency`, load 5-6.5 on 2 cores):
19-56 ms p50 where the graph provider took 1.2-14 ms and Valhalla's normal route 2-18 ms;
8-35 of 100 routes needed a second or third round.

Kept meanings of the graph provider's: the segments say which rule was relaxed
(`oneway_against_direction`, or `access_restricted` for a closed way, also when one-way); a
route that needs no relaxation is the normal route itself. Which closed ways a vehicle can
drive is the import's list (importing.valhalla_build.emergency_ways, by OSM way id): a closed
edge is a relaxation only when its way is listed (`ignore_access` also opens footways, steps
and cycleways to a car, as they carry a pedestrian's or cyclist's access bit), and a way closed
to trucks only is found by the list too (Valhalla reports the car's access bits for a truck).
Valhalla opens `access=private` (and destination, delivery, ...) as destination-only: a normal
route enters it only where it starts or ends. The list holds those ways too, so an emergency
route drives them (LEAVING_NOW) within the radius, marked, and never outside it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import orjson

from common.errors import ApiError, NoRouteFound
from common.geo import haversine_m_arrays
from route_service import polyline
from route_service.model import EmergencySegment, Restrictions, RouteQuery, RouteResult
from route_service.valhalla_tiles import WAYS_FILE


class Engine(Protocol):
    """What an emergency route asks of the Valhalla provider (providers.valhalla), which calls it."""

    config: dict[str, Any]

    def route(self, query: RouteQuery) -> RouteResult: ...
    def route_request(self, query: RouteQuery) -> dict[str, Any]: ...
    def route_result(self, query: RouteQuery, answer: dict[str, Any]) -> RouteResult: ...
    def clock(self, vehicle: str) -> float: ...
    def call(self, action: str, request: dict[str, Any], restrictions: Restrictions, parameter: str = "to") -> Any: ...

RELAXED = {"ignore_oneways": True, "ignore_access": True, "destination_only_penalty": 0}
# A relaxed route leaves at a time (now, unless the request has one): Valhalla then searches one
# way (thor route_action: timedep_forward), which enters destination-only ways (access=private)
# anywhere; its bidirectional search enters them only where a route starts or ends. Measured on
# Heidelberg, 172 pairs: p50 9-13 ms against 18 ms bidirectional (load 7 on 2 cores).
LEAVING_NOW = {"type": 0}
# Without a time in the request that departure is only for the search's sake: the speeds by time
# (predicted speeds, importing.speed_profiles) stay off, so the relaxed route runs on the normal
# route's clock (a time-less route's). Rules of access by time do apply as of now.
TIMELESS_SPEEDS = ["freeflow", "constrained", "current"]
# Relaxed routes asked for at most: each round excludes the offending edges of the one before.
ROUNDS = 3
NEVER_RELAXED_CLASSES = frozenset({"motorway", "trunk"})
BARRIERS = frozenset({"bollard", "sump_buster"})
ATTRIBUTES = [
    "edge.forward", "edge.traversability", "edge.road_class",
    "edge.begin_shape_index", "edge.end_shape_index", "edge.way_id", "node.type", "shape",
]  # fmt: skip


@dataclass(frozen=True)
class Stretch:
    """One edge of a relaxed route: its shape indices and the rule it relaxes (None: none)."""

    first: int
    last: int
    reason: str | None
    allowed: bool


def emergency_route(provider: Engine, query: RouteQuery) -> RouteResult:
    """The fastest (or shortest) route with relaxations inside the radius only (module doc)."""
    single = replace(query, alternatives=0)
    request = provider.route_request(single)
    request["costing_options"][request["costing"]].update(RELAXED)
    if "date_time" not in request:
        request["date_time"] = LEAVING_NOW
        request["costing_options"][request["costing"]]["speed_types"] = TIMELESS_SPEEDS
    excluded: list[dict[str, float]] = list(request.get("exclude_locations", []))
    normal: list[RouteResult | None] = []  # the normal route, once asked for
    for round_ in range(ROUNDS):
        if excluded:
            request["exclude_locations"] = excluded
        try:
            answer = provider.call("route", request, query.restrictions)
        except NoRouteFound:
            break
        if normal and not faster_than(answer, normal[0], provider, query):
            break  # each round excludes more, so no later one beats the normal route either
        shape = polyline.decode(answer["trip"]["legs"][0]["shape"], 6)  # (lon, lat)
        stretches = walk(provider, request, answer, query, shape)
        if stretches is None:
            break  # the route cannot be told apart edge by edge: the normal one answers
        offending = [s for s in stretches if not s.allowed]
        if not offending:
            if all(s.reason is None for s in stretches):
                break  # nothing relaxed: the normal route is the answer
            result = marked(provider.route_result(single, answer), stretches)
            if round_ == 0 and stretches[0].reason is None and stretches[-1].reason is None:
                # Starts and ends on roads open to the vehicle, so on the normal route's (Valhalla
                # snaps to the nearest edges, and the nearest of more roads is open): the best
                # route of a larger choice, never slower than the normal one.
                return result
            return faster(result, normal[0] if normal else normal_or_none(provider, query))
        if not normal:
            normal.append(normal_or_none(provider, query))
            if not faster_than(answer, normal[0], provider, query):
                break  # as above: the best relaxed route is no faster than the normal one
        if len(excluded) + len(offending) > provider.config["service_limits"]["max_exclude_locations"]:
            break  # Valhalla refuses more (50 by default): a route this far off the rules is not mended
        excluded += [middle(shape, s) for s in offending]
    if normal and normal[0] is not None:
        return normal[0]
    return provider.route(replace(query, emergency_radius_m=0))


def faster_than(answer: dict[str, Any], normal: RouteResult | None, provider: Engine,
                query: RouteQuery) -> bool:  # fmt: skip
    """Whether a relaxed route beats the normal one (none: it does), on the normal route's clock."""
    if normal is None:
        return True
    seconds = float(answer["trip"]["summary"]["time"]) * provider.clock(query.vehicle)
    return round(seconds, 1) < normal.routes[0].duration_s  # as rounded in the answer (to_route)


def walk(provider: Engine, request: dict[str, Any], answer: dict[str, Any], query: RouteQuery,
         shape: np.ndarray) -> list[Stretch] | None:  # fmt: skip
    """The route's edges, each judged (module doc); None when the walk does not follow the route:
    Valhalla's map matching keeps a car off cycleways and steps even with `ignore_access`, which
    its routes take (measured on a made map), so such a route is never vouched for."""
    trace = {
        "encoded_polyline": answer["trip"]["legs"][0]["shape"],
        "shape_format": "polyline6",
        "costing": request["costing"],
        "costing_options": request["costing_options"],
        "shape_match": "edge_walk",
        "filters": {"attributes": ATTRIBUTES, "action": "include"},
    }
    try:
        walked = provider.call("trace_attributes", trace, query.restrictions)
    except (RuntimeError, ApiError):  # map matching found no walk along the shape
        return None
    edges = walked.get("edges") or []
    path = polyline.decode(walked.get("shape") or "", 6)
    if not edges or path.shape != shape.shape or not np.allclose(path, shape, atol=1e-6):
        return None
    motor = query.vehicle in ("car", "truck")
    closed = closed_ways(provider.config["mjolnir"]["tile_extract"], query.vehicle)
    return [judge(edge, i == len(edges) - 1, motor, shape, query, closed) for i, edge in enumerate(edges)]


def judge(edge: dict[str, Any], last: bool, motor: bool, shape: np.ndarray, query: RouteQuery,
          closed: frozenset[int]) -> Stretch:  # fmt: skip
    first, end = int(edge.get("begin_shape_index", 0)), int(edge.get("end_shape_index", 0))
    listed = edge.get("way_id") in closed
    reason = relaxed_rule(edge) or ("access_restricted" if listed else None)
    barrier = motor and not last and (edge.get("end_node") or {}).get("type") in BARRIERS
    if reason is None:
        return Stretch(first, end, None, not barrier)
    allowed = (
        (listed or reason != "access_restricted")
        and edge.get("road_class") not in NEVER_RELAXED_CLASSES
        and not barrier
        and inside(shape[first : end + 1], query)
    )
    return Stretch(first, end, reason, allowed)


@cache
def closed_ways(tiles_tar: str, vehicle: str) -> frozenset[int]:
    """The drivable ways closed to the vehicle (the import's list beside the tiles; none listed
    in a dataset built before it, so no closed way is opened there)."""
    listed = Path(tiles_tar).with_name(WAYS_FILE)
    ways = orjson.loads(listed.read_bytes()) if listed.is_file() else {}
    return frozenset(ways.get("car", [])) | frozenset(ways.get("truck", []) if vehicle == "truck" else [])


def relaxed_rule(edge: dict[str, Any]) -> str | None:
    """The rule the edge's use relaxes. Valhalla's traversability is the travel mode's access
    relative to the way's drawing direction (thor/triplegbuilder.cc), `forward` whether the
    edge follows that direction."""
    traversability = edge.get("traversability", "both")
    if traversability == "none":
        return "access_restricted"
    wanted = "forward" if edge.get("forward", True) else "backward"
    return None if traversability in ("both", wanted) else "oneway_against_direction"


def inside(points: np.ndarray, query: RouteQuery) -> bool:
    """Whether every point lies within the radius of the start, or every one of the destination."""
    lon, lat = points[:, 0], points[:, 1]
    radius = float(query.emergency_radius_m)
    return any(
        bool(np.all(haversine_m_arrays(lat, lon, end.lat, end.lon) <= radius))
        for end in (query.origin, query.destination)
    )


def middle(shape: np.ndarray, stretch: Stretch) -> dict[str, float]:
    """A point halfway along the stretch, which Valhalla snaps to its edge."""
    piece = shape[stretch.first : stretch.last + 1]
    lengths = segment_metres(piece)
    if len(piece) < 2 or lengths.sum() == 0:
        lon, lat = piece[0]
        return {"lat": float(lat), "lon": float(lon)}
    along = np.concatenate(([0.0], np.cumsum(lengths)))
    half = along[-1] / 2
    i = int(np.searchsorted(along, half, side="right")) - 1
    t = (half - along[i]) / lengths[i]
    lon, lat = piece[i] + t * (piece[i + 1] - piece[i])
    return {"lat": float(lat), "lon": float(lon)}


def segment_metres(points: np.ndarray) -> np.ndarray:
    lon, lat = points[:, 0], points[:, 1]
    return haversine_m_arrays(lat[:-1], lon[:-1], lat[1:], lon[1:]) if len(points) > 1 else np.zeros(0)


def marked(result: RouteResult, stretches: list[Stretch]) -> RouteResult:
    """The route with its relaxed runs as EmergencySegments (consecutive edges of one rule joined)."""
    route = result.routes[0]
    segments: list[EmergencySegment] = []
    for stretch in stretches:
        if stretch.reason is None:
            continue
        if segments and segments[-1].end_index == stretch.first and segments[-1].reason == stretch.reason:
            start = segments.pop().start_index
        else:
            start = stretch.first
        metres = float(segment_metres(route.geometry[start : stretch.last + 1]).sum())
        segments.append(EmergencySegment(start, stretch.last, round(metres, 1), stretch.reason))
    route.emergency_segments = segments
    return result


def normal_or_none(provider: Engine, query: RouteQuery) -> RouteResult | None:
    try:
        return provider.route(replace(query, emergency_radius_m=0))
    except NoRouteFound:
        return None


def faster(relaxed: RouteResult, normal: RouteResult | None) -> RouteResult:
    """The relaxed route only where it is faster: with `ignore_access` Valhalla may start it on a
    closed road nearer the point than any open one, and after exclusions it may have lost a road
    the normal route uses (Monaco: a relaxed route 12 s slower than the normal one)."""
    if normal is None or relaxed.routes[0].duration_s <= normal.routes[0].duration_s:
        return relaxed
    return normal
