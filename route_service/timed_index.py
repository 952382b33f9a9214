"""The map's roads with rules by time, as Valhalla's routes at a time report them (issue 56). No aiohttp.

Valhalla applies conditional access and turn restrictions itself when a request has a
`date_time` (its time-dependent search, edge by edge in the tiles' time zones); it does not say
which rules it met. This index, built at import (route_service.importing.valhalla_timed), does:
each timed way's id, node positions (memory-mapped .npy) and conditional tags, read with
route_service.time_rules. A route's ways come from Valhalla (`trace_attributes` on its shape).

It reports what Valhalla applies: the access keys its parser reads
(src/mjolnir/pbfgraphparser.cc:2605-2620: not `vehicle` or `goods`), their values as it reads
them (`no` and unknown values close; `yes`, `private`, `delivery`, `designated` open;
`destination` opens to reach a place), and `maxspeed` (reported; Valhalla does not cost it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path

import numpy as np
import orjson
from scipy.spatial import cKDTree

from common.geo import LatLon, haversine_m
from common.vehicles import VEHICLE_TABLE
from route_service.model import TimeRuleMet
from route_service.time_rules import DESTINATION_VALUES, ConditionalRule, TimeTable, parse_rules

TIMED_DIR = "timed"  # in the dataset's valhalla folder
IDS, POINTERS, COORDS, TAGS = "way_ids.npy", "pointers.npy", "coords.npy", "tags.json"
# Routes between points rarely leave their box by more than this: a request with no timed road
# that near is answered without rules by time (by the default provider, ProviderRegistry.moot_time).
NEAR_MARGIN_M = 5000.0
VALHALLA_KEYS = frozenset({"access", "motor_vehicle", "motorcar", "hgv", "bicycle", "foot"})
OPEN_VALUES = frozenset({"yes", "private", "delivery", "designated", "destination"})
HORIZON = timedelta(days=366)
# A route's vertex this near a timed way's node is on that way: Valhalla's shapes are the OSM
# nodes' own positions (polyline6), so a route that drives a timed way passes its nodes.
ON_NODE_M = 3.0
EARTH_M_PER_DEG = 111_320.0
MAX_CHANGES = 64  # looked through for a road's next opening (a daily window: 2 a day)
Window = tuple[datetime, datetime]


def metres(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Positions as metres on a local plane (each longitude scaled at its own latitude: exact
    enough within ON_NODE_M)."""
    return np.column_stack((lat * EARTH_M_PER_DEG, lon * EARTH_M_PER_DEG * np.cos(np.radians(lat))))


def keys_of(vehicle: str) -> tuple[str, ...]:
    """The keys whose rules Valhalla applies to a vehicle, and `maxspeed` for motor vehicles."""
    row = VEHICLE_TABLE[vehicle]
    access = tuple(key for key in row.access_keys if key in VALHALLA_KEYS)
    return (*access, "maxspeed") if row.motorized else access


def effect(rule: ConditionalRule, vehicle: str) -> str:
    if rule.key == "maxspeed":
        return f"speed limit {rule.value} km/h"
    if rule.value in DESTINATION_VALUES:
        return f"open to {vehicle} only to reach a place inside ({rule.value})"
    if rule.value not in OPEN_VALUES:
        return f"closed to {vehicle}"
    return f"open to {vehicle} ({rule.value})"


@dataclass(frozen=True)
class WayAt:
    """A timed way for one vehicle at one time: the rules that held, and whether it was closed."""

    held: list[ConditionalRule]
    closed: bool


class TimedIndex:
    def __init__(self, folder: Path) -> None:
        self.ids = np.load(folder / IDS, mmap_mode="r")
        self.pointers = np.load(folder / POINTERS, mmap_mode="r")
        self.coords = np.load(folder / COORDS, mmap_mode="r")
        self.tags: list[dict[str, str]] = orjson.loads((folder / TAGS).read_bytes())
        self.table = TimeTable()
        self._lock = threading.Lock()  # the table parses each expression on first use

    @classmethod
    def load(cls, folder: Path) -> TimedIndex | None:
        """The index in `folder`; None for a dataset imported before it existed."""
        return cls(folder) if (folder / IDS).is_file() else None

    def __len__(self) -> int:
        return len(self.ids)

    def position(self, way_id: int) -> int | None:
        i = int(np.searchsorted(self.ids, way_id))
        return i if i < len(self.ids) and int(self.ids[i]) == way_id else None

    def where(self, i: int) -> tuple[float, float]:
        lat, lon = self.coords[int(self.pointers[i])] if self.pointers[i] < len(self.coords) else (0.0, 0.0)
        return float(lat), float(lon)

    def name(self, i: int) -> str:
        return self.tags[i].get("name") or self.tags[i].get("ref") or ""

    @cached_property
    def rules(self) -> list[list[ConditionalRule]]:
        return [parse_rules(tags).rules for tags in self.tags]

    @cached_property
    def _slots(self) -> list[tuple[ConditionalRule, tuple[float, float]]]:
        """Each distinct time condition with a place of its way (its zone and holidays)."""
        seen: dict[tuple[str, float, float], tuple[ConditionalRule, tuple[float, float]]] = {}
        for i, rules in enumerate(self.rules):
            where = self.where(i)
            for rule in rules:
                if rule.condition.hours is not None:
                    seen.setdefault((rule.condition.hours, round(where[0], 2), round(where[1], 2)), (rule, where))
        return list(seen.values())

    @cached_property
    def _nodes(self) -> cKDTree:
        """The timed ways' nodes on the local plane (`metres`), built on first use."""
        return cKDTree(metres(np.asarray(self.coords[:, 0]), np.asarray(self.coords[:, 1])))

    def touches(self, lat: np.ndarray, lon: np.ndarray) -> bool:
        """Whether a line (its vertices) passes a timed way's node: only then are its ways looked
        up (a trace_attributes call, 5 ms of a Heidelberg route's 18 at load 5)."""
        if not len(self.coords) or not len(lat):
            return False
        distance, _ = self._nodes.query(metres(lat, lon), distance_upper_bound=ON_NODE_M)
        return bool(np.isfinite(distance).any())

    def near(self, points: Sequence[LatLon]) -> bool:
        """Whether a timed way's node lies in the points' box widened by NEAR_MARGIN_M (or a
        quarter of its diagonal, if more): where routes between them run."""
        if not len(self.coords) or not points:
            return False
        south, north = min(p.lat for p in points), max(p.lat for p in points)
        west, east = min(p.lon for p in points), max(p.lon for p in points)
        diagonal = haversine_m(LatLon(south, west), LatLon(north, east))
        margin = max(NEAR_MARGIN_M, diagonal / 4) / 111_320.0  # degrees of latitude
        widen = margin / max(0.05, math.cos(math.radians((south + north) / 2)))
        lat, lon = self.coords[:, 0], self.coords[:, 1]
        inside = (lat >= south - margin) & (lat <= north + margin) & (lon >= west - widen) & (lon <= east + widen)
        return bool(inside.any())

    def at(self, i: int, vehicle: str, when: datetime, size: dict[str, float] | None) -> WayAt:
        """The way's rules for `vehicle` at `when`: of one key's rules, the right-most that holds
        (time_rules.tags_at); closed as Valhalla reads them (`EvaluateRestrictions`: a held
        closing rule, or opening rules of which none holds)."""
        keys, where = keys_of(vehicle), self.where(i)
        mine = [rule for rule in self.rules[i] if rule.key in keys]
        with self._lock:
            holds = [self.table.holds(rule.condition, when, where, size) for rule in mine]
        winners: dict[str, ConditionalRule] = {}
        for rule, held in zip(mine, holds, strict=True):
            if held:
                winners[rule.key] = rule
        access = [rule for rule in mine if rule.key != "maxspeed"]
        held_access = [rule for rule in winners.values() if rule.key != "maxspeed"]
        closed = any(rule.value not in OPEN_VALUES for rule in held_access) or (
            not held_access and any(rule.value in OPEN_VALUES for rule in access)
        )
        return WayAt(list(winners.values()), closed)

    def met(
        self, vehicle: str, size: dict[str, float] | None, passes: Iterable[tuple[int, str, datetime]]
    ) -> list[TimeRuleMet]:
        """The rules that held where a route or trace drove (way id, its name, when reached):
        each way and rule once, when first met; a way driven while closed says so."""
        found: dict[tuple[int, str], TimeRuleMet] = {}
        for way_id, name, when in passes:
            i = self.position(way_id)
            if i is None:
                continue
            state = self.at(i, vehicle, when, size)
            road = name or self.name(i)
            for rule in state.held:
                found.setdefault((way_id, rule.text), TimeRuleMet(way_id, road, rule.tag, effect(rule, vehicle), when))
            if state.closed and not state.held:
                for rule in (r for r in self.rules[i] if r.key in keys_of(vehicle) and r.key != "maxspeed"):
                    text = f"does not hold, so closed to {vehicle}: driven while closed"
                    found.setdefault((way_id, rule.text), TimeRuleMet(way_id, road, rule.tag, text, when))
        return list(found.values())

    def next_change(self, when: datetime) -> datetime:
        """When any rule by time on the map next starts or stops to hold after `when` (for any
        vehicle); a year on when none does."""
        horizon = when + HORIZON
        with self._lock:
            changes = [self.table.next_change(rule.condition, when, where) for rule, where in self._slots]
        return min([c for c in changes if c is not None and c < horizon], default=horizon)

    def next_opening(self, i: int, vehicle: str, when: datetime, size: dict[str, float] | None) -> datetime | None:
        """When the way next opens to `vehicle` after `when` (None: not within a year)."""
        where, at = self.where(i), when
        conditions = [rule.condition for rule in self.rules[i] if rule.key in keys_of(vehicle)]
        for _ in range(MAX_CHANGES):
            with self._lock:
                changes = [self.table.next_change(c, at, where) for c in conditions]
            later = [c for c in changes if c is not None and c > at]
            if not later:
                return None
            at = min(later)
            if not self.at(i, vehicle, at, size).closed:
                return at
        return None

    def windows(self, i: int, vehicle: str, start: datetime, end: datetime, size: dict[str, float] | None) -> list[Window]:
        """When the way is open to `vehicle` between `start` and `end`: its rules' changes in
        order, each evaluated (a window's bounds are rule changes, as in `next_opening`)."""
        where = self.where(i)
        conditions = [rule.condition for rule in self.rules[i] if rule.key in keys_of(vehicle)]
        opened = None if self.at(i, vehicle, start, size).closed else start
        windows: list[Window] = []
        at = start
        for _ in range(MAX_CHANGES):
            with self._lock:
                changes = [c for condition in conditions if (c := self.table.next_change(condition, at, where)) is not None]
            later = [c for c in changes if c > at]
            if not later or min(later) >= end:
                break
            at = min(later)
            usable = not self.at(i, vehicle, at, size).closed
            if usable and opened is None:
                opened = at
            elif not usable and opened is not None:
                windows.append((opened, at))
                opened = None
        if opened is not None:
            windows.append((opened, end))
        return windows

    def limits_access(self, i: int, vehicle: str) -> bool:
        """Whether the way has a rule by time that can close it to `vehicle` (not a speed limit alone)."""
        return any(rule.key in keys_of(vehicle) and rule.key != "maxspeed" for rule in self.rules[i])
