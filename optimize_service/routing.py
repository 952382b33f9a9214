"""The route service as the optimizer sees it: road matrices, tour geometry, provider names.

Errors the route service reports about one of its points (`sources[3]`, `waypoints[7]`) are
re-raised naming the stop (`stops[3]`, with its name), so the client learns which of its
stops to fix. No aiohttp server code here; the HTTP client is `common.client.ServiceClient`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from common.client import ServiceClient
from common.errors import ApiError, UpstreamError, Violation
from optimize_service.road_windows import RoadWindow, read_road_windows
from optimize_service.stops.model import Leg, Options, Stop, TourRoute

# A name missing from the list looks it up again at most this often (a provider added since).
PROVIDERS_RECHECK_S = 5.0
_POINT_PARAMETER = re.compile(r"^(sources|destinations|waypoints)\[(\d+)\]$")


@dataclass(frozen=True)
class RoadMatrix:
    durations_s: np.ndarray  # n x n, NaN where no road connects
    roads: dict[int, RoadWindow] = field(default_factory=dict)  # stops on roads with rules by time


class ProviderNames:
    """The route service's provider names, so that an unknown one is refused (400) with the
    request's other violations, before any routing. Looked up on first need, and again only
    when a request names one missing from the list, at most every PROVIDERS_RECHECK_S: a known
    name never costs a call, a provider added since is found at once, and one the route service
    dropped since is refused by the route service itself when the matrix names it."""

    def __init__(
        self, fetch: Callable[[], Awaitable[frozenset[str]]], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._names: frozenset[str] | None = None
        self._asked_at = -math.inf
        self._lock = asyncio.Lock()  # requests arriving together share one lookup

    async def to_check(self, name: str) -> frozenset[str] | None:
        """The names to check `name` against; None when the route service cannot say (it then
        checks the name itself)."""
        if self._names is not None and name in self._names:
            return self._names
        async with self._lock:
            missing = self._names is None or name not in self._names
            if missing and self._clock() - self._asked_at >= PROVIDERS_RECHECK_S:
                self._asked_at = self._clock()
                # On failure the last list stands; without one the matrix call reports what is wrong.
                with contextlib.suppress(ApiError, KeyError, TypeError):
                    self._names = await self._fetch()
        return self._names


class RouteClient:
    def __init__(self, client: ServiceClient) -> None:
        self.client = client
        self.providers = ProviderNames(self.fetch_provider_names)

    async def fetch_provider_names(self) -> frozenset[str]:
        body = await self.client.get_json("/internal/providers")
        return frozenset(str(item["name"]) for item in body["providers"])

    async def matrix(self, stops: list[Stop], options: Options) -> RoadMatrix:
        """Durations only: the order minimizes time, and the distances would double the route
        service's work and memory and the JSON read here (2 x 6 MB at 1000 stops)."""
        points = [point(stop) for stop in stops]
        body = {"sources": points, "destinations": points, "annotations": ["duration"], **profile(options)}
        if options.timed:  # rules by time as at startTime (issue 33)
            body["departureTime"] = options.start_time.isoformat()
        answer = await self.call("/internal/matrix", body, stops, list(range(len(stops))))
        durations = np.array(answer["durations"], dtype=np.float64)
        return RoadMatrix(durations, read_road_windows(answer, options.start_time))

    async def tour(self, stops: list[Stop], visiting_order: list[int], options: Options) -> TourRoute:
        """With startTime (issue 33) each leg leaves when the one before arrives, plus the
        stop's service time, and its rules by time are those of that time."""
        body: dict[str, Any] = {"waypoints": [point(stops[i]) for i in visiting_order], **profile(options)}
        if options.timed:
            body["departureTime"] = options.start_time.isoformat()
            body["serviceTimes"] = [stops[i].service_time_s for i in visiting_order]
        answer = await self.call("/internal/route", body, stops, visiting_order)
        return TourRoute(
            distance_m=float(answer["distance"]),
            duration_s=float(answer["duration"]),
            geometry=answer["geometry"]["coordinates"],
            legs=[Leg(float(leg["distance"]), float(leg["duration"]), leg.get("timeRules")) for leg in answer["legs"]],
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
