"""Valhalla's isochrones with the meaning of ours (issue 56, step 7): an area holds the roads
OSRM's routes reach in time from the point, lies near the roads reached, and never past the
map's data; it says when it reaches a road the loaded map cuts.

- Started where OSRM's routes start (`RouteStarts`), at OSRM's pace (`OSRM_PACE`).
- Cut to 300 m of the roads it reached (`within_reach`), so never farther past the map's data.
- The map's edge (`MapData.edge_reached`): the points where the loaded map cuts a through road;
  its end (`Reached.ended_within`): the search ran out of roads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely
import shapely.geometry
from scipy.ndimage import binary_dilation

from common.errors import ApiError
from common.geo import LatLon, haversine_m
from route_service.model import RouteQuery
from route_service.providers.base import RoutePlugin

# Where OSRM answers a vehicle's routes, an isochrone of t seconds asks Valhalla for the area of
# OSRM_PACE x t. OSRM's car and truck profiles drive 80 % of a tagged maxspeed (car.lua's
# `speed_reduction`), Valhalla the full speed: on the same roads (distances alike within 0.1 %)
# Valhalla's car durations were 0.76-0.86 of OSRM's (medians: Munich 0.76, Heidelberg 0.79, all
# as one 0.80, Helsinki and Andorra 0.83, Monaco 0.83-0.86; 100-200 pairs of main-network points
# per map, 2026-11-26). Uncalibrated, its 10-minute areas held roads our routes reach in 12-13
# minutes (precision 79-90 % where the graph's was 96-97 %). 0.875, the top of that range
# rounded up, held 96.8-96.9 % in Andorra, before and after areas were cut to 300 m of the
# roads reached (its mountain roads' times vary most; goal 97 %): 0.9 holds 97.7-100 % on every map, precision
# 94.9-100 % (`python -m bench isochrone`'s centres, 2026-12-02; at 0.80 Monaco and Andorra kept
# 91-92 %).
OSRM_PACE = 0.9
# An area holds no point farther than this from a road reached within its limit (issue 56).
NEAR_ROAD_M = 300.0
# The grid that cuts it so (within_reach): cells this wide at least, at most MAX_REACH_ROWS rows.
REACH_CELL_M = 40.0
MAX_REACH_ROWS = 1500
METRES_PER_DEGREE = 111_195.0
# An area ends with the map's roads when under this share of the reached road lies beyond it.
END_SHARE = 0.01
# OSRM's start is taken within this of the point: from a piece it deems small OSRM starts on
# the nearest large one, which on all five maps as one lay 1.8 km away (its area then missed
# the point); the starts that mattered lay 9.8 and 35 m away.
START_SHIFT_M = 100.0
# How many main networks' points a start tries (the nearest first) before the point itself.
TRIES = 3
# A cut of the map lies on an area when it is this near it (degrees, ~20 m): a road's last node
# lies on the area's edge, where Valhalla's grid ends it.
ON_AREA_DEG = 0.0002


def contours(metric: str, limits: Sequence[float], pace: float) -> list[dict[str, float]]:
    """Valhalla's contours of our limits: minutes of driving at `pace`, or kilometres."""
    if metric == "time":
        return [{"time": pace * limit / 60.0} for limit in limits]
    return [{"distance": limit / 1000.0} for limit in limits]


def valhalla_limit(contour: dict[str, float]) -> float:
    """A contour's limit as the expansion's costs count it: seconds, or metres."""
    return contour["time"] * 60.0 if "time" in contour else contour["distance"] * 1000.0


@dataclass
class RouteStarts:
    """Where OSRM's routes from a point start, for Valhalla's areas to start there too. OSRM
    starts a route on its nearest road and, where that one leads nowhere (a piece it deems
    small), on the next; Valhalla's car may not start on some roads OSRM's does, and started
    from its own nearest road it lost what OSRM reaches: in Heidelberg it started on a track
    17.8 m away where OSRM starts on a service road 35 m away (OSRM's nearest road, a path 0.3 m
    away, is no car's), and on a motorway's carriageway where OSRM takes the ramp 9.8 m beside
    it (recall 92.6 %, `python -m bench isochrone`). Valhalla takes one location an isochrone,
    and its `radius` (every edge within it an origin) did not change its areas (measured, 40 m)."""

    route: RoutePlugin
    towards: Callable[[str], Sequence[LatLon]]  # per vehicle: points of the map's main networks

    def __call__(self, point: LatLon, vehicle: str) -> LatLon:
        """The start of OSRM's route from `point` to the nearest main network's point it reaches."""
        for there in sorted(self.towards(vehicle), key=lambda p: haversine_m(point, p))[:TRIES]:
            try:
                start = self.route(RouteQuery(point, there, vehicle=vehicle, steps=False)).origin.location
            except ApiError:
                continue
            return start if haversine_m(point, start) <= START_SHIFT_M else point
        return point


def nested(areas: list[shapely.Geometry]) -> list[shapely.Geometry]:
    """Each area joined with the smaller ones: Valhalla smooths each contour on its own, so a
    larger one may cut a few metres off a smaller one's edge; a larger limit reaches all a
    smaller one does."""
    joined: list[shapely.Geometry] = []
    for area in areas:
        joined.append(area if not joined else shapely.union(area, joined[-1]))
    return joined


@dataclass
class MapData:
    """Where the loaded map cuts a through road (`cuts`: lon, lat rows, read on first use; None:
    not known, the flag is left out). An area is not clipped to the map's roads' outline (the
    dataset's `outline`): its cells of road nodes (0.005°) miss the stretches of long roads
    between nodes, and clipped to it Andorra's areas held 87.5 % of the roads OSRM reaches in
    15 minutes instead of 97.6 % (10 centres); NEAR_ROAD_M keeps an area within 300 m of the
    last road reached, past the map's edge or over the sea."""

    cuts: Callable[[], np.ndarray] | None = None
    _cut_points: np.ndarray | None = field(default=None, init=False, repr=False)

    def edge_reached(self, areas: Sequence[shapely.Geometry]) -> list[bool]:
        """Per area, whether it reaches a point where the loaded map cuts a road (empty: not known)."""
        if self.cuts is None:
            return []
        if self._cut_points is None:
            self._cut_points = np.asarray(self.cuts(), dtype=np.float64).reshape(-1, 2)
        lon, lat = self._cut_points[:, 0], self._cut_points[:, 1]
        if not len(lon):
            return [False] * len(areas)
        points = shapely.points(lon, lat)
        return [bool(shapely.dwithin(area, points, ON_AREA_DEG).any()) for area in areas]


def as_geojson(areas: Sequence[shapely.Geometry]) -> list[dict[str, Any]]:
    return [shapely.geometry.mapping(area) for area in areas]


@dataclass(frozen=True)
class Reached:
    """The roads an area's search reached: each piece's points (lon, lat) and its cost
    (Valhalla's seconds or metres at the piece's end), from Valhalla's `expansion`."""

    lon: np.ndarray
    lat: np.ndarray
    cost: np.ndarray

    @classmethod
    def of_expansion(cls, answer: dict[str, Any], metric: str) -> Reached:
        """The pieces of Valhalla's expansion answer (GeoJSON LineStrings, each with its cost at
        its end and the piece it was reached from), their points every REACH_CELL_M at most (so
        a long straight piece marks every cell it crosses), each costed along its piece from the
        cost at its start (its predecessor's at its end) to the cost at its end: a mountain
        road's piece of kilometres reached only in part holds the part reached."""
        key = "duration" if metric == "time" else "distance"
        lines = [f for f in answer.get("features", []) if len(f["geometry"]["coordinates"]) > 1]
        if not lines:
            return cls(np.empty(0), np.empty(0), np.empty(0))
        coords = [f["geometry"]["coordinates"] for f in lines]
        which = np.repeat(np.arange(len(lines)), [len(c) for c in coords])
        xy = np.concatenate(coords).astype(np.float64)
        end = np.array([float(f["properties"][key]) for f in lines])
        at_end = {f["properties"]["edge_id"]: cost for f, cost in zip(lines, end, strict=True)}
        begin = np.minimum(end, [at_end.get(f["properties"].get("pred_edge_id"), 0.0) for f in lines])
        within = which[1:] == which[:-1]  # a segment: two points of one piece
        a, b, line = xy[:-1][within], xy[1:][within], which[:-1][within]
        size = np.hypot(*(b - a).T)  # degrees; a degree of longitude is shorter: finer there
        before = np.cumsum(size) - size
        before -= before[np.searchsorted(line, np.arange(len(lines)))][line]  # along its piece
        length = np.maximum(np.bincount(line, weights=size, minlength=len(lines)), 1e-12)
        # each segment's points every REACH_CELL_M at most, and its end
        count = np.maximum(1, np.ceil(size * METRES_PER_DEGREE / REACH_CELL_M)).astype(np.int64)
        seg = np.repeat(np.arange(len(size)), count)
        step = (np.arange(len(seg)) - np.repeat(np.cumsum(count) - count, count)) / count[seg]
        step, seg = np.concatenate([step, np.ones(len(size))]), np.concatenate([seg, np.arange(len(size))])
        where = a[seg] + step[:, None] * (b - a)[seg]
        share = (before[seg] + step * size[seg]) / length[line[seg]]
        piece = line[seg]
        return cls(where[:, 0], where[:, 1], begin[piece] + share * (end - begin)[piece])

    def ended_within(self, limits: Sequence[float]) -> list[bool]:
        """Per limit, whether the roads reachable from the point end within it: the search ran
        out of roads but for a few beyond the limit (under END_SHARE of the road length within
        it). Not none: it reports roads past its largest limit, and on Monaco, which the hour
        exhausts, found 6 of 3 365 pieces at 53-114 minutes (slow service ways); a 2-minute area
        there has 10 % beyond it."""
        return [bool((self.cost > limit).sum() < END_SHARE * (self.cost <= limit).sum()) for limit in limits]


def within_reach(area: shapely.Geometry, reached: Reached, limit: float) -> shapely.Geometry:
    """The area without what lies farther than NEAR_ROAD_M from every road reached within
    `limit`: Valhalla's contour fills blocks its grid spans (measured up to 705 m from a reached
    road in Heidelberg, 1 % of a 15-minute area's points past 300 m). On a grid of cells about
    REACH_CELL_M wide: the cells of reached points, widened so every point of a widened cell lies
    within NEAR_ROAD_M of one; the cells left over that the area covers are cut from it."""
    keep = reached.cost <= limit
    if area.is_empty or not keep.any():
        return area
    min_lon, min_lat, max_lon, max_lat = area.bounds
    scale = math.cos(math.radians((min_lat + max_lat) / 2))
    cell_lat = max(REACH_CELL_M, (max_lat - min_lat) * METRES_PER_DEGREE / MAX_REACH_ROWS) / METRES_PER_DEGREE
    cell_lon = cell_lat / scale
    rows, cols = int((max_lat - min_lat) / cell_lat) + 2, int((max_lon - min_lon) / cell_lon) + 2
    row = np.floor((reached.lat[keep] - min_lat) / cell_lat).astype(np.int64)
    col = np.floor((reached.lon[keep] - min_lon) / cell_lon).astype(np.int64)
    inside = (row >= 0) & (row < rows) & (col >= 0) & (col < cols)
    marked = np.zeros((rows, cols), dtype=bool)
    marked[row[inside], col[inside]] = True
    # a point of a cell within r cells (centre to centre) of a marked one lies within
    # (r + sqrt 2) cells of a reached point; so r = NEAR_ROAD_M / cell - sqrt 2
    radius = NEAR_ROAD_M / (cell_lat * METRES_PER_DEGREE) - math.sqrt(2)
    far = ~binary_dilation(marked, structure=disk(radius))
    far_rows, far_cols = np.nonzero(far)
    centre_lat, centre_lon = min_lat + (far_rows + 0.5) * cell_lat, min_lon + (far_cols + 0.5) * cell_lon
    held = np.zeros_like(far)
    held[far_rows, far_cols] = shapely.contains_xy(area, centre_lon, centre_lat)
    cut_rows, cut_cols = np.nonzero(far & binary_dilation(held, structure=np.ones((3, 3), dtype=bool)))
    if not len(cut_rows):
        return area
    west, south = min_lon + cut_cols * cell_lon, min_lat + cut_rows * cell_lat
    cells = shapely.box(west, south, west + cell_lon, south + cell_lat)
    return shapely.difference(area, shapely.coverage_union_all(cells))


def disk(radius: float) -> np.ndarray:
    """The cells within `radius` cells of the middle one (at least that one)."""
    r = max(0, int(radius))
    y, x = np.ogrid[-r : r + 1, -r : r + 1]
    return np.asarray(x * x + y * y <= max(radius, 0.0) ** 2)
