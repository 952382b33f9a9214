"""Waypoints and costs for a provider that can only route from one point to the next.

The registry gives these plugins to a provider that lacks its own: one
route per consecutive pair of points, without steps. Each leg's errors name its `from` and
`to`; they are renamed to the caller's names of those two points (`waypoints[3]`, `via`), so
the client learns which of its points is at fault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
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
    RouteTime,
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
        departures = Departures(query.restrictions.time.at if query.restrictions.time else None,
                                query.leg_departures, query.service_s)  # fmt: skip
        results = self.legs(query.waypoints, names, query.vehicle, query.route_type, query.restrictions, departures)
        for index, result in enumerate(results):
            best = result.routes[0]
            # Consecutive legs share their joining point: keep it once.
            pieces.append(best.geometry[1:] if pieces else best.geometry)
            rules = result.time_rules if departures.timed else None
            legs.append(Leg(best.distance_m, best.duration_s, time_rules=rules))
            snapped.extend([result.origin, result.destination] if index == 0 else [result.destination])
        distance = sum(leg.distance_m for leg in legs)
        duration = sum(leg.duration_s for leg in legs)
        route = Route(round(distance, 1), round(duration, 1), np.concatenate(pieces), legs)
        return WaypointsResult(route=route, snapped=snapped)

    def cost(self, query: CostQuery) -> Cost:
        distance = duration = 0.0
        departures = Departures(query.departure)
        for result in self.legs(query.points, query.names, query.vehicle, query.route_type, departures=departures):
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
        departures: Departures | None = None,
    ) -> Iterator[RouteResult]:
        """One route per consecutive pair; with `departures`, each leaves when they say."""
        for index, (origin, destination) in enumerate(pairwise(points)):
            if departures is not None and departures.timed:
                restrictions = replace(restrictions, time=RouteTime(departures.of(index)))
            try:
                leg = RouteQuery(origin, destination, vehicle, route_type, steps=False, restrictions=restrictions)
                result = self.route(leg)
            except ApiError as exc:
                raise exc.renamed(parameters({"from": names[index], "to": names[index + 1]})) from exc
            if departures is not None and result.arrival is not None:
                departures.arrived(index, result.arrival)
            yield result


class Departures:
    """When each leg leaves: as `given`, or chained from `start` (the first leg leaves after the
    first point's service time, each next one on arrival plus its point's); never (`timed`
    False) without either."""

    def __init__(self, start: datetime | None, given: Sequence[datetime] = (), service_s: Sequence[float] = ()) -> None:
        self.given = given
        self.service_s = service_s
        self.timed = bool(given) or start is not None
        self.next = None if start is None else start + self.service(0)

    def service(self, waypoint: int) -> timedelta:
        return timedelta(seconds=self.service_s[waypoint] if waypoint < len(self.service_s) else 0.0)

    def of(self, leg: int) -> datetime:
        if self.given:
            return self.given[leg]
        assert self.next is not None
        return self.next

    def arrived(self, leg: int, at: datetime) -> None:
        self.next = at + self.service(leg + 1)


def parameters(names: Mapping[str, str]) -> Callable[[Violation], Violation]:
    """A violation about one of `names`' keys as one about its value; others unchanged."""
    return lambda v: replace(v, parameter=names.get(v.parameter or "", v.parameter))
