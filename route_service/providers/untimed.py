"""Answers at a time where no rule by time applies (issue 33): a request with a time whose
points have no road with rules by time near goes to the default provider
(`ProviderRegistry.moot_time`); these wrappers give its answers the times the request asked
about, with no rule met, so the answer reads as any answer at a time."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from route_service.model import (
    MatrixQuery,
    MatrixResult,
    RouteQuery,
    RouteResult,
    RouteTime,
    WaypointsQuery,
    WaypointsResult,
)
from route_service.providers.base import MatrixPlugin, RoutePlugin, WaypointsPlugin


def route_at(plugin: RoutePlugin, when: RouteTime) -> RoutePlugin:
    def answer(query: RouteQuery) -> RouteResult:
        result = plugin(query)
        duration = timedelta(seconds=result.routes[0].duration_s)
        departure = when.at - duration if when.arrival else when.at
        return replace(result, departure=departure, arrival=departure + duration, time_rules=[])

    return answer


def matrix_at(plugin: MatrixPlugin, when: RouteTime) -> MatrixPlugin:
    def answer(query: MatrixQuery) -> MatrixResult:
        return replace(plugin(query), departure=when.at, timed_points=[])

    return answer


def waypoints_at(plugin: WaypointsPlugin) -> WaypointsPlugin:
    def answer(query: WaypointsQuery) -> WaypointsResult:
        result = plugin(query)
        legs = [replace(leg, time_rules=[]) for leg in result.route.legs]
        return replace(result, route=replace(result.route, legs=legs))

    return answer
