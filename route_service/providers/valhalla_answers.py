"""Valhalla's answers as our results (no aiohttp, no engine calls): a trip as a Route with its
legs and steps (its maneuvers as OSRM's maneuver types, `MANEUVERS`, so the formatter writes one
style of sentence), a trace_attributes answer as a MatchResult, and where a route's ends lie.
Durations are multiplied by the provider's `clock` (providers.valhalla.OSRM_DURATION_RATIO)."""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely

from common.geo import LatLon, haversine_m, haversine_m_arrays
from route_service import polyline
from route_service.model import NO_SIGNS, Leg, Maneuver, Matching, MatchResult, Route, Signs, Snapped, Step

# Valhalla's maneuver types (valhalla/odin DirectionsLeg_Maneuver_Type) as OSRM's type and modifier.
MANEUVERS: dict[int, tuple[str, str | None]] = {
    1: ("depart", None), 2: ("depart", "right"), 3: ("depart", "left"),
    4: ("arrive", None), 5: ("arrive", "right"), 6: ("arrive", "left"),
    7: ("new name", "straight"), 8: ("continue", "straight"),
    9: ("turn", "slight right"), 10: ("turn", "right"), 11: ("turn", "sharp right"),
    12: ("turn", "uturn"), 13: ("turn", "uturn"),
    14: ("turn", "sharp left"), 15: ("turn", "left"), 16: ("turn", "slight left"),
    17: ("on ramp", "straight"), 18: ("on ramp", "right"), 19: ("on ramp", "left"),
    20: ("off ramp", "right"), 21: ("off ramp", "left"),
    22: ("fork", "straight"), 23: ("fork", "right"), 24: ("fork", "left"),
    25: ("merge", "straight"), 37: ("merge", "right"), 38: ("merge", "left"),
    26: ("roundabout", None), 27: ("exit roundabout", None),
}  # fmt: skip


def to_route(trip: dict[str, Any], with_steps: bool, clock: float = 1.0) -> Route:
    """Legs' shapes joined (each leg after the first starts where the one before it ended), its
    maneuvers' shape indices moved to the joined geometry; every duration times `clock`."""
    shapes = [polyline.decode(leg["shape"], 6) for leg in trip["legs"]]
    geometry = np.ascontiguousarray(np.round(np.concatenate([shapes[0], *(s[1:] for s in shapes[1:])]), 7))
    starts = np.concatenate(([0], np.cumsum([len(s) - 1 for s in shapes[:-1]]))).astype(int)
    summary = trip["summary"]
    return Route(
        distance_m=round(summary["length"] * 1000.0, 1),
        duration_s=round(summary["time"] * clock, 1),
        geometry=geometry,
        legs=[
            to_leg(leg, int(start), with_steps, geometry, clock)
            for leg, start in zip(trip["legs"], starts, strict=True)
        ],
    )


def to_leg(leg: dict[str, Any], offset: int, with_steps: bool, geometry: np.ndarray, clock: float) -> Leg:
    maneuvers = leg.get("maneuvers", []) if with_steps else []
    steps = [to_step(m, offset, geometry, clock) for m in maneuvers]
    names = [name for m in maneuvers for name in m.get("street_names", [])]
    summary = leg["summary"]
    return Leg(
        distance_m=round(summary["length"] * 1000.0, 1),
        duration_s=round(summary["time"] * clock, 1),
        summary=", ".join(dict.fromkeys(names))[:200],
        steps=steps,
    )


def to_step(maneuver: dict[str, Any], offset: int, geometry: np.ndarray, clock: float) -> Step:
    kind, modifier = MANEUVERS.get(int(maneuver.get("type", 0)), ("continue", "straight"))
    first, last = offset + int(maneuver["begin_shape_index"]), offset + int(maneuver["end_shape_index"])
    lon, lat = geometry[min(first, len(geometry) - 1)]
    names = maneuver.get("street_names") or maneuver.get("begin_street_names") or []
    return Step(
        name=names[0] if names else "",
        distance_m=round(float(maneuver.get("length", 0.0)) * 1000.0, 1),
        duration_s=round(float(maneuver.get("time", 0.0)) * clock, 1),
        geometry_index=(first, last),
        mode=str(maneuver.get("travel_mode", "")),
        maneuver=Maneuver(
            type=kind,
            location=(round(float(lon), 7), round(float(lat), 7)),
            bearing_before=int(maneuver.get("bearing_before", 0)),
            bearing_after=int(maneuver.get("bearing_after", 0)),
            modifier=modifier,
            exit=maneuver.get("roundabout_exit_count") if kind == "roundabout" else None,
        ),
        signs=signs_of(maneuver.get("sign")),
    )


def signs_of(sign: dict[str, Any] | None) -> Signs:
    """Valhalla's sign elements as OSRM writes them: exits "4A;4B", destinations "B37: Heidelberg"."""
    if not sign:
        return NO_SIGNS

    def texts(key: str) -> list[str]:
        return [str(element.get("text", "")) for element in sign.get(key, []) if element.get("text")]

    branches, towards = ",".join(texts("exit_branch_elements")), ",".join(texts("exit_toward_elements"))
    destinations = f"{branches}: {towards}" if branches and towards else branches or towards
    return Signs(exits=";".join(texts("exit_number_elements")), destinations=destinations)


def to_match(answer: dict[str, Any], count: int, detail: bool, clock: float = 1.0) -> MatchResult:
    """Matchings over runs of matched points (an unmatched point or a break in the path ends one);
    each one's geometry the stretch of the matched path between its first and last point, its
    duration times `clock`."""
    points = answer.get("matched_points") or []
    matched = [p.get("type") != "unmatched" for p in points] + [False] * (count - len(points))
    snapped: list[Snapped | None] = [None] * count if detail else []
    if detail:
        for i, p in enumerate(points):
            if matched[i]:
                where = LatLon(float(p["lat"]), float(p["lon"]))
                snapped[i] = Snapped(where, round(float(p.get("distance_from_trace_point", 0.0)), 1))
    path = shapely.LineString(polyline.decode(answer["shape"], 6)) if answer.get("shape") else None
    edges = answer.get("edges") or []
    confidence = float(answer.get("confidence_score", 1.0))
    matchings, along = [], 0.0
    for first, last in runs(points, matched):
        piece, along = stretch(path, points[first], points[last], along)
        metres = line_metres(piece)
        matchings.append(
            Matching(first, last, round(metres, 1), round(clock * seconds_over(edges, points, first, last, metres), 1),
                     confidence, piece if detail else None)
        )  # fmt: skip
    return MatchResult(matchings, matched, snapped)


def runs(points: list[dict[str, Any]], matched: list[bool]) -> list[tuple[int, int]]:
    """(first, last) of each run of matched points with no break in the path between."""
    found: list[tuple[int, int]] = []
    start: int | None = None
    for i, point in enumerate(points):
        if matched[i] and start is None:
            start = i
        if start is not None and (not matched[i] or point.get("end_route_discontinuity")):
            end = i if matched[i] else i - 1
            found.append((start, end))
            start = None
    if start is not None:
        found.append((start, len(points) - 1))
    return [(a, b) for a, b in found if b > a]


def stretch(path: shapely.LineString | None, first: dict[str, Any], last: dict[str, Any], after: float
            ) -> tuple[np.ndarray, float]:  # fmt: skip
    """The path between two matched points (degrees along it, searched from `after` on, so a
    path that passes a place twice is cut in order), and where it ended."""
    if path is None or path.length == 0:
        return np.array([[first["lon"], first["lat"]], [last["lon"], last["lat"]]], dtype=np.float64), after
    rest = shapely.ops.substring(path, after, path.length)
    start = after + rest.project(shapely.Point(first["lon"], first["lat"]))
    end = max(start, after + rest.project(shapely.Point(last["lon"], last["lat"])))
    piece = shapely.ops.substring(path, start, end)
    coordinates = np.asarray(piece.coords, dtype=np.float64).reshape(-1, 2)
    if len(coordinates) < 2:
        coordinates = np.array([[first["lon"], first["lat"]], [last["lon"], last["lat"]]], dtype=np.float64)
    return np.ascontiguousarray(np.round(coordinates, 7)), end


def line_metres(coordinates: np.ndarray) -> float:
    if len(coordinates) < 2:
        return 0.0
    lon, lat = coordinates[:, 0], coordinates[:, 1]
    return float(haversine_m_arrays(lat[:-1], lon[:-1], lat[1:], lon[1:]).sum())


def seconds_over(edges: list[dict[str, Any]], points: list[dict[str, Any]], first: int, last: int, metres: float) -> float:  # fmt: skip
    """The stretch's metres at the mean speed of the edges it uses (km/h, weighted by length)."""
    lo, hi = int(points[first].get("edge_index", 0)), int(points[last].get("edge_index", 0))
    used = [e for e in edges[lo : hi + 1] if e.get("speed")]
    length = sum(float(e.get("length", 0.0)) for e in used)
    hours = sum(float(e.get("length", 0.0)) / float(e["speed"]) for e in used)
    kmh = length / hours if hours > 0 else 30.0
    return metres / 1000.0 / kmh * 3600.0


def snapped(point: LatLon, where: np.ndarray, trip: dict[str, Any], index: int) -> Snapped:
    """Where the route meets an end (`index` 0: its start, -1: its end), named after the street
    there (the arrival maneuver has no street: the one before it)."""
    at = LatLon(float(where[1]), float(where[0]))
    maneuvers = trip["legs"][index].get("maneuvers") or []
    if not maneuvers:
        return Snapped(at, round(haversine_m(point, at), 1))
    near = maneuvers[0] if index == 0 else maneuvers[max(0, len(maneuvers) - 2)]
    names = (near or {}).get("street_names") or []
    return Snapped(at, round(haversine_m(point, at), 1), names[0] if names else "")
