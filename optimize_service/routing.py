"""The route service as the optimizer sees it: road matrices, tour geometry, provider names.

Errors the route service reports about one of its points (`sources[3]`, `waypoints[7]`) are
re-raised naming the stop (`stops[3]`, with its name), so the client learns which of its
stops to fix. No aiohttp server code here; the HTTP client is `common.client.ServiceClient`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from common.client import ServiceClient
from common.errors import ApiError, UpstreamError
from optimize_service.model import Leg, Options, Stop, TourRoute

PROVIDERS_TTL_S = 60.0
_POINT_PARAMETER = re.compile(r"^(sources|destinations|waypoints)\[(\d+)\]$")


@dataclass(frozen=True)
class RoadMatrix:
    durations_s: np.ndarray  # n x n, NaN where no road connects


class RouteClient:
    def __init__(self, client: ServiceClient) -> None:
        self.client = client
        self._providers: tuple[float, frozenset[str]] | None = None

    async def provider_names(self) -> frozenset[str] | None:
        """The route service's providers (cached a minute), or None when it cannot say."""
        now = time.monotonic()
        if self._providers is not None and now - self._providers[0] < PROVIDERS_TTL_S:
            return self._providers[1]
        try:
            body = await self.client.get_json("/internal/providers")
            names = frozenset(str(item["name"]) for item in body["providers"])
        except (ApiError, KeyError, TypeError):
            return None  # the matrix call will report what is wrong
        self._providers = (now, names)
        return names

    async def matrix(self, stops: list[Stop], options: Options) -> RoadMatrix:
        """Durations only: the order minimizes time, and the distances would double the route
        service's work and memory and the JSON read here (2 x 6 MB at 1000 stops)."""
        points = [point(stop) for stop in stops]
        body = {"sources": points, "destinations": points, "annotations": ["duration"], **profile(options)}
        answer = await self.call("/internal/matrix", body, stops, list(range(len(stops))))
        return RoadMatrix(durations_s=np.array(answer["durations"], dtype=np.float64))

    async def tour(self, stops: list[Stop], visiting_order: list[int], options: Options) -> TourRoute:
        body = {"waypoints": [point(stops[i]) for i in visiting_order], **profile(options)}
        answer = await self.call("/internal/route", body, stops, visiting_order)
        return TourRoute(
            distance_m=float(answer["distance"]),
            duration_s=float(answer["duration"]),
            geometry=answer["geometry"]["coordinates"],
            legs=[Leg(float(leg["distance"]), float(leg["duration"])) for leg in answer["legs"]],
            provider=str(answer.get("provider", "")),
            dataset=str(answer.get("dataset", "")),
        )

    async def call(self, path: str, body: dict[str, Any], stops: list[Stop], point_stops: list[int]) -> Any:
        """`point_stops[k]`: the stop index of the k-th point sent."""
        try:
            return await self.client.post_json(path, body)
        except UpstreamError as exc:
            raise blame_stops(exc, stops, point_stops) from exc


def point(stop: Stop) -> dict[str, float]:
    return {"lat": stop.coordinate.lat, "lon": stop.coordinate.lon}


def profile(options: Options) -> dict[str, str]:
    chosen = {"vehicle": options.vehicle, "type": options.route_type}
    if options.provider is not None:
        chosen["provider"] = options.provider
    return chosen


def blame_stops(error: UpstreamError, stops: list[Stop], point_stops: list[int]) -> UpstreamError:
    """The same error with `sources[k]`/`waypoints[k]` replaced by the stop it concerns."""
    violations = []
    for violation in error.violations:
        match = _POINT_PARAMETER.match(violation.parameter or "")
        if match and int(match.group(2)) < len(point_stops):
            index = point_stops[int(match.group(2))]
            message = f"stop {stops[index].name!r}: {violation.message}"
            violation = replace(violation, parameter=f"stops[{index}]", message=message)
        violations.append(violation)
    return UpstreamError(error.status, error.title, violations)
