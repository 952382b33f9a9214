"""The fields both products' bodies share, read and written: a coordinate in decimal degrees, a
number (never a JSON true/false), startTime and the times of the answers (no aiohttp here)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from common.errors import ParameterErrors
from common.geo import LatLon
from common.params import parse_instant, short


def parse_coordinate(value: Any, where: str, errors: ParameterErrors) -> LatLon | None:
    if not isinstance(value, dict):
        errors.add(where, "is required: an object {lat, lon} in decimal degrees")
        return None
    lat = parse_degrees(value.get("lat"), f"{where}.lat", 90.0, errors)
    lon = parse_degrees(value.get("lon"), f"{where}.lon", 180.0, errors)
    return LatLon(lat, lon) if lat is not None and lon is not None else None


def is_number(value: Any) -> bool:
    # JSON true/false arrive as bool, which Python counts as int: they are not numbers here.
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_degrees(value: Any, where: str, limit: float, errors: ParameterErrors) -> float | None:
    if value is None:
        errors.add(where, f"is required: a number between -{limit:g} and {limit:g}")
        return None
    if not is_number(value) or not math.isfinite(value):
        errors.add(where, f"must be a number between -{limit:g} and {limit:g}, got {short(value)}")
        return None
    if not -limit <= value <= limit:
        errors.add(where, f"must be between -{limit:g} and {limit:g}, got {value}")
        return None
    return float(value)


def parse_start_time(raw: str | None, now: datetime, errors: ParameterErrors) -> datetime:
    if raw is None:
        return now
    return parse_instant(raw, "startTime", errors) or now


def iso(moment: datetime) -> str:
    """Rounded to the second (road durations are estimates), keeping the start time's offset."""
    rounded = (moment + timedelta(microseconds=500_000)).replace(microsecond=0)
    return rounded.isoformat(timespec="seconds")
