"""A found path as the provider receives it: the stretches driven, their geometry, and the
runs that needed an emergency relaxation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from route_service.graph_engine.prepare import RoadGraph
from route_service.graph_format import MODE_EMERGENCY_ACCESS, MODE_EMERGENCY_ONEWAY, REASONS


@dataclass(frozen=True)
class Stretch:
    """Part of one piece driven from `start_m` to `end_m` (decreasing when against the way)."""

    piece: int
    start_m: float
    end_m: float
    duration_s: float
    mode: int
    name: str

    @property
    def distance_m(self) -> float:
        return abs(self.end_m - self.start_m)


@dataclass
class PathResult:
    distance_m: float
    duration_s: float
    geometry: list[tuple[float, float]]  # (lon, lat)
    stretches: list[Stretch]
    spans: list[tuple[int, int]]  # geometry index range of each stretch
    emergency: list[tuple[int, int, float, str]] = field(default_factory=list)  # start, end, metres, reason


def assemble_path(road: RoadGraph, stretches: list[Stretch]) -> PathResult:
    geometry: list[tuple[float, float]] = []
    spans: list[tuple[int, int]] = []
    for stretch in stretches:
        points = piece_points(road, stretch)
        if geometry and points and geometry[-1] == points[0]:
            points = points[1:]
        start = max(len(geometry) - 1, 0)
        geometry.extend(points)
        spans.append((start, len(geometry) - 1))
    if len(geometry) == 1:
        geometry.append(geometry[0])  # a LineString needs two positions
        spans = [(0, 1)]
    result = PathResult(
        distance_m=sum(s.distance_m for s in stretches),
        duration_s=sum(s.duration_s for s in stretches),
        geometry=geometry,
        stretches=stretches,
        spans=spans,
    )
    result.emergency = emergency_runs(stretches, spans)
    return result


def piece_points(road: RoadGraph, stretch: Stretch) -> list[tuple[float, float]]:
    """(lon, lat) points of a stretch, interpolated at both ends."""
    lo, hi = int(road.a["geom_ptr"][stretch.piece]), int(road.a["geom_ptr"][stretch.piece + 1])
    cum, lat, lon = road.a["geom_cum"][lo:hi], road.a["geom_lat"][lo:hi], road.a["geom_lon"][lo:hi]
    a, b = sorted((stretch.start_m, stretch.end_m))
    if a <= cum[0] and b >= cum[-1]:
        # the whole piece, as most of a route's stretches are: its points as stored (the
        # interpolation below took a third of a 100-leg tour's routing, cProfile 2026-11-27)
        points = list(zip(lon.tolist(), lat.tolist(), strict=True))
        return points[::-1] if stretch.end_m < stretch.start_m else points
    inner = np.flatnonzero((cum > a) & (cum < b))
    at = np.concatenate([[a], cum[inner], [b]])
    points = list(zip(np.interp(at, cum, lon).tolist(), np.interp(at, cum, lat).tolist(), strict=True))
    return points[::-1] if stretch.end_m < stretch.start_m else points


def emergency_runs(stretches: list[Stretch], spans: list[tuple[int, int]]) -> list[tuple[int, int, float, str]]:
    """Consecutive stretches with the same relaxation, merged: (start index, end index, metres, reason)."""
    runs: list[tuple[int, int, float, str]] = []
    for stretch, (start, end) in zip(stretches, spans, strict=True):
        reason = REASONS.get(stretch.mode)
        if reason is None or stretch.mode not in (MODE_EMERGENCY_ACCESS, MODE_EMERGENCY_ONEWAY):
            continue
        if runs and runs[-1][3] == reason and runs[-1][1] == start:
            prev = runs[-1]
            runs[-1] = (prev[0], end, prev[2] + stretch.distance_m, reason)
        else:
            runs.append((start, end, stretch.distance_m, reason))
    return runs
