"""Parsing of query parameters (and uploaded text) into typed values, collecting every violation."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from common.errors import ApiError, ParameterErrors
from common.geo import LatLon
from common.vehicles import TRUCK_DIMENSIONS, VEHICLE_TABLE
from common.vocabulary import DEFAULT_ROUTE_TYPE, DEFAULT_VEHICLE, ROUTE_TYPES, VEHICLES

MISSING = object()
# An unencoded '+' in a query string arrives as a space: "…T08:00:00 05:30" means "+05:30".
_SPACE_FOR_PLUS = re.compile(r"^(\d{4}-?\d{2}-?\d{2}T[\d:.,]+) (\d{2}(:?\d{2})?)$")
INSTANT_EXAMPLE = "2025-03-01T08:00:00+01:00"
# The calendar ends at 9999-12-31: a start must leave room for the longest tour (1000 stops
# with a day of service each and long legs: decades at worst) before its arrival times
# overflow. Generous bounds on both sides, not a statement about useful dates.
EARLIEST_INSTANT = datetime(1900, 1, 1, tzinfo=UTC)
LATEST_INSTANT = datetime(9000, 1, 1, tzinfo=UTC)
_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")
# A decimal number in ASCII digits. float() alone also takes '1_0', 'nan', 'inf' and other
# scripts' digits (Arabic-Indic '10' is 10.0), and so does a pattern built on \d, which matches them too.
DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?")


def parse_decimal(text: str) -> float | None:
    """`text` as a number when it is one written in ASCII digits, else None."""
    stripped = text.strip()
    if len(stripped) > 40 or not DECIMAL.fullmatch(stripped):
        return None
    value = float(stripped)
    return value if math.isfinite(value) else None  # '1e999' is inf


def json_kind(value: Any) -> str:
    """What a client's JSON value is, in JSON's words (never a Python type name like NoneType)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def parse_whole(
    value: Any, where: str, low: int, high: int, errors: ParameterErrors, *,
    default: int | None, required: bool = True, text: bool = False,
) -> int | None:  # fmt: skip
    """A whole number from `low` to `high`: a JSON number (1 and 1.0 alike) or, with `text`, a
    query text; missing: `default`, a violation when that is None and the number `required`."""
    if value is None:
        if default is None and required:
            errors.add(where, f"is required: a whole number from {low} to {high}")
        return default
    number = whole_of(value, text)
    if number is None or not low <= number <= high:
        errors.add(where, f"must be a whole number from {low} to {high}, got {short(value if number is None else number)}")
        return default
    return number


def whole_of(value: Any, text: bool) -> int | None:
    if text and isinstance(value, str):
        # ASCII digits with at most one sign: str.isdigit() also accepts "²" and "①", and
        # lstrip("+-") accepts "+-1", all of which int() then refuses.
        stripped = value.strip()
        return int(stripped) if _INTEGER.fullmatch(stripped) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, float) and math.isfinite(value) and value.is_integer() else None


def parse_latlon_text(text: str) -> LatLon | str:
    """A `<lat>,<lon>` pair, or the message saying why it is not one."""
    parts = text.split(",")
    if len(parts) != 2:
        return "must be '<lat>,<lon>' (two numbers separated by a comma)"
    lat, lon = parse_decimal(parts[0]), parse_decimal(parts[1])
    if lat is None or lon is None:
        return "must be '<lat>,<lon>' with decimal numbers (ASCII digits, '.' as the decimal point)"
    if not -90 <= lat <= 90:
        return f"latitude must be between -90 and 90, got {lat}"
    if not -180 <= lon <= 180:
        return f"longitude must be between -180 and 180, got {lon}"
    return LatLon(lat, lon)


def number_or_nan(value: Any) -> float:
    """A JSON number or a query text as a float; NaN for anything else (a boolean, a list,
    unreadable or overlong text), so one range check (`low <= x <= high`, false for NaN)
    refuses every bad value."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return math.nan
    if isinstance(value, str):
        parsed = parse_decimal(value)
        return math.nan if parsed is None else parsed
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return math.nan


BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def short(value: Any) -> str:
    """A bad value echoed in a message, at most 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_truck_dimensions(
    source: Mapping[str, Any], vehicle: str, errors: ParameterErrors, where: str = "", *, text: bool = True
) -> dict[str, float] | None:
    """Truck dimensions by their API names (TRUCK_DIMENSIONS: `height`, `width`, `length` in m,
    `weight`, `axleLoad` in t), each above 0 and at most its maximum, for a vehicle that takes
    dimensions only; None when none is given. `where` prefixes the violations' names
    (`truck.`); `text`: query texts are read as numbers (else a JSON number is required)."""
    given = {name: source[name] for name in TRUCK_DIMENSIONS if source.get(name) is not None}
    if not given:
        return None
    values: dict[str, float] = {}
    for name, raw in given.items():
        _, most, unit = TRUCK_DIMENSIONS[name]
        number = number_or_nan(raw) if text or is_number(raw) else math.nan
        if vehicle not in VEHICLE_TABLE or not VEHICLE_TABLE[vehicle].takes_dimensions:
            errors.add(where + name, "applies only to vehicle=truck")
        elif not 0 < number <= most:
            errors.add(where + name, f"must be a number of {unit} above 0 and at most {most:g}, got {short(raw)}")
        else:
            values[name] = number
    return values


def is_number(value: Any) -> bool:
    # JSON true/false arrive as bool, which Python counts as int: they are not numbers here.
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_degrees(value: Any, name: str, limit: float, errors: ParameterErrors) -> float | None:
    """A latitude (`limit` 90) or longitude (180) sent as a JSON number: finite and in range."""
    if value is None:
        errors.add(name, f"is required: a number between -{limit:g} and {limit:g}")
        return None
    if not is_number(value) or not math.isfinite(value):
        errors.add(name, f"must be a number between -{limit:g} and {limit:g}, got {short(value)}")
        return None
    if not -limit <= value <= limit:
        errors.add(name, f"must be between -{limit:g} and {limit:g}, got {value:g}")
        return None
    return float(value)


def parse_point_object(value: Any, where: str, errors: ParameterErrors) -> LatLon | None:
    """`{"lat": …, "lon": …}` in decimal degrees, each number named by its field (`stops[3].lat`)."""
    if not isinstance(value, dict):
        errors.add(where, "is required: an object {lat, lon} in decimal degrees")
        return None
    lat = parse_degrees(value.get("lat"), f"{where}.lat", 90.0, errors)
    lon = parse_degrees(value.get("lon"), f"{where}.lon", 180.0, errors)
    return LatLon(lat, lon) if lat is not None and lon is not None else None


def parse_point_value(value: Any, where: str, errors: ParameterErrors) -> LatLon | None:
    """A point in a JSON body: `{"lat": …, "lon": …}` (parse_point_object) or a "<lat>,<lon>" text."""
    if not isinstance(value, str):
        return parse_point_object(value, where, errors)
    parsed = parse_latlon_text(value.strip())
    if isinstance(parsed, str):
        errors.add(where, parsed)
        return None
    return parsed


def parse_point_list(value: Any, where: str, errors: ParameterErrors, fewest: int, most: int) -> list[LatLon]:
    """`fewest` to `most` points (parse_point_value), each wrong one named by its index
    (`sources[3].lat`), so the caller sees which one of thousands to fix."""
    if not isinstance(value, list) or not fewest <= len(value) <= most:
        errors.add(where, f"must be a list of {fewest} to {most} points {{lat, lon}}")
        return []
    points = [parse_point_value(item, f"{where}[{index}]", errors) for index, item in enumerate(value)]
    return [point for point in points if point is not None]


def parse_instant(raw: str, name: str, errors: ParameterErrors) -> datetime | None:
    """An ISO 8601 date-time with a UTC offset (`startTime`, `departureTime` …); None, with the
    violation added, when it is not one."""
    text = _SPACE_FOR_PLUS.sub(r"\1+\2", raw.strip())
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        errors.add(name, f"must be an ISO 8601 date-time with a UTC offset (e.g. {INSTANT_EXAMPLE}), got {short(raw)}")
        return None
    offset = value.utcoffset()
    if offset is None:
        errors.add(name, f"needs a UTC offset (e.g. {INSTANT_EXAMPLE} or ...Z), got {short(raw)}")
        return None
    if offset.total_seconds() % 60:  # +01:00:30.5: no time zone has one, Python alone reads it
        errors.add(name, f"needs a UTC offset in whole minutes (e.g. +01:00 or Z), got {short(raw)}")
        return None
    if not EARLIEST_INSTANT <= value < LATEST_INSTANT:
        errors.add(name, f"must be from {EARLIEST_INSTANT:%Y-%m-%d} and before {LATEST_INSTANT:%Y-%m-%d}, got {short(raw)}")
        return None
    return value


UTF8_BOM = b"\xef\xbb\xbf"


def utf8_text(body: bytes, invalid: Callable[[str], ApiError], advice: str) -> str:
    """An upload's text: UTF-8, a BOM dropped; anything else is `invalid(message)` naming the
    first bad byte and its line, and `advice` (what the client should do)."""
    if body.startswith(UTF8_BOM):
        body = body[len(UTF8_BOM) :]
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise invalid(f"byte {exc.start} (line {line}) is not valid UTF-8; {advice}") from exc


# ---------------------------------------------------------------- query parameters, declared

class QueryField[T](Protocol):
    """One query parameter of an operation, declared: its name and how its text is read. An
    operation's parameters are a tuple of them (`read_query`), each violation added to `errors`
    (all reported at once), the field's fallback value standing in for a refused one."""

    @property
    def name(self) -> str: ...

    def read(self, params: Mapping[str, str], errors: ParameterErrors) -> T: ...


def read_query(params: Mapping[str, str], fields: Sequence[QueryField[Any]], errors: ParameterErrors) -> list[Any]:
    """Every field's value, in the fields' order."""
    return [field.read(params, errors) for field in fields]


@dataclass(frozen=True)
class Whole:
    """A whole number from `low` to `high` (`parse_whole`); missing or refused: `default`."""

    name: str
    low: int
    high: int
    default: int

    def read(self, params: Mapping[str, str], errors: ParameterErrors) -> int:
        value = parse_whole(params.get(self.name), self.name, self.low, self.high, errors, default=self.default, text=True)
        return self.default if value is None else value


@dataclass(frozen=True)
class Choice[T]:
    """One of `values`' words (any case), read as its value; missing or refused: `default`."""

    name: str
    values: Mapping[str, T]
    default: T
    says: str  # what a refused value is told it must be

    def read(self, params: Mapping[str, str], errors: ParameterErrors) -> T:
        raw = params.get(self.name)
        if raw is None:
            return self.default
        value = self.values.get(raw.strip().lower(), MISSING)
        if value is MISSING:
            errors.add(self.name, f"must be {self.says}, got {raw[:40]!r}")
            return self.default
        return value  # type: ignore[return-value]


def one_of(name: str, choices: tuple[str, ...], default: str) -> Choice[str]:
    return Choice(name, {choice: choice for choice in choices}, default, f"one of {', '.join(choices)}")


def flag(name: str, default: bool) -> Choice[bool]:
    """true/false, 1/0, yes/no (any case)."""
    return Choice(name, BOOLEANS, default, "true or false")


@dataclass(frozen=True)
class Point:
    """A required `<lat>,<lon>` (`parse_latlon_text`); None when missing or refused."""

    name: str

    def read(self, params: Mapping[str, str], errors: ParameterErrors) -> LatLon | None:
        raw = params.get(self.name)
        if raw is None or not raw.strip():
            errors.add(self.name, "is required, as '<lat>,<lon>'")
            return None
        parsed = parse_latlon_text(raw.strip())
        if isinstance(parsed, str):
            errors.add(self.name, parsed)
            return None
        return parsed


@dataclass(frozen=True)
class Degrees:
    """A required latitude (`limit` 90) or longitude (180) in decimal degrees, ASCII digits only;
    0.0 when missing or refused."""

    name: str
    limit: float

    def read(self, params: Mapping[str, str], errors: ParameterErrors) -> float:
        raw = params.get(self.name)
        if raw is None or not raw.strip():
            errors.add(self.name, "is required, in decimal degrees")
            return 0.0
        value = parse_decimal(raw)
        if value is None:
            errors.add(self.name, f"must be a decimal number, got {raw[:40]!r}")
            return 0.0
        return parse_degrees(value, self.name, self.limit, errors) or 0.0


# The vehicle and route type of every operation that routes (route service and optimizer alike).
PROFILE = (one_of("vehicle", VEHICLES, DEFAULT_VEHICLE), one_of("type", ROUTE_TYPES, DEFAULT_ROUTE_TYPE))
