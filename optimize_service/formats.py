"""The fields both products' bodies share, read and written: startTime and the times of the
answers (no aiohttp here; points and numbers are common.params')."""

from __future__ import annotations

from datetime import datetime, timedelta

from common.errors import ParameterErrors
from common.params import parse_instant


def parse_start_time(raw: str | None, now: datetime, errors: ParameterErrors) -> datetime:
    if raw is None:
        return now
    return parse_instant(raw, "startTime", errors) or now


def iso(moment: datetime) -> str:
    """Rounded to the second (road durations are estimates), keeping the start time's offset."""
    rounded = (moment + timedelta(microseconds=500_000)).replace(microsecond=0)
    return rounded.isoformat(timespec="seconds")
