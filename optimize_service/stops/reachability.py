"""Stops that no road connects with the others (no aiohttp here).

OSRM answers null in its matrix where no route exists, for example to a stop on an island
or on a road network part cut off for the vehicle. The tour needs every stop reachable
from every other, so the largest group of mutually reachable stops wins (on a tie, the one
with the start) and every stop outside it is reported by index and name.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

from common.errors import NoRouteFound, ParameterErrors
from optimize_service.stops.model import Stop


def unreachable_stops(durations_s: np.ndarray, start: int) -> list[int]:
    connected = np.isfinite(durations_s)
    if connected.all():
        return []
    _, labels = connected_components(csr_array(connected), directed=True, connection="strong")
    sizes = np.bincount(labels)
    biggest = np.flatnonzero(sizes == sizes.max())
    keep = labels[start] if labels[start] in biggest else biggest[0]
    return [int(i) for i in np.flatnonzero(labels != keep)]


def reject_unreachable(durations_s: np.ndarray, stops: list[Stop], start: int) -> None:
    errors = ParameterErrors()
    for index in unreachable_stops(durations_s, start):
        errors.add(
            f"stops[{index}]",
            f"stop {stops[index].name!r} cannot be reached by road from the other stops, or they not from it",
            NoRouteFound,
        )
    errors.raise_if_any()
