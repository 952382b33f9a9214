"""Conditional restrictions: OSM's rules that hold only at some times (issue 33; no aiohttp here).

OSM writes them as `<key>:conditional = <value> @ <condition>[; <value> @ <condition> …]`, for
example `motor_vehicle:conditional = destination @ (Mo-Sa 06:00-11:00)` on Heidelberg's old
town streets or `hgv:conditional = no @ (19:00-06:00)`. A condition is an opening-hours time
expression, a vehicle's size or weight (`weight>7.5`), or both joined by `AND`.

What is routed by them: the access keys of every vehicle (`common.vehicles`: `access`,
`vehicle`, `motor_vehicle`, `motorcar`, `hgv`, `goods`, `bicycle`, `foot`) and `maxspeed`. At a
time, `tags_at` writes each rule that holds over its key (`timed_index`): a rule means what
the same plain tag would mean.

Time expressions are parsed by opening-hours-py (the Rust `opening-hours` crate), which also
knows each country's public holidays (`PH`) and the time zone, both from the way's coordinates.
Measured on the shared extracts' 271 time conditions (2026-11-27): 236 parsed in 5 ms, the
others are conditions not about time (`wet`, `snow`, `destination`) or invalid (`24 h`);
evaluating one takes 3 µs. What cannot be evaluated is counted at import and never applied.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from zoneinfo import ZoneInfo

from opening_hours import OpeningHours

from common.vehicles import VEHICLE_TABLE
from route_service.model import TruckDimensions

ACCESS_KEYS = tuple(dict.fromkeys(key for vehicle in VEHICLE_TABLE.values() for key in vehicle.access_keys))
TIMED_KEYS = (*ACCESS_KEYS, "maxspeed")
CONDITIONAL_KEYS = tuple(f"{key}:conditional" for key in TIMED_KEYS)
# Values that let a vehicle in only to reach a place inside (issue 33, item 3).
DESTINATION_VALUES = frozenset({"destination", "delivery"})
# A vehicle's size and weight as conditions name them (`weight>7.5`, `length>12 m`).
LIMIT = re.compile(r"^(weight|maxweight|length|height|width|axleload|wheels)\s*(<=|>=|<|>|=)\s*([0-9]+(?:[.,][0-9]+)?)\s*(t|m)?$")
# A car's size where a condition asks (a truck's come from the request): a large car.
# opening-hours-py takes an aware time only in a named zone (a fixed offset has no `key`).
UTC_ZONE = ZoneInfo("UTC")
CAR_SIZE = {"weight": 2.5, "length": 5.0, "height": 2.0, "width": 2.0, "axleload": 1.5, "wheels": 4.0}


def size_of(vehicle: str, truck: TruckDimensions | None) -> dict[str, float] | None:
    """The size conditions compare with (`weight>7.5`): a truck's (the request's, else the
    default truck's), a large car's, none for a bicycle or a walker."""
    row = VEHICLE_TABLE[vehicle]
    if row.takes_dimensions:
        height, width, length, weight, axle = (truck or TruckDimensions()).with_defaults()
        return {"height": height, "width": width, "length": length, "weight": weight, "axleload": axle, "wheels": 4.0}
    return dict(CAR_SIZE) if row.motorized else None


@dataclass(frozen=True)
class Condition:
    """When a rule holds: a time expression (None: at any time) and limits on the vehicle."""

    hours: str | None
    limits: tuple[tuple[str, str, float], ...] = ()


@dataclass(frozen=True)
class ConditionalRule:
    key: str  # the plain key it sets: `motor_vehicle`
    value: str  # `destination`
    condition: Condition
    text: str  # as OSM writes it: `destination @ (Mo-Sa 06:00-11:00)`

    @property
    def tag(self) -> str:
        """The rule as its tag: `motor_vehicle:conditional=destination @ (Mo-Sa 06:00-11:00)`."""
        return f"{self.key}:conditional={self.text}"


@dataclass
class ParsedRules:
    """A way's rules, and the parts that cannot be applied (for the import's counts)."""

    rules: list[ConditionalRule] = field(default_factory=list)
    not_about_time: list[str] = field(default_factory=list)  # `wet`, `snow`, `destination` …
    unparseable: list[str] = field(default_factory=list)


def split_outside_parentheses(text: str, separator: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def parse_rules(tags: Mapping[str, str]) -> ParsedRules:
    """Every routing rule of a way's conditional tags."""
    parsed = ParsedRules()
    for key in TIMED_KEYS:
        text = tags.get(f"{key}:conditional")
        if text:
            for part in split_outside_parentheses(text, ";"):
                parse_part(key, part, parsed)
    return parsed


def parse_part(key: str, part: str, parsed: ParsedRules) -> None:
    value, at, condition_text = part.partition("@")
    if not at or not value.strip():
        parsed.unparseable.append(part)
        return
    condition_text = condition_text.strip()
    if condition_text.startswith("(") and condition_text.endswith(")"):
        condition_text = condition_text[1:-1].strip()
    hours: list[str] = []
    limits: list[tuple[str, str, float]] = []
    for atom in re.split(r"\s+AND\s+", condition_text, flags=re.IGNORECASE):
        limit = LIMIT.match(atom.strip().lower())
        if limit:
            limits.append((limit.group(1).removeprefix("max"), limit.group(2), float(limit.group(3).replace(",", "."))))
        elif time_expression(atom.strip()):
            hours.append(atom.strip())
        elif re.fullmatch(r"[a-z_ ]+", atom.strip().lower()):
            parsed.not_about_time.append(part)
            return
        else:
            parsed.unparseable.append(part)
            return
    if len(hours) > 1:
        parsed.unparseable.append(part)  # two time expressions joined by AND: not written in OSM
        return
    condition = Condition(hours[0] if hours else None, tuple(limits))
    parsed.rules.append(ConditionalRule(key, value.strip(), condition, part))


@cache
def time_expression(text: str) -> bool:
    """Whether opening-hours-py reads the text as a time expression."""
    if not re.search(r"[0-9]|\b(Mo|Tu|We|Th|Fr|Sa|Su|PH|SH|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b", text):
        return False  # a bare word (`wet`) parses as a comment-like rule; it is no time
    try:
        OpeningHours(text)
    except (SyntaxError, ValueError):
        return False
    except Exception:  # opening_hours.ParserError is no SyntaxError subclass in every build
        return False
    return True


class TimeTable:
    """Evaluates conditions at a place: one parsed expression per (expression, place), with the
    place's time zone and public holidays (opening-hours-py finds both from the coordinates)."""

    def __init__(self) -> None:
        self._expressions: dict[tuple[str, float, float], OpeningHours] = {}

    def holds(self, condition: Condition, at: datetime, where: tuple[float, float],
              size: Mapping[str, float] | None) -> bool:  # fmt: skip
        if condition.limits and not limits_hold(condition.limits, size):
            return False
        return condition.hours is None or self.expression(condition.hours, where).is_open(at.astimezone(UTC_ZONE))

    def next_change(self, condition: Condition, at: datetime, where: tuple[float, float]) -> datetime | None:
        """When a time condition next starts or stops to hold (None: not within a year, or no time)."""
        if condition.hours is None:
            return None
        return self.expression(condition.hours, where).next_change(at.astimezone(UTC_ZONE))

    def expression(self, hours: str, where: tuple[float, float]) -> OpeningHours:
        # coordinates to ~1 km: one time zone and country
        key = (hours, round(where[0], 2), round(where[1], 2))
        found = self._expressions.get(key)
        if found is None:
            found = OpeningHours(hours, coords=where, max_interval_days=366)
            self._expressions[key] = found
        return found


def limits_hold(limits: Iterable[tuple[str, str, float]], size: Mapping[str, float] | None) -> bool:
    """Whether a vehicle of this size meets every limit (no size: a bicycle or a walker, whom
    no weight or length condition names)."""
    if size is None:
        return False
    compare = {">": float.__gt__, "<": float.__lt__, ">=": float.__ge__, "<=": float.__le__, "=": float.__eq__}
    return all(compare[op](float(size.get(dimension, 0.0)), bound) for dimension, op, bound in limits)


def tags_at(
    tags: Mapping[str, str], rules: Iterable[ConditionalRule], holds: Iterable[bool]
) -> tuple[dict[str, str], list[ConditionalRule]]:
    """The way's tags with the rules that hold written over their keys (of one key's rules the
    right-most that holds, as OSM's wiki reads them), and those rules."""
    winners: dict[str, ConditionalRule] = {}
    for rule, held in zip(rules, holds, strict=True):
        if held:
            winners[rule.key] = rule
    out = dict(tags)
    out.update({key: rule.value for key, rule in winners.items()})
    return out, list(winners.values())
