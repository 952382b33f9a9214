"""Typed results → the JSON bodies of the API: every field name and nesting of the route
service's answers is written here, and only here (no aiohttp here).

Values are written as the providers give them (rounded to 0.1 m and 0.1 s); geometries are
numpy arrays and pairs that `common.service.dump_json` writes without a Python object per
number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from common.osm_inputs import ATTRIBUTION
from route_service.dataset import Dataset
from route_service.instructions import StepText, instruction, voice_instruction
from route_service.model import (
    ENGLISH,
    EmergencySegment,
    IsochroneQuery,
    IsochroneResult,
    Leg,
    Maneuver,
    Matching,
    MatchQuery,
    MatchResult,
    MatrixQuery,
    MatrixResult,
    Route,
    RouteQuery,
    RouteResult,
    Snapped,
    Step,
    TimeRuleMet,
    WaypointsResult,
    Wording,
)
from route_service.providers.base import Capabilities


def snapped(point: Snapped) -> dict[str, Any]:
    return {"lat": point.location.lat, "lon": point.location.lon, "distance": point.distance_m, "name": point.name}


def geometry(coordinates: np.ndarray) -> dict[str, Any]:
    return {"type": "LineString", "coordinates": coordinates}


def emergency_segment(segment: EmergencySegment) -> dict[str, Any]:
    return {
        "startIndex": segment.start_index,
        "endIndex": segment.end_index,
        "distance": segment.distance_m,
        "reason": segment.reason,
    }


def maneuver(item: Maneuver) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": item.type,
        "location": item.location,
        "bearingBefore": item.bearing_before,
        "bearingAfter": item.bearing_after,
    }
    if item.modifier is not None:
        body["modifier"] = item.modifier
    if item.exit is not None:
        body["exit"] = item.exit
    return body


def step(item: Step, wording: Wording, before_m: float, leg_index: int, leg_count: int) -> dict[str, Any]:
    """A turn-by-turn step (OSRM, Valhalla), or a street without turn data (a step without
    a maneuver). `before_m`: the distance driven up to its maneuver (the step before's)."""
    if item.maneuver is None:
        return {"name": item.name, "distance": item.distance_m, "duration": item.duration_s,
                "geometryIndex": item.geometry_index}  # fmt: skip
    text = StepText.of(item.maneuver, item.name, item.mode, item.signs)
    sentence = instruction(text, wording.language, leg_index, leg_count)
    body = {
        "instruction": sentence,
        "voiceInstruction": voice_instruction(sentence, before_m, wording),
        "name": item.name,
        "distance": item.distance_m,
        "duration": item.duration_s,
        "mode": item.mode,
        "maneuver": maneuver(item.maneuver),
        "geometryIndex": item.geometry_index,
    }
    signs = item.signs
    for key, value in (("ref", signs.ref), ("destinations", signs.destinations), ("exits", signs.exits)):
        if value:
            body[key] = value
    return body


def leg(item: Leg, wording: Wording = ENGLISH, index: int = 0, count: int = 1) -> dict[str, Any]:
    """`index` of `count` legs: the arrival at a leg's end names which destination it is."""
    before = [0.0, *(s.distance_m for s in item.steps)][: len(item.steps)]
    return {
        "distance": item.distance_m,
        "duration": item.duration_s,
        "summary": item.summary,
        "steps": [step(s, wording, b, index, count) for s, b in zip(item.steps, before, strict=True)],
    }


def route(item: Route, wording: Wording = ENGLISH, with_geometry: bool = True) -> dict[str, Any]:
    count = len(item.legs)
    return {
        "distance": item.distance_m,
        "duration": item.duration_s,
        "geometry": geometry(item.geometry) if with_geometry else None,
        "legs": [leg(each, wording, index, count) for index, each in enumerate(item.legs)],
        "emergencySegments": [emergency_segment(s) for s in item.emergency_segments],
    }


def route_body(result: RouteResult, query: RouteQuery, provider: str, dataset: str) -> dict[str, Any]:
    """The best route first, then the alternatives."""
    return {
        "routes": [route(r, query.wording, query.geometry) for r in result.routes],
        "language": query.wording.language,
        "units": query.wording.units,
        "provider": provider,
        "vehicle": query.vehicle,
        "type": query.route_type,
        "snappedFrom": snapped(result.origin),
        "snappedTo": snapped(result.destination),
        "alternativesRequested": query.alternatives,
        "alternativesFound": max(0, len(result.routes) - 1),
        "emergencyRoutingRadius": query.emergency_radius_m,
        "notes": [*result.notes, *moved_notes([("from", result.origin), ("to", result.destination)], query.vehicle)],
        **timing(result, query),
        "dataset": dataset,
        "attribution": ATTRIBUTION,
    }


def timing(result: RouteResult, query: RouteQuery) -> dict[str, Any]:
    """With departureTime or arrivalTime (issue 33): when the route leaves and arrives, and the
    rules by time it met (nothing without a time: the answer holds at any time). A provider
    that ignores the time (no rule by time near, ProviderRegistry.moot_time) met none: its
    route leaves at the departure, or its duration before the arrival."""
    departure, arrival, rules = result.departure, result.arrival, result.time_rules
    when = query.restrictions.time
    if (departure is None or arrival is None) and when is not None and result.routes:
        duration = timedelta(seconds=result.routes[0].duration_s)
        departure = when.at - duration if when.arrival else when.at
        arrival, rules = departure + duration, []
    if departure is None or arrival is None:
        return {}
    return {
        "departureTime": departure.isoformat(timespec="seconds"),
        "arrivalTime": arrival.isoformat(timespec="seconds"),
        "timeRules": [time_rule(met) for met in rules],
    }


def time_rule(met: TimeRuleMet) -> dict[str, Any]:
    return {"way": met.way_id, "road": met.road, "rule": met.rule, "effect": met.effect,
            "at": met.at.isoformat(timespec="seconds")}  # fmt: skip


# A point farther than this from the road it was snapped to is told so in the answer's notes:
# 100 m is more than a building's depth (a doorstep to its street), less than a block.
MOVED_NOTE_M = 100.0


def moved_notes(points: list[tuple[str, Snapped]], vehicle: str) -> list[str]:
    """A note per point moved more than MOVED_NOTE_M to reach a road the vehicle may use."""
    return [
        f"{name}: the point lies {point.distance_m:.0f} m from the nearest road usable by {vehicle}"
        f"{f' ({point.name})' if point.name else ''}, where the route {'starts' if name == 'from' else 'ends'}"
        for name, point in points
        if point.distance_m > MOVED_NOTE_M
    ]


def matrix_body(result: MatrixResult, provider: str, dataset: str, departure: datetime | None = None) -> dict[str, Any]:
    """Row i, column j: from sources[i] to destinations[j]; null where no route exists. A
    table not asked for (`annotations`) is left out. OSRM's tables are float64 arrays, which
    `common.service.dump_json` writes without a Python float per cell (NaN as null)."""
    tables = {"duration": result.durations_s, "distance": result.distances_m}
    return {
        **{name + "s": tables[name] for name in result.annotations},
        "sources": [snapped(s) for s in result.snapped_sources],
        "destinations": [snapped(d) for d in result.snapped_destinations],
        "provider": provider,
        "dataset": dataset,
        **matrix_time(result, departure),
    }


def matrix_time(result: MatrixResult, departure: datetime | None) -> dict[str, Any]:
    """With departureTime (issue 33): the time, and each point on a road with rules by time,
    with the windows in which it can be reached (none where the provider ignored the time: no
    rule by time near)."""
    departure = result.departure or departure
    if departure is None:
        return {}
    return {
        "departureTime": departure.isoformat(timespec="seconds"),
        "timedPoints": [
            {
                "point": point.parameter,
                "way": point.way_id,
                "road": point.road,
                "rules": point.rules,
                "openAtDeparture": point.open_at_departure,
                "windows": [
                    {"from": start.isoformat(timespec="seconds"), "until": end.isoformat(timespec="seconds")}
                    for start, end in point.windows
                ],
            }
            for point in result.timed_points
        ],
    }


def public_matrix_body(result: MatrixResult, query: MatrixQuery, provider: str, dataset: str) -> dict[str, Any]:
    """POST /v1/matrix: the internal body, plus what was asked (vehicle, type, annotations)
    and the attribution the public answers carry."""
    return {
        **matrix_body(result, provider, dataset, query.restrictions.time.at if query.restrictions.time else None),
        "vehicle": query.vehicle,
        "type": query.route_type,
        "annotations": list(result.annotations),
        "attribution": ATTRIBUTION,
    }


def waypoints_body(result: WaypointsResult, provider: str, dataset: str, timed: bool = False) -> dict[str, Any]:
    """POST /internal/route: one route through every waypoint, one leg per consecutive pair."""
    item = result.route
    return {
        "distance": item.distance_m,
        "duration": item.duration_s,
        "geometry": geometry(item.geometry),
        "legs": [waypoints_leg(each, timed) for each in item.legs],
        "waypoints": [snapped(s) for s in result.snapped],
        "provider": provider,
        "dataset": dataset,
    }


def waypoints_leg(leg: Leg, timed: bool) -> dict[str, Any]:
    """A leg; `timed`: the tour was asked at a time, so its rules are listed (none where the
    provider ignored the time: no rule by time near)."""
    body: dict[str, Any] = {"distance": leg.distance_m, "duration": leg.duration_s}
    if leg.time_rules is not None or timed:
        body["timeRules"] = [time_rule(rule) for rule in leg.time_rules or []]
    return body


def provider_item(provider: Capabilities, default: str) -> dict[str, Any]:
    info = provider.info
    return {
        "name": info.name,
        "description": info.description,
        "default": info.name == default,
        "vehicles": list(info.vehicles),
        "types": list(info.route_types),
        "capabilities": {
            "emergencyRouting": info.emergency_routing,
            "alternatives": info.alternatives,
            "matrix": provider.matrix is not None,
            "match": provider.match is not None,
            "isochrone": provider.isochrone is not None,
            "avoidAreas": info.restrictions,
            "truckDimensions": info.restrictions,
            "timeRules": info.time_rules,
        },
    }


def providers_body(providers: Iterable[Capabilities], default: str, dataset: Dataset | None = None) -> dict[str, Any]:
    """GET /internal/providers (the gateway's `routing` part of /v1/providers), with what the
    loaded map covers."""
    body: dict[str, Any] = {"providers": [provider_item(p, default) for p in providers], "default": default}
    if dataset is not None:
        body["coverage"] = coverage_body(dataset)
    return body


def coverage_body(dataset: Dataset) -> dict[str, Any]:
    manifest = dataset.manifest
    bounds = dataset.bounds
    return {
        "dataset": dataset.hash,
        "bounds": bounds.as_list() if bounds is not None else None,
        "outline": dataset.drawn_outline,
        # The separate areas the roads cover, largest first: [min_lon, min_lat, max_lon, max_lat].
        "areas": [area.as_list() for area in dataset.areas],
        "importedAt": manifest.get("created"),
        "sources": [str(i.get("name")) for i in manifest.get("inputs", []) if isinstance(i, dict)],
        "attribution": manifest.get("attribution"),
        "vehicles": list(dataset.vehicles),
    }


def match_body(result: MatchResult, query: MatchQuery, provider: str, dataset: str,
               reasons: Mapping[int, str] | None = None,
               time_rules: list[TimeRuleMet] | None = None) -> dict[str, Any]:  # fmt: skip
    """POST /v1/match: the roads driven (one line per matched stretch), every input point's
    place on them (a point left out by thinning shares the kept point's before it; an unmatched
    one says why, from `reasons`), and the totals over the matched stretches."""
    reasons = reasons or {}
    matchings = result.matchings
    thinned = result.thinned or [False] * len(result.snapped)
    weights = [m.last_index - m.first_index + 1 for m in matchings]
    confidence = sum(m.confidence * w for m, w in zip(matchings, weights, strict=True)) / max(1, sum(weights))
    lines = [m.geometry for m in matchings if m.geometry is not None]
    return {
        "geometry": {"type": "MultiLineString", "coordinates": lines},
        "points": [
            {**match_point(s, index_of(matchings, i), reasons.get(i)), "thinned": thinned[i]}
            for i, s in enumerate(result.snapped)
        ],
        "matchedPoints": sum(result.matched),
        "thinnedPoints": sum(thinned),
        "confidence": round(confidence, 3),
        "distance": round(sum(m.distance_m for m in matchings), 1),
        "duration": round(sum(m.duration_s for m in matchings), 1),
        "matchings": [matching_item(m) for m in matchings],
        **({} if time_rules is None else {"timeRules": [time_rule(met) for met in time_rules]}),
        "vehicle": query.vehicle,
        "type": query.route_type,
        "provider": provider,
        "dataset": dataset,
        "attribution": ATTRIBUTION,
    }


def matching_item(m: Matching) -> dict[str, Any]:
    return {
        "firstPoint": m.first_index,
        "lastPoint": m.last_index,
        "distance": round(m.distance_m, 1),
        "duration": round(m.duration_s, 1),
        "confidence": round(m.confidence, 3),
    }


def match_point(snapped_point: Snapped | None, matching: int | None, reason: str | None = None) -> dict[str, Any]:
    if snapped_point is None:
        point = {"matched": False, "location": None, "road": None, "distance": None, "matching": None}
        return {**point, "reason": reason} if reason else point
    return {
        "matched": True,
        "location": {"lat": snapped_point.location.lat, "lon": snapped_point.location.lon},
        "road": snapped_point.name,
        "distance": snapped_point.distance_m,
        "matching": matching,
    }


def index_of(matchings: list[Matching], point: int) -> int | None:
    return next((k for k, m in enumerate(matchings) if m.first_index <= point <= m.last_index), None)


def isochrone_body(result: IsochroneResult, query: IsochroneQuery, provider: str, dataset: str) -> dict[str, Any]:
    """GET /v1/isochrone: a GeoJSON FeatureCollection, one feature per limit, ascending; each
    larger area contains the smaller ones."""
    unit = "s" if query.metric == "time" else "m"
    ends = result.map_end_reached or [False] * len(result.areas)
    edges: list[bool | None] = list(result.map_edge_reached) or [None] * len(result.areas)
    features = [
        {"type": "Feature", "geometry": area, "properties": isochrone_properties(query, value, unit, end, edge)}
        for value, area, end, edge in zip(query.limits, result.areas, ends, edges, strict=True)
    ]
    return {
        "type": "FeatureCollection",
        "features": features,
        "point": snapped(result.origin),
        "metric": query.metric,
        **({"departureTime": query.departure.isoformat(timespec="seconds")} if query.departure else {}),
        "vehicle": query.vehicle,
        "routeType": query.route_type,
        "provider": provider,
        "dataset": dataset,
        "attribution": ATTRIBUTION,
    }


def isochrone_properties(query: IsochroneQuery, limit: float, unit: str, map_end: bool,
                         map_edge: bool | None = None) -> dict[str, Any]:  # fmt: skip
    """A feature's limit and what cut its area: `mapEndReached` (no road left to reach) and,
    where the provider knows it, `mapEdgeReached` (a road the loaded map cuts was reached)."""
    properties: dict[str, Any] = {query.metric: plain(limit), "unit": unit, "mapEndReached": map_end}
    if map_edge is not None:
        properties["mapEdgeReached"] = map_edge
    if map_end:
        properties["note"] = "every road reachable from the point lies within this limit: the loaded map ends before it"
    elif map_edge:
        properties["note"] = "the area reaches the edge of the loaded map, where roads go on beyond it: it is cut there"
    return properties


def plain(value: float) -> int | float:
    """A limit as the caller wrote it: 300, not 300.0."""
    return int(value) if value.is_integer() else value
