"""The plugin boundary of the route service: one protocol per capability (OSRM's plugin shape).

A request is parsed and validated once, at the edge, into a typed request (`RouteRequest`,
...) that already holds the plugin answering it; the plugin gets typed values and returns
typed results (`route_service.model`); `route_service.formatter` alone writes JSON.

A provider declares the plugins it has (`RouteProvider.plugins`); the registry resolves them
once into `Capabilities`, serving what a provider lacks of waypoints and cost leg by leg
through its route plugin (`providers.leg_by_leg`). Plugins are synchronous and CPU-bound
(`route_service.calls` decides where they run) and raise `common.errors` types that name
their query's own inputs: `from`/`to`, `sources[i]`, `waypoints[i]`, a cost query's names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from common.geo import LatLon
from route_service.model import (
    Cost,
    CostQuery,
    DetourCosts,
    DetourQuery,
    IsochroneQuery,
    IsochroneResult,
    MatchQuery,
    MatchResult,
    MatrixQuery,
    MatrixResult,
    ProviderInfo,
    RouteQuery,
    RouteResult,
    TimeRuleMet,
    WaypointsQuery,
    WaypointsResult,
)

# ---------------------------------------------------------------- the capabilities


class RoutePlugin(Protocol):
    """The best route from one point to another, and its alternatives (GET /v1/route)."""

    def __call__(self, query: RouteQuery, /) -> RouteResult: ...


class MatrixPlugin(Protocol):
    """Durations and distances from every source to every destination (the optimizer's)."""

    def __call__(self, query: MatrixQuery, /) -> MatrixResult: ...


class WaypointsPlugin(Protocol):
    """One route through many waypoints in their order, a leg per pair (a tour's geometry)."""

    def __call__(self, query: WaypointsQuery, /) -> WaypointsResult: ...


class CostPlugin(Protocol):
    """Only the distance and duration through some points (thousands per detour file)."""

    def __call__(self, query: CostQuery, /) -> Cost: ...


class DetourPlugin(Protocol):
    """A detour line's direct and via costs in one or two engine calls, or None where this fast path
    cannot answer the line (a point off the roads, no route, no such graph for the profile):
    the caller then asks `cost`, whose errors name the point at fault. It raises no routing
    errors itself, so the registry does not wrap it for diagnostics."""

    def __call__(self, query: DetourQuery, /) -> DetourCosts | None: ...


class MatchPlugin(Protocol):
    """A recorded track matched to the roads driven (detour tracks)."""

    def __call__(self, query: MatchQuery, /) -> MatchResult: ...


class IsochronePlugin(Protocol):
    """Where the roads reachable within some times or distances from a point lie (GET /v1/isochrone)."""

    def __call__(self, query: IsochroneQuery, /) -> IsochroneResult: ...


# ---------------------------------------------------------------- providers


@dataclass(frozen=True)
class Plugins:
    """What a provider can do itself: `route` always, None for each capability it lacks."""

    route: RoutePlugin
    matrix: MatrixPlugin | None = None
    waypoints: WaypointsPlugin | None = None
    cost: CostPlugin | None = None
    match: MatchPlugin | None = None
    isochrone: IsochronePlugin | None = None
    detour: DetourPlugin | None = None


@runtime_checkable
class TimedRoadsSource(Protocol):
    """A provider that holds the map's roads with rules by time (issue 33; Valhalla)."""

    def trace_rules(self, vehicle: str, places: list[tuple[LatLon, datetime]]) -> list[TimeRuleMet]:
        """The rules by time a recorded trace met, at its own times."""
        ...

    def timed_near(self, points: Sequence[LatLon]) -> bool:
        """Whether any road with rules by time lies near the points (where their routes run)."""
        ...

    def next_rule_change(self, at: datetime) -> datetime:
        """When any rule by time next changes after `at` (a year on when none does)."""
        ...


class RouteProvider(Protocol):
    """One routing backend (OSRM, Valhalla) on one dataset."""

    name: str

    def info(self) -> ProviderInfo: ...

    def plugins(self) -> Plugins: ...


@dataclass(frozen=True)
class Capabilities:
    """One provider as the service uses it, each capability resolved once by the registry:
    waypoints and cost always (leg by leg where the provider lacks them), matrix and match
    where it has them (without match, a detour track is measured along straight lines)."""

    info: ProviderInfo
    route: RoutePlugin
    matrix: MatrixPlugin | None
    waypoints: WaypointsPlugin
    cost: CostPlugin
    match: MatchPlugin | None
    isochrone: IsochronePlugin | None = None
    detour: DetourPlugin | None = None  # detour files' fast path; without it, `cost` twice a line

    @property
    def name(self) -> str:
        return self.info.name


# ---------------------------------------------------------------- typed requests (what parsing hands on)


@dataclass(frozen=True)
class Request[Q, P]:
    """A validated query, the provider chosen for it, and that provider's plugin that answers it."""

    query: Q
    provider: str
    plugin: P


RouteRequest = Request[RouteQuery, RoutePlugin]
MatrixRequest = Request[MatrixQuery, MatrixPlugin]
WaypointsRequest = Request[WaypointsQuery, WaypointsPlugin]
MatchRequest = Request[MatchQuery, MatchPlugin]
IsochroneRequest = Request[IsochroneQuery, IsochronePlugin]
