"""The region's diameter (the 1200 km rule): the two stops farthest apart, no aiohttp here."""

from __future__ import annotations

import numpy as np

from common.geo import LatLon, haversine_m_arrays


def farthest_pair(points: list[LatLon]) -> tuple[int, int, float]:
    """The two points farthest apart and their distance in metres: the region's diameter.
    One vectorised row per point keeps memory linear (1000 points: ~10 ms)."""
    lats = np.array([p.lat for p in points])
    lons = np.array([p.lon for p in points])
    best = (0, 0, 0.0)
    for i in range(len(points) - 1):
        row = haversine_m_arrays(lats[i], lons[i], lats[i + 1 :], lons[i + 1 :])
        j = int(np.argmax(row))
        if row[j] > best[2]:
            best = (i, i + 1 + j, float(row[j]))
    return best
