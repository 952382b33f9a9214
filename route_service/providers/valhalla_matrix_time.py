"""Valhalla's matrices at a time (issue 56): the rules by time as each road is reached, and the
points that lie on roads with such rules, with when the vehicle may reach them. No aiohttp.

Valhalla's TimeDistanceMatrix applies conditional access and restrictions as it reaches each
edge, but only in the direction it searches: a departure time (`date_time` type 1) only when it
searches forward from the sources (sources <= targets), an arrival time (type 2) only backward
from the targets (measured on Heidelberg's night truck ban: type 1 with more sources than targets
gave every cell, as without a time). So a matrix at a departure time is searched forward, its
sources split into blocks no larger than its targets (valhalla_matrix.cells), each source's
`date_time` in its own time zone (a per-location `date_time` overrides the request's).

A source on a road closed at the departure gets no cells (a destination gets none from Valhalla
where its road is closed when reached), and `timedPoints` lists every point on such roads with its windows (the optimizer's road windows); with
`when_open` (internal) its cells are those of its next opening instead: leaving it when it opens,
and reaching it by REOPEN_MARGIN after it opens (a backward search, arriving by then).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from route_service.model import MatrixQuery, TimedPointInfo
from route_service.providers.valhalla_time import local_time
from route_service.time_rules import size_of
from route_service.timed_index import TimedIndex, Window, keys_of

WINDOW_DAYS = 8  # a point's windows are listed this far after the departure (the optimizer's week)
# A point closed at the departure is reached this long after it next opens (or halfway through
# a shorter window): inside the window whatever the search's rounding.
REOPEN_MARGIN = timedelta(minutes=10)
Cells = Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], bool], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class TimedEnd:
    """A matrix point on a way with rules by time that can close it to the vehicle."""

    position: int  # the way's in the timed index
    open_now: bool
    windows: list[Window]  # when the vehicle may use it, WINDOW_DAYS ahead

    def reached_at(self) -> datetime | None:
        """When a search reaching it at its next opening arrives (None: not within the windows)."""
        if not self.windows:
            return None
        start, end = self.windows[0]
        return start + min(REOPEN_MARGIN, (end - start) / 2)


def departing(sources: list[dict[str, Any]], points: list[Any], at: datetime) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The sources, each leaving at `at` in its own local time, and the request's `date_time`."""
    timed = [{**source, "date_time": local_time(at, point)} for source, point in zip(sources, points, strict=True)]
    return timed, {"type": 1, "value": timed[0]["date_time"]}


def timed_ends(index: TimedIndex, ways: list[tuple[int, ...]], query: MatrixQuery, departure: datetime) -> dict[int, TimedEnd]:
    """The points (by their place in sources + destinations) whose nearest ways all limit the
    vehicle by time (a point at a junction with an open way is not one), with the first's rules."""
    size = size_of(query.vehicle, query.restrictions.truck)
    found: dict[int, TimedEnd] = {}
    for k, near in enumerate(ways):
        positions = [index.position(way) for way in near]
        if not positions or any(i is None or not index.limits_access(i, query.vehicle) for i in positions):
            continue
        i = positions[0]
        assert i is not None
        until = departure + timedelta(days=WINDOW_DAYS)
        open_now = not index.at(i, query.vehicle, departure, size).closed
        found[k] = TimedEnd(i, open_now, index.windows(i, query.vehicle, departure, until, size))
    return found


def point_infos(index: TimedIndex, ends: dict[int, TimedEnd], side: int, query: MatrixQuery,
                departure: datetime) -> list[TimedPointInfo]:  # fmt: skip
    zone = departure.tzinfo
    infos = []
    for k, end in sorted(ends.items()):
        name = f"sources[{k}]" if k < side else f"destinations[{k - side}]"
        rules = [rule.tag for rule in index.rules[end.position] if rule.key in keys_of(query.vehicle)]
        windows = [(start.astimezone(zone), stop.astimezone(zone)) for start, stop in end.windows]
        infos.append(TimedPointInfo(name, int(index.ids[end.position]), index.name(end.position), rules, end.open_now, windows))
    return infos


def closed_sources(ends: dict[int, TimedEnd], side: int, durations: np.ndarray, distances: np.ndarray) -> None:
    """No cells from a point on a road closed at the departure (Valhalla does not check the edge
    a search starts on; the edge a destination lies on it checks when it reaches it)."""
    for k, end in ends.items():
        if k < side and not end.open_now:
            durations[k], distances[k] = np.nan, np.nan


def reopened(cells: Cells, request: dict[str, Any], sources: list[dict[str, Any]], targets: list[dict[str, Any]],
             points: list[Any], ends: dict[int, TimedEnd], tables: tuple[np.ndarray, np.ndarray]) -> None:  # fmt: skip
    """`when_open`: each closed point's cells at its next opening, into `tables` (durations,
    distances): a source's row leaving when it opens; a destination's cells it was closed for,
    arriving REOPEN_MARGIN after it opens."""
    side = len(sources)
    plain = {key: value for key, value in request.items() if key != "date_time"}
    untimed = [{key: value for key, value in source.items() if key != "date_time"} for source in sources]
    for k, end in ends.items():
        at = end.reached_at()
        if end.open_now or at is None:
            continue
        if k < side:
            leaving, date_time = departing([untimed[k]], [points[k]], end.windows[0][0])
            found = cells({**plain, "date_time": date_time}, leaving, targets, True)
            for table, part in zip(tables, found, strict=True):
                table[k] = part[0]
            continue
        missing = np.isnan(tables[0][:, k - side])
        if not missing.any():  # open again when every source reaches it
            continue
        target = {**targets[k - side], "date_time": local_time(at, points[k])}
        arriving = {**plain, "date_time": {"type": 2, "value": target["date_time"]}}
        found = cells(arriving, untimed, [target], False)
        for table, part in zip(tables, found, strict=True):
            table[missing, k - side] = part[missing, 0]
