"""Small planar geometry on WGS84 coordinates: projection, point-in-polygon, nearest neighbours.

Distances use an equirectangular projection around the data: exact enough (< 0.5 %) for
the few kilometres that matter when filling in a city or a postcode, and vectorisable.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from common.geo import METRES_PER_DEGREE


class Projection:
    """lat/lon → metres on a plane tangent at the data's mean latitude."""

    def __init__(self, mean_lat: float) -> None:
        self.x_scale = METRES_PER_DEGREE * math.cos(math.radians(mean_lat))

    def project(self, lats: np.ndarray, lons: np.ndarray) -> np.ndarray:
        return np.column_stack((np.asarray(lons) * self.x_scale, np.asarray(lats) * METRES_PER_DEGREE))


class PointIndex:
    """Nearest labelled points within a radius (a KD-tree over projected coordinates)."""

    def __init__(self, projection: Projection, lats: list[float], lons: list[float], labels: list[str]) -> None:
        self.projection = projection
        self.labels = labels
        self.tree = cKDTree(projection.project(np.array(lats), np.array(lons))) if labels else None

    def nearby_labels(self, lat: float, lon: float, radius_m: float, k: int = 8) -> list[str]:
        """Labels of up to k nearest points within radius_m, nearest first."""
        if self.tree is None:
            return []
        point = self.projection.project(np.array([lat]), np.array([lon]))[0]
        distances, indices = self.tree.query(point, k=min(k, len(self.labels)), distance_upper_bound=radius_m)
        pairs = zip(np.atleast_1d(distances), np.atleast_1d(indices), strict=True)
        return [self.labels[i] for d, i in pairs if math.isfinite(d)]


def points_in_rings(points: np.ndarray, rings: list[np.ndarray]) -> np.ndarray:
    """Even-odd rule over all rings (holes included) for an (n, 2) array of lon, lat."""
    inside = np.zeros(len(points), dtype=bool)
    x, y = points[:, 0][:, None], points[:, 1][:, None]
    for ring in rings:
        x1, y1 = ring[:-1, 0][None, :], ring[:-1, 1][None, :]
        x2, y2 = ring[1:, 0][None, :], ring[1:, 1][None, :]
        crosses = (y1 > y) != (y2 > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_at = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= (np.count_nonzero(crosses & (x < x_at), axis=1) % 2).astype(bool)
    return inside
