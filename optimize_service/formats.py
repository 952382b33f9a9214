"""The fields both products' bodies share, read and written: startTime and the times of the
answers (no aiohttp here; points and numbers are common.params')."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from common.errors import ParameterErrors
from common.params import number_or_nan, parse_instant, short
from optimize_service.costs import Allowance, tier_cap_message


def parse_start_time(raw: str | None, now: datetime, errors: ParameterErrors) -> datetime:
    if raw is None:
        return now
    return parse_instant(raw, "startTime", errors) or now


def parse_time_limit(
    value: Any, text: bool, least: float, most: float, errors: ParameterErrors, allowance: Allowance | None
) -> float | None:
    """`timeLimit` in seconds from `least` to `most`, and at most what the caller's tier allows:
    a JSON number, or (`text`) a query's text."""
    if value is None:
        return None
    seconds = number_or_nan(value) if text or not isinstance(value, str) else math.nan
    if not least <= seconds <= most:  # NaN fails too
        errors.add("timeLimit", f"must be a number of seconds between {least} and {most:g}, got {short(value)}")
        return None
    if allowance is not None and seconds > allowance.max_time_limit_s:
        errors.add("timeLimit", tier_cap_message(least, allowance, value))
        return None
    return seconds


def iso(moment: datetime) -> str:
    """Rounded to the second (road durations are estimates), keeping the start time's offset."""
    rounded = (moment + timedelta(microseconds=500_000)).replace(microsecond=0)
    return rounded.isoformat(timespec="seconds")
