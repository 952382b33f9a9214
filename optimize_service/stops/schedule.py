"""Arrival and departure times along the tour (no aiohttp here).

Arrival at the first stop is the start time; each stop's departure is its arrival plus its
service time; the next arrival adds the leg's driving duration. Times keep the start
time's UTC offset, so a tour starting at 22:00+05:30 arrives at 00:40+05:30 the next day.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from common.errors import InvalidParameter
from optimize_service.stops.model import Leg, Stop, Visit

# Times are written rounded to the second: a day's room below the calendar's end.
LATEST_TIME = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)


def schedule(stops: list[Stop], visiting_order: list[int], legs: list[Leg], start_time: datetime) -> list[Visit]:
    """`visiting_order` lists the stop indexes as driven (a round trip ends with the start
    again); `legs[k]` leads from visiting_order[k] to visiting_order[k + 1]. A tour that
    would end past the calendar (year 9999) is the start time's fault: a 400 naming it."""
    try:
        visits = visit_times(stops, visiting_order, legs, start_time)
    except OverflowError as exc:
        raise start_too_late() from exc
    if visits and visits[-1].departure > LATEST_TIME:
        raise start_too_late()
    return visits


def start_too_late() -> InvalidParameter:
    return InvalidParameter("is too late: the tour would end after the year 9999", parameter="startTime")


def visit_times(stops: list[Stop], visiting_order: list[int], legs: list[Leg], start_time: datetime) -> list[Visit]:
    if len(legs) != len(visiting_order) - 1:
        raise ValueError(f"{len(visiting_order)} visits need {len(visiting_order) - 1} legs, got {len(legs)}")
    visits: list[Visit] = []
    arrival = start_time
    for position, stop_index in enumerate(visiting_order):
        leg = legs[position - 1] if position > 0 else None
        if leg is not None:
            arrival = visits[-1].departure + timedelta(seconds=leg.duration_s)
        # A round trip's return is the end of the tour: no service there.
        final_return = position > 0 and position == len(visiting_order) - 1 and stop_index == visiting_order[0]
        service = 0.0 if final_return else stops[stop_index].service_time_s
        visits.append(Visit(stop_index, arrival, arrival + timedelta(seconds=service), leg))
    return visits
