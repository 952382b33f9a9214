"""Stops that no road connects with the others (no aiohttp here).

OSRM answers null in its matrix where no route exists, for example to a stop on an island
or on a road network part cut off for the vehicle. A tour needs every stop it visits
reachable from every other, so the stops fall into groups that roads join both ways.

By default (`strict=false`) the tour keeps the start's group and answers the other stops as
unassigned, each with the reason: one bad stop no longer sinks a tour (issue 32). Two cases
still fail, naming the stop at fault: a start whose group is smaller than another group (the
start is the stop cut off, not the others), and a destination outside the start's group (the
tour cannot end there). With `strict=true` any stop outside the largest group fails the
request, every one named at once.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

from common.errors import NoRouteFound, ParameterErrors
from optimize_service.stops.model import Stop, TourEnds

UNREACHABLE = "unreachable"


def groups_of(durations_s: np.ndarray) -> np.ndarray:
    """Each stop's group: the stops roads join with it both ways share a label."""
    _, labels = connected_components(csr_array(np.isfinite(durations_s)), directed=True, connection="strong")
    return np.asarray(labels)


def unreachable_stops(durations_s: np.ndarray, start: int) -> list[int]:
    """The stops outside the largest group (on a tie, the start's)."""
    if np.isfinite(durations_s).all():
        return []
    labels = groups_of(durations_s)
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


def stops_to_visit(durations_s: np.ndarray, stops: list[Stop], ends: TourEnds, strict: bool) -> list[int]:
    """The indexes of the stops the tour visits, in the request's order; the others are
    unassigned. Raises NoRouteFound as the module says."""
    if strict or np.isfinite(durations_s).all():
        reject_unreachable(durations_s, stops, ends.start)
        return list(range(len(stops)))
    labels = groups_of(durations_s)
    own = labels == labels[ends.start]
    start = stops[ends.start]
    if own.sum() < np.bincount(labels).max() or own.sum() == 1:
        others = len(stops) - int(own.sum())
        raise NoRouteFound(
            f"the start {start.name!r} is cut off: no road joins it both ways with {others} of the other "
            f"{len(stops) - 1} stops (set another start, or leave it out)",
            parameter=f"stops[{ends.start}]",
        )
    if ends.end is not None and not own[ends.end]:
        raise NoRouteFound(
            f"the destination {stops[ends.end].name!r} cannot be reached by road from the start "
            f"{start.name!r}, or it cannot reach the start's stops: choose another destination",
            parameter=f"stops[{ends.end}]",
        )
    return [int(i) for i in np.flatnonzero(own)]


def unassigned_message(stop: Stop, start: Stop) -> str:
    return f"no road joins stop {stop.name!r} both ways with the start {start.name!r}: left out of the tour"
