"""The route service as the stop order sees it: the stops' road matrix and the tour's roads.

Errors the route service reports about one of its points (`sources[3]`, `waypoints[7]`) are
re-raised naming the stop (`stops[3]`, with its name), so the client learns which of its
stops to fix. No aiohttp server code here; the HTTP client is `common.client.ServiceClient`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from common.errors import UpstreamError, Violation
from optimize_service.road_windows import RoadWindow, read_road_windows
from optimize_service.routing import RouteClient
from optimize_service.stops.model import Leg, Options, Stop, TourRoute

_POINT_PARAMETER = re.compile(r"^(sources|destinations|waypoints)\[(\d+)\]$")


@dataclass(frozen=True)
class RoadMatrix:
    durations_s: np.ndarray  # n x n, NaN where no road connects
    roads: dict[int, RoadWindow] = field(default_factory=dict)  # stops on roads with rules by time


async def road_matrix(routes: RouteClient, stops: list[Stop], options: Options) -> RoadMatrix:
    """Durations only: the order minimizes time, and the distances would double the route
    service's work and memory and the JSON read here (2 x 6 MB at 1000 stops)."""
    points = [point(stop) for stop in stops]
    body = {"sources": points, "destinations": points, "annotations": ["duration"], **profile(options)}
    if options.timed:  # rules by time as at startTime (issue 33)
        body["departureTime"] = options.start_time.isoformat()
    answer = await call(routes, "/internal/matrix", body, stops, list(range(len(stops))))
    durations = np.array(answer["durations"], dtype=np.float64)
    return RoadMatrix(durations, read_road_windows(answer, options.start_time))


async def road_tour(routes: RouteClient, stops: list[Stop], visiting_order: list[int], options: Options) -> TourRoute:
    """With startTime (issue 33) each leg leaves when the one before arrives, plus the
    stop's service time, and its rules by time are those of that time."""
    body: dict[str, Any] = {"waypoints": [point(stops[i]) for i in visiting_order], **profile(options)}
    if options.timed:
        body["departureTime"] = options.start_time.isoformat()
        body["serviceTimes"] = [stops[i].service_time_s for i in visiting_order]
    answer = await call(routes, "/internal/route", body, stops, visiting_order)
    return TourRoute(
        distance_m=float(answer["distance"]),
        duration_s=float(answer["duration"]),
        geometry=answer["geometry"]["coordinates"],
        legs=[Leg(float(leg["distance"]), float(leg["duration"]), leg.get("timeRules")) for leg in answer["legs"]],
        provider=str(answer.get("provider", "")),
        dataset=str(answer.get("dataset", "")),
    )


async def call(routes: RouteClient, path: str, body: dict[str, Any], stops: list[Stop], point_stops: list[int]) -> Any:
    """`point_stops[k]`: the stop index of the k-th point sent."""
    try:
        return await routes.client.post_json(path, body)
    except UpstreamError as exc:
        raise blame_stops(exc, stops, point_stops) from exc


def point(stop: Stop) -> dict[str, float]:
    return {"lat": stop.coordinate.lat, "lon": stop.coordinate.lon}


def profile(options: Options) -> dict[str, Any]:
    """The route service's fields for the request's vehicle, type, provider and avoid area."""
    chosen: dict[str, Any] = {"vehicle": options.vehicle, "type": options.route_type}
    if options.provider is not None:
        chosen["provider"] = options.provider
    if options.avoid is not None:
        chosen["avoid"] = options.avoid.as_geojson()
    return chosen


def blame_stops(error: UpstreamError, stops: list[Stop], point_stops: list[int]) -> UpstreamError:
    """The same error with `sources[k]`/`waypoints[k]` replaced by the stop it concerns."""

    def blame(violation: Violation) -> Violation:
        match = _POINT_PARAMETER.match(violation.parameter or "")
        if not match or int(match.group(2)) >= len(point_stops):
            return violation
        index = point_stops[int(match.group(2))]
        message = f"stop {stops[index].name!r}: {violation.message}"
        return replace(violation, parameter=f"stops[{index}]", message=message)

    return error.renamed(blame)
