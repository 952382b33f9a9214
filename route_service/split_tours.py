"""A long tour of the graph provider routed in two halves at once (issue 33).

A tour's legs are one search each, about 4 ms on Heidelberg: a 100-stop tour spent 0.39 s
routing them one after the other (scratch cProfile, 2026-11-29), a third of the time a stop
tour at a time may take (1 s). Routed as two halves on two cores, it takes about half.

Where each leg's departure is known (no time, or the fleet planner's `leg_departures`), the
halves are independent. A chained tour (each leg leaves when the one before arrives, plus the
service time) cannot know when its second half starts before the first has arrived. It is
routed in halves at the departures its caller expects (`expected_departures`: the stop tour's
schedule on its matrix), then walked leg by leg from the true start (`on_time`): a leg whose
rules hold alike from the earlier to a margin after the later of its expected and true times
(`RuleChanges.steady`) meets the same roads and rules, only at other times, and is shifted; any
other leg is routed again at its true time. So the answer is the chained one, leg for leg
(tests/route_service/test_large_calls.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from common.errors import ApiError, Violation
from route_service.model import Leg, RouteTime, RuleChanges, Snapped, WaypointsQuery, WaypointsResult

# Legs from which a graph tour is split: a leg (~4 ms) costs about two of a matrix's rows
# (`calls.SPLIT_MATRIX_SOURCES`, 40), so from here the hop to the child pays for itself.
SPLIT_TOUR_LEGS = 40
# A shifted leg holds only if the rules hold alike until this long after its later arrival (or
# its own duration, if longer): a leg's search may have reached roads on a path longer than the
# one it kept, before it kept it (`graph_engine.timed.route_at`'s rounds).
SETTLE = timedelta(minutes=5)
MINUTE = timedelta(minutes=1)  # a state's rules are those of its minute's start

RouteLeg = Callable[[WaypointsQuery], WaypointsResult]


@dataclass(frozen=True)
class TourHalves:
    first: WaypointsQuery
    rest: WaypointsQuery
    offset: int  # the rest's first waypoint, as the whole tour numbers it
    expected: bool  # routed at the expected departures: walk it on time (`on_time`)


def splits_tour(query: WaypointsQuery) -> bool:
    """Long enough, and each leg's departure known or expected."""
    chained = query.restrictions.time is not None and not query.leg_departures
    return len(query.waypoints) - 1 >= SPLIT_TOUR_LEGS and (not chained or bool(query.expected_departures))


def halves(query: WaypointsQuery) -> TourHalves:
    """The tour's first half of legs and the rest, which share the middle waypoint; a chained
    tour's at its expected departures."""
    expected = query.restrictions.time is not None and not query.leg_departures
    routed = replace(query, leg_departures=query.expected_departures, with_rule_changes=True) if expected else query
    middle = (len(query.waypoints) - 1) // 2
    return TourHalves(part(routed, 0, middle + 1), part(routed, middle, len(query.waypoints)), middle, expected)


def part(query: WaypointsQuery, start: int, end: int) -> WaypointsQuery:
    """Waypoints `start` to `end` (excluded) and their legs."""
    departures = query.leg_departures[start : end - 1]
    restrictions = query.restrictions
    if departures:
        restrictions = replace(restrictions, time=RouteTime(departures[0]))
    return replace(query, waypoints=query.waypoints[start:end], restrictions=restrictions, leg_departures=departures,
                   service_s=query.service_s[start:end], expected_departures=())  # fmt: skip


def joined(first: WaypointsResult, rest: WaypointsResult) -> WaypointsResult:
    """One tour of two parts, the rest starting where the first ends: as `LegByLeg` writes it."""
    legs = [*first.route.legs, *rest.route.legs]
    lines = [*leg_lines(first), *leg_lines(rest)]
    changes = first.rule_changes | rest.rule_changes if first.rule_changes and rest.rule_changes else None
    return tour_of(first, legs, lines, [*first.snapped, *rest.snapped[1:]], changes)


def leg_lines(tour: WaypointsResult) -> list[np.ndarray]:
    """Each leg's own line (consecutive legs share their joining point)."""
    lines, start = [], 0
    for leg in tour.route.legs:
        lines.append(tour.route.geometry[start : start + leg.points])
        start += leg.points - 1
    return lines


def tour_of(like: WaypointsResult, legs: list[Leg], lines: list[np.ndarray], snapped: list[Snapped],
            changes: RuleChanges | None = None) -> WaypointsResult:  # fmt: skip
    geometry = np.concatenate([lines[0], *(line[1:] for line in lines[1:])])
    distance = round(sum(leg.distance_m for leg in legs), 1)
    duration = round(sum(leg.duration_s for leg in legs), 1)
    route = replace(like.route, distance_m=distance, duration_s=duration, geometry=geometry, legs=legs)
    return WaypointsResult(route, snapped, changes)


def on_time(query: WaypointsQuery, tour: WaypointsResult, route_leg: RouteLeg) -> tuple[WaypointsResult, int]:
    """The chained tour from one routed at the expected departures, and how many legs were
    routed again: each leg leaves when the one before arrives plus the service time."""
    assert query.restrictions.time is not None and tour.rule_changes is not None
    legs, lines, snapped = list(tour.route.legs), leg_lines(tour), list(tour.snapped)
    again = 0
    leaves = query.restrictions.time.at + service(query, 0)
    for index, (leg, expected) in enumerate(zip(tour.route.legs, query.expected_departures, strict=True)):
        assert leg.arrival is not None
        drive = timedelta(seconds=leg.duration_s)
        if tour.rule_changes.steady(min(expected, leaves) - MINUTE, max(expected, leaves) + drive + max(SETTLE, drive)):
            legs[index] = later(leg, leaves - expected)
        else:
            again += 1
            one = leg_again(query, index, leaves, route_leg)
            legs[index], lines[index] = one.route.legs[0], one.route.geometry
            snapped[index + 1] = one.snapped[1]
            if index == 0:
                snapped[0] = one.snapped[0]
        arrived = legs[index].arrival
        assert arrived is not None
        leaves = arrived + service(query, index + 1)
    return tour_of(tour, legs, lines, snapped), again


def leg_again(query: WaypointsQuery, index: int, leaves: datetime, route_leg: RouteLeg) -> WaypointsResult:
    """Leg `index` leaving at `leaves`; its errors name the tour's waypoints."""
    leg = replace(query, waypoints=query.waypoints[index : index + 2], leg_departures=(leaves,), service_s=(),
                  restrictions=replace(query.restrictions, time=RouteTime(leaves)), expected_departures=())  # fmt: skip
    try:
        return route_leg(leg)
    except ApiError as exc:
        raise renumbered(exc, index) from exc


def service(query: WaypointsQuery, waypoint: int) -> timedelta:
    return timedelta(seconds=query.service_s[waypoint] if waypoint < len(query.service_s) else 0.0)


def later(leg: Leg, late: timedelta) -> Leg:
    """The leg driven `late` later on the same roads under the same rules."""
    rules = None if leg.time_rules is None else [replace(rule, at=rule.at + late) for rule in leg.time_rules]
    return replace(leg, time_rules=rules, arrival=None if leg.arrival is None else leg.arrival + late)


def renumbered(error: BaseException, offset: int, name: str = "waypoints") -> BaseException:
    """A part's error naming its points (`waypoints[3]`, `sources[3]`) as the whole numbers them."""
    if not isinstance(error, ApiError):
        return error
    pattern = re.compile(rf"{name}\[(\d+)\]")

    def shifted(violation: Violation) -> Violation:
        match = pattern.fullmatch(violation.parameter or "")
        return violation if match is None else replace(violation, parameter=f"{name}[{int(match.group(1)) + offset}]")

    return error.renamed(shifted)
