"""Waypoints and costs for a provider that can only route from one point to the next.

The registry gives these plugins to a provider that lacks its own (the graph provider): one
route per consecutive pair of points, without steps. Each leg's errors name its `from` and
`to`; they are renamed to the caller's names of those two points (`waypoints[3]`, `via`), so
the client learns which of its points is at fault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import pairwise

import numpy as np

from common.errors import ApiError, Violation
from common.geo import LatLon
from route_service.model import (
    NO_RESTRICTIONS,
    Cost,
    CostQuery,
    Leg,
    Restrictions,
    Route,
    RouteQuery,
    RouteResult,
    Snapped,
    WaypointsQuery,
    WaypointsResult,
)
from route_service.providers.base import RoutePlugin


class LegByLeg:
    """The waypoints and cost plugins of one route plugin."""

    def __init__(self, route: RoutePlugin) -> None:
        self.route = route

    def waypoints(self, query: WaypointsQuery) -> WaypointsResult:
        pieces: list[np.ndarray] = []
        legs: list[Leg] = []
        snapped: list[Snapped] = []
        names = [f"waypoints[{i}]" for i in range(len(query.waypoints))]
        results = self.legs(query.waypoints, names, query.vehicle, query.route_type, query.restrictions)
        for index, result in enumerate(results):
            best = result.routes[0]
            # Consecutive legs share their joining point: keep it once.
            pieces.append(best.geometry[1:] if pieces else best.geometry)
            legs.append(Leg(best.distance_m, best.duration_s))
            snapped.extend([result.origin, result.destination] if index == 0 else [result.destination])
        distance = sum(leg.distance_m for leg in legs)
        duration = sum(leg.duration_s for leg in legs)
        route = Route(round(distance, 1), round(duration, 1), np.concatenate(pieces), legs)
        return WaypointsResult(route=route, snapped=snapped)

    def cost(self, query: CostQuery) -> Cost:
        distance = duration = 0.0
        for result in self.legs(query.points, query.names, query.vehicle, query.route_type):
            best = result.routes[0]
            distance, duration = distance + best.distance_m, duration + best.duration_s
        return Cost(distance, duration)

    def legs(
        self,
        points: Sequence[LatLon],
        names: Sequence[str],
        vehicle: str,
        route_type: str,
        restrictions: Restrictions = NO_RESTRICTIONS,
    ) -> Iterator[RouteResult]:
        for index, (origin, destination) in enumerate(pairwise(points)):
            try:
                leg = RouteQuery(origin, destination, vehicle, route_type, steps=False, restrictions=restrictions)
                result = self.route(leg)
            except ApiError as exc:
                raise exc.renamed(parameters({"from": names[index], "to": names[index + 1]})) from exc
            yield result


def parameters(names: Mapping[str, str]) -> Callable[[Violation], Violation]:
    """A violation about one of `names`' keys as one about its value; others unchanged."""
    return lambda v: replace(v, parameter=names.get(v.parameter or "", v.parameter))
