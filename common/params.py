"""Parsing of query parameters into typed values, collecting every violation."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from common.errors import ParameterErrors
from common.geo import LatLon

MISSING = object()
_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")


def parse_int(
    params: Mapping[str, str], name: str, errors: ParameterErrors, *, default: int, minimum: int, maximum: int
) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    text = raw.strip()
    # ASCII digits with at most one sign: str.isdigit() also accepts "²" and "①", and
    # lstrip("+-") accepts "+-1", all of which int() then refuses.
    if not _INTEGER.fullmatch(text):
        errors.add(name, f"must be an integer between {minimum} and {maximum}, got {raw[:40]!r}")
        return default
    value = int(text)
    if not minimum <= value <= maximum:
        errors.add(name, f"must be between {minimum} and {maximum}, got {value}")
        return default
    return value


def parse_choice(
    params: Mapping[str, str], name: str, errors: ParameterErrors, *, default: str, choices: tuple[str, ...]
) -> str:
    raw = params.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in choices:
        errors.add(name, f"must be one of {', '.join(choices)}, got {raw[:40]!r}")
        return default
    return value


def parse_latlon_text(text: str) -> LatLon | str:
    """A `<lat>,<lon>` pair, or the message saying why it is not one."""
    parts = text.split(",")
    if len(parts) != 2:
        return "must be '<lat>,<lon>' (two numbers separated by a comma)"
    try:
        lat, lon = float(parts[0]), float(parts[1])
    except ValueError:
        return "must be '<lat>,<lon>' with decimal numbers"
    if not (math.isfinite(lat) and math.isfinite(lon)):
        return "must be finite numbers"
    if not -90 <= lat <= 90:
        return f"latitude must be between -90 and 90, got {lat}"
    if not -180 <= lon <= 180:
        return f"longitude must be between -180 and 180, got {lon}"
    return LatLon(lat, lon)


def parse_latlon(params: Mapping[str, str], name: str, errors: ParameterErrors) -> LatLon | None:
    raw = params.get(name)
    if raw is None or not raw.strip():
        errors.add(name, "is required, as '<lat>,<lon>'")
        return None
    parsed = parse_latlon_text(raw.strip())
    if isinstance(parsed, str):
        errors.add(name, parsed)
        return None
    return parsed


def number_or_nan(value: Any) -> float:
    """A JSON number or a query text as a float; NaN for anything else (a boolean, a list,
    unreadable or overlong text), so one range check (`low <= x <= high`, false for NaN)
    refuses every bad value."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return math.nan
    if isinstance(value, str) and len(value) > 40:
        return math.nan
    try:
        return float(value)
    except (ValueError, OverflowError):
        return math.nan
