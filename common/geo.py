"""Points on the Earth and the distance between them, one definition for every service.

The Earth is taken as a sphere of radius EARTH_RADIUS_M = 6 371 008.8 m, the IUGG mean radius
R1 = (2a + b) / 3 of the WGS84 ellipsoid: the radius geodesy recommends for a spherical Earth,
whose great-circle distances stay within about 0.5 % of the ellipsoid's. Every distance we
compute ourselves uses it (the optimizer's 1200 km rule, the geocoder, the
detour tracks); OSRM's own figures come from its own radius (6 372 797.56 m), inside OSRM.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

EARTH_RADIUS_M = 6_371_008.8
METRES_PER_DEGREE = math.pi * EARTH_RADIUS_M / 180  # of latitude, and of longitude at the equator


@dataclass(frozen=True)
class LatLon:
    lat: float
    lon: float


def haversine_m(a: LatLon, b: LatLon) -> float:
    """The great-circle distance between two points, in metres."""
    lat1, lat2 = math.radians(a.lat), math.radians(b.lat)
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin(math.radians(b.lon - a.lon) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def haversine_m_arrays(lat1: ArrayLike, lon1: ArrayLike, lat2: ArrayLike, lon2: ArrayLike) -> np.ndarray:
    """The same distance for many pairs at once (degrees in, metres out; numpy broadcasting).
    Not used for one pair: numpy takes ~4 µs a call on scalars, `haversine_m` ~0.6 µs."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(np.subtract(lon2, lon1)) / 2) ** 2
    return np.asarray(2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(h, 1.0))))


@dataclass(frozen=True)
class Bounds:
    """A box of latitudes and longitudes: what a map covers."""

    min_lon: float
    min_lat: float
    max_lon: float
    max_lat: float

    @classmethod
    def from_list(cls, values: object) -> Bounds | None:
        """From `[min_lon, min_lat, max_lon, max_lat]` (GeoJSON's bbox order), None if not that."""
        if not isinstance(values, list | tuple) or len(values) != 4:
            return None
        if not all(isinstance(v, int | float) for v in values):
            return None
        return cls(*(float(v) for v in values))

    def as_list(self) -> list[float]:
        return [self.min_lon, self.min_lat, self.max_lon, self.max_lat]

    def contains(self, point: LatLon, margin_m: float = 0.0) -> bool:
        """Whether the point lies in the box widened by `margin_m` on every side."""
        lat_margin = margin_m / METRES_PER_DEGREE
        lon_margin = lat_margin / max(math.cos(math.radians(point.lat)), 0.01)
        return (
            self.min_lat - lat_margin <= point.lat <= self.max_lat + lat_margin
            and self.min_lon - lon_margin <= point.lon <= self.max_lon + lon_margin
        )

    def describe(self) -> str:
        return f"latitude {self.min_lat:.4f} to {self.max_lat:.4f}, longitude {self.min_lon:.4f} to {self.max_lon:.4f}"

    def distance_m(self, point: LatLon) -> float:
        """How far the point lies from the box (0 inside it)."""
        lat = min(max(point.lat, self.min_lat), self.max_lat)
        lon = min(max(point.lon, self.min_lon), self.max_lon)
        return haversine_m(point, LatLon(lat, lon))

    def area_deg2(self) -> float:
        return (self.max_lon - self.min_lon) * (self.max_lat - self.min_lat)


# Parts of a map's road outline nearer than this to each other are one area: a city's outline
# breaks at rivers and parks, separate extracts lie tens or hundreds of kilometres apart.
AREA_GAP_M = 10_000.0


def coverage_areas(boxes: Sequence[Bounds], gap_m: float = AREA_GAP_M) -> list[Bounds]:
    """The areas a map covers: boxes nearer than `gap_m` to each other (directly or through
    others) joined into one, largest first."""
    if not boxes:
        return []
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    box = np.array([b.as_list() for b in boxes])  # min_lon, min_lat, max_lon, max_lat
    lat_gap = np.maximum(0, np.maximum(box[None, :, 1] - box[:, None, 3], box[:, None, 1] - box[None, :, 3]))
    lon_gap = np.maximum(0, np.maximum(box[None, :, 0] - box[:, None, 2], box[:, None, 0] - box[None, :, 2]))
    scale = np.cos(np.radians((box[:, 1] + box[:, 3]) / 2))[:, None]
    near = np.hypot(lat_gap, lon_gap * scale) * METRES_PER_DEGREE < gap_m
    _, labels = connected_components(csr_array(near), directed=False)
    areas = []
    for label in np.unique(labels):
        members = box[labels == label]
        corners = [*members[:, 0:2].min(axis=0), *members[:, 2:4].max(axis=0)]
        areas.append(Bounds(*(float(v) for v in corners)))
    return sorted(areas, key=Bounds.area_deg2, reverse=True)
