"""Stops on roads whose rules depend on the time (issue 33), as the route service's matrix at
the request's `startTime` reports them (`timedPoints`): when a vehicle may reach each one. No
aiohttp here.

A delivery zone open Mo-Sa 06:00-11:00 makes a stop inside it a stop with that window: the
fleet planner intersects it with the task's own windows, the stop order checks its arrivals
against it. A stop no vehicle can reach while its road is open is left out with this reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

CLOSED_AT_TIME = "closed-at-time"


@dataclass(frozen=True)
class RoadWindow:
    """When one point's road may be used, in whole seconds after the request's startTime."""

    road: str
    way_id: int
    rules: tuple[str, ...]
    windows: tuple[tuple[int, int], ...]  # sorted, disjoint; empty: not within the next 8 days

    def holds(self, at_s: float) -> bool:
        return any(start <= at_s <= end for start, end in self.windows)

    def message(self, vehicle: str) -> str:
        rules = "; ".join(self.rules)
        return f"it lies on {self.road or 'a road'} (way {self.way_id}), which {vehicle} may use only at times ({rules})"


def read_road_windows(answer: dict[str, Any], start: datetime) -> dict[int, RoadWindow]:
    """The matrix answer's `timedPoints` by point index (all-to-all: sources[i] is point i)."""
    found: dict[int, RoadWindow] = {}
    for item in answer.get("timedPoints", []):
        side, _, index = str(item["point"]).partition("[")
        if side != "sources":
            continue
        spans = tuple(
            (seconds_after(start, window["from"], math.floor), seconds_after(start, window["until"], math.ceil))
            for window in item["windows"]
        )
        found[int(index.rstrip("]"))] = RoadWindow(str(item["road"]), int(item["way"]), tuple(item["rules"]), spans)
    return found


def seconds_after(start: datetime, text: str, rounding: Any) -> int:
    return max(0, int(rounding((datetime.fromisoformat(text) - start).total_seconds())))


def intersect(windows: list[tuple[int, int]], road: RoadWindow) -> list[tuple[int, int]]:
    """The parts of `windows` in which the road may be used."""
    return [
        (max(start, open_s), min(end, close_s))
        for start, end in windows
        for open_s, close_s in road.windows
        if max(start, open_s) <= min(end, close_s)
    ]
