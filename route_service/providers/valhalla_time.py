"""Valhalla's routes at a time (issue 56): the request's `date_time` and what the answer reports.

Valhalla applies conditional access (`access|motor_vehicle|motorcar|hgv|bicycle|foot:conditional`)
and via-node `restriction:conditional` as each edge is reached when the request has a
`date_time` (its time-dependent A*, forward from a departure or backward from an arrival), in
each node's time zone from the tiles (route_service.importing.valhalla_timed). It takes the
local wall time of the map: the request's time is moved into the zone of the point it is given
for. The rules met are those of the route's ways (`trace_attributes` on its shape: each edge's
way id and when it ends) that the map's timed index (route_service.timed_index) says held.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from timezonefinder import TimezoneFinder

from common.errors import NoRouteFound, PointNotRoutable
from common.geo import LatLon
from route_service.model import Restrictions, RouteQuery, RouteResult, RouteTime, TimeRuleMet
from route_service.time_rules import size_of
from route_service.timed_index import TimedIndex, keys_of

UTC_ZONE = ZoneInfo("UTC")
A_YEAR = timedelta(days=366)
# Routes arriving by a time: at most this many routes leaving at found times (the first leaves at
# the arrival time to learn the duration; the next leaves that much earlier; a third when the
# rules by time changed the route).
ARRIVAL_ROUNDS = 3  # "no rule changes" (TimedRoadsSource.next_rule_change)
WAY_ATTRIBUTES = ["edge.way_id", "edge.names", "node.elapsed_time"]
MATCHED_ATTRIBUTES = ["edge.way_id", "edge.names", "matched.edge_index", "matched.type"]
TRACE_RADIUS_M = 50.0  # as the provider's map matching (valhalla.MATCH_SEARCH_RADIUS_M)
_finder_lock = threading.Lock()
_finder: list[TimezoneFinder] = []
Call = Callable[[str, dict[str, Any]], Any]


@lru_cache(maxsize=4096)
def zone_at(lat: float, lon: float) -> ZoneInfo:
    """The time zone of a place (coordinates rounded to ~100 m by the caller), as the tiles have it."""
    with _finder_lock:
        if not _finder:
            _finder.append(TimezoneFinder())
        name = _finder[0].timezone_at(lat=lat, lng=lon)
    return ZoneInfo(name) if name else UTC_ZONE


def date_time(when: RouteTime, origin: LatLon, destination: LatLon) -> dict[str, Any]:
    """Valhalla's `date_time`: type 1 leaves at, 2 arrives by, in the local time of that end."""
    return {"type": 2 if when.arrival else 1, "value": local_time(when.at, destination if when.arrival else origin)}


def local_time(at: datetime, point: LatLon) -> str:
    """`at` as Valhalla reads a `date_time`: the wall time of the point's zone, to the minute."""
    return at.astimezone(zone_at(round(point.lat, 3), round(point.lon, 3))).strftime("%Y-%m-%dT%H:%M")


def arrive_by(route_once: Callable[[RouteQuery], RouteResult], query: RouteQuery, when: RouteTime) -> RouteResult:
    """The route arriving by a time, as routes leaving at found times (ARRIVAL_ROUNDS): of those
    that arrive in time, the one that leaves last. Valhalla's own arrive-by search (date_time
    type 2) does not check the edge it starts from, the one into the destination: arriving by
    08:03 on the made map's gate closed from 08:00 (test_time_routes), it drove it."""
    departure, best = when.at, None
    for _ in range(ARRIVAL_ROUNDS):
        leaving = Restrictions(query.restrictions.avoid, query.restrictions.truck, RouteTime(departure))
        found = route_once(dataclasses.replace(query, restrictions=leaving))
        arrival = found.arrival or when.at
        if arrival <= when.at and (best is None or departure > best[0]):
            best = (departure, found)
        if arrival == when.at:
            break
        departure -= arrival - when.at
    return best[1] if best is not None else found


def at_time(index: TimedIndex | None, call: Call, costing: dict[str, Any], clock: float, query: RouteQuery,
            result: RouteResult, trip: dict[str, Any]) -> RouteResult:  # fmt: skip
    """The route's departure and arrival, and the rules by time that held where it drove: looked
    up only when it passes a timed way's node (TimedIndex.touches)."""
    when = query.restrictions.time
    assert when is not None
    result.departure, result.arrival = times_of(when, result.routes[0].duration_s)
    line = result.routes[0].geometry
    if index is not None and index.touches(line[:, 1], line[:, 0]):
        driven = ways_driven(call, trip, costing, result.departure, clock)
        result.time_rules = rules_met(index, query, driven)
    return result


def times_of(when: RouteTime, duration_s: float) -> tuple[datetime, datetime]:
    """Departure and arrival of a route of `duration_s` at `when`."""
    if when.arrival:
        return when.at - timedelta(seconds=duration_s), when.at
    return when.at, when.at + timedelta(seconds=duration_s)


def ways_driven(call: Call, trip: dict[str, Any], costing: dict[str, Any], departure: datetime,
                clock: float) -> list[tuple[int, str, datetime]]:  # fmt: skip
    """(way id, name, when reached) of each edge the route drives, leg after leg."""
    driven: list[tuple[int, str, datetime]] = []
    start = 0.0
    for leg in trip["legs"]:
        # edge_walk alone failed on some of Heidelberg's routes (bench time_rules: "failed to find
        # exact route match"); walk_or_snap then matches the shape instead.
        request = {"encoded_polyline": leg["shape"], "shape_match": "walk_or_snap", **costing,
                   "filters": {"attributes": WAY_ATTRIBUTES, "action": "include"}}  # fmt: skip
        answer = call("trace_attributes", request)
        before = 0.0
        for edge in answer.get("edges") or []:
            names = edge.get("names") or []
            at = departure + timedelta(seconds=(start + before) * clock)
            driven.append((int(edge.get("way_id", 0)), names[0] if names else "", at))
            before = float((edge.get("end_node") or {}).get("elapsed_time", before))
        start += float(leg["summary"]["time"])
    return driven


def ways_matched(
    call: Call, places: list[tuple[LatLon, datetime]], costing: dict[str, Any]
) -> list[tuple[int, str, datetime]]:
    """(way id, name, the place's time) of each place of a trace matched to a road."""
    request = {"shape": [{"lat": p.lat, "lon": p.lon} for p, _ in places], "shape_match": "map_snap", **costing,
               "trace_options": {"search_radius": TRACE_RADIUS_M},
               "filters": {"attributes": MATCHED_ATTRIBUTES, "action": "include"}}  # fmt: skip
    try:
        answer = call("trace_attributes", request)
    except (NoRouteFound, PointNotRoutable, RuntimeError):
        return []
    edges = answer.get("edges") or []
    driven = []
    for (_, at), point in zip(places, answer.get("matched_points") or [], strict=False):
        index = point.get("edge_index")
        if point.get("type") == "unmatched" or index is None or not 0 <= int(index) < len(edges):
            continue
        edge = edges[int(index)]
        names = edge.get("names") or []
        driven.append((int(edge.get("way_id", 0)), names[0] if names else "", at))
    return driven


def rules_met(index: TimedIndex, query: RouteQuery, driven: list[tuple[int, str, datetime]]) -> list[TimeRuleMet]:
    zone = query.restrictions.time.at.tzinfo if query.restrictions.time else None
    met = index.met(query.vehicle, size_of(query.vehicle, query.restrictions.truck), driven)
    return [TimeRuleMet(m.way_id, m.road, m.rule, m.effect, m.at.astimezone(zone)) for m in met]


def closed_end(index: TimedIndex, query: RouteQuery, call: Call, costing: dict[str, Any]) -> NoRouteFound | None:
    """Where Valhalla found no route at a time: an end whose nearest roads are all timed ways
    closed to the vehicle then, named with its rules and when it next opens."""
    when = query.restrictions.time
    if when is None:
        return None
    size = size_of(query.vehicle, query.restrictions.truck)
    for point, parameter in ((query.origin, "from"), (query.destination, "to")):
        request = {"locations": [{"lat": point.lat, "lon": point.lon}], **costing, "verbose": True}
        found = call("locate", request)
        edges = (found[0] or {}).get("edges") or [] if found else []
        if not edges:
            continue
        nearest = min(float(e.get("distance", 0.0)) for e in edges)
        ways = {
            int((e.get("edge_info") or {}).get("way_id", 0))
            for e in edges
            if float(e.get("distance", 0.0)) <= nearest + 0.5
        }
        positions = [index.position(w) for w in ways]
        if not positions or any(i is None or not index.at(i, query.vehicle, when.at, size).closed for i in positions):
            continue
        i = positions[0]
        assert i is not None
        rules = ", ".join(r.tag for r in index.rules[i] if r.key in keys_of(query.vehicle))
        opens = index.next_opening(i, query.vehicle, when.at, size)
        zone = when.at.tzinfo
        then = (f"It next opens at {opens.astimezone(zone).isoformat(timespec='minutes')}" if opens is not None
                else "It does not open within a year")  # fmt: skip
        return NoRouteFound(
            f"the point lies on {index.name(i) or 'a road'} (way {int(index.ids[i])}), closed to {query.vehicle} by "
            f"its rules by time ({rules}) at {when.at.isoformat(timespec='minutes')}. {then}",
            parameter=parameter,
        )
    return None
