"""The values a fleet body's items share (no aiohttp here): ids, amounts, skills, time windows
and moments, read against the parse's `Context`; objects with their fields checked."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from common.errors import ParameterErrors
from common.params import parse_whole, short
from optimize_service.fleet.model import MAX_AMOUNT, MAX_HORIZON_S, MAX_ID_LENGTH, MAX_SKILLS, MAX_WINDOWS, Window
from optimize_service.formats import parse_start_time

WINDOW_FIELDS = {"start", "end"}


class Context:
    """What every field's parser needs: the violations so far, the start time and the number
    of capacity dimensions (the first list of amounts sent sets it)."""

    def __init__(self, errors: ParameterErrors, start_time: datetime, dimensions: int) -> None:
        self.errors = errors
        self.start_time = start_time
        self.dimensions = dimensions
        self.depot_ids: dict[str, int] = {}  # the named depots' ids → their index
        self.committed: dict[str, list[Any]] = {}  # "vehicles[i].current" → its committed ids as sent


def open_object(item: Any, where: str, allowed: set[str], shape: str, errors: ParameterErrors) -> int | None:
    """Before an object's fields are read: its unknown keys refused, and the count of violations
    so far (more after its fields: the object is refused); None when `item` is no object (`shape`
    says what it must be, added as a violation)."""
    if not isinstance(item, dict):
        errors.add(where, shape)
        return None
    before = len(errors.violations)
    check_keys(item, allowed, where, errors)
    return before


def check_keys(item: dict[str, Any], allowed: set[str], where: str | None, errors: ParameterErrors) -> None:
    for key in item:
        if key not in allowed:
            name = f"{where}.{key}" if where else str(key)
            errors.add(name[:120], f"is not a known field (known: {', '.join(sorted(allowed))})")


def parse_id(value: Any, where: str, errors: ParameterErrors) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_LENGTH:
        errors.add(where, f"is required: a non-blank string of at most {MAX_ID_LENGTH} characters, got {short(value)}")
        return ""
    return value


def parse_amount(value: Any, where: str, ctx: Context, *, default: int) -> tuple[int, ...]:
    """A list of whole numbers, one per capacity dimension; missing: `default` in each."""
    if value is None:
        return (default,) * ctx.dimensions
    if not isinstance(value, list) or len(value) != ctx.dimensions:
        ctx.errors.add(
            where,
            f"must be an array of {ctx.dimensions} whole numbers, one per capacity dimension "
            f"(as many as the first capacity, demand or amount sent), got {short(value)}",
        )
        return (default,) * ctx.dimensions
    parsed = [parse_whole(v, f"{where}[{i}]", 0, MAX_AMOUNT, ctx.errors, default=0) for i, v in enumerate(value)]
    return tuple(v or 0 for v in parsed)


def parse_skills(value: Any, where: str, errors: ParameterErrors) -> frozenset[str]:
    if value is None:
        return frozenset()
    good = isinstance(value, list) and len(value) <= MAX_SKILLS
    if not good or not all(isinstance(s, str) and s.strip() and len(s) <= MAX_ID_LENGTH for s in value):
        errors.add(where, f"must be an array of at most {MAX_SKILLS} non-blank strings, got {short(value)}")
        return frozenset()
    return frozenset(value)


def whole_horizon() -> Window:
    return Window(0, MAX_HORIZON_S)


def parse_windows(value: Any, where: str, ctx: Context, *, required: bool) -> tuple[Window, ...]:
    """Sorted, overlapping ones merged; missing (when allowed): the whole horizon."""
    if value is None and not required:
        return (whole_horizon(),)
    if not isinstance(value, list) or not value or len(value) > MAX_WINDOWS:
        ctx.errors.add(where, f"must be an array of 1 to {MAX_WINDOWS} time windows {{start, end}}")
        return (whole_horizon(),)
    windows = [parse_window(item, f"{where}[{i}]", ctx) for i, item in enumerate(value)]
    return merged([w for w in windows if w is not None])


def merged(windows: list[Window]) -> tuple[Window, ...]:
    result: list[Window] = []
    for window in sorted(windows, key=lambda w: w.start_s):
        if result and window.start_s <= result[-1].end_s:
            result[-1] = Window(result[-1].start_s, max(result[-1].end_s, window.end_s))
        else:
            result.append(window)
    return tuple(result) or (whole_horizon(),)


def parse_window(item: Any, where: str, ctx: Context) -> Window | None:
    if open_object(item, where, WINDOW_FIELDS, "must be an object {start?, end?} of ISO 8601 date-times with a UTC offset", ctx.errors) is None:
        return None
    opens = parse_moment(item.get("start"), f"{where}.start", ctx, default=0)
    closes = parse_moment(item.get("end"), f"{where}.end", ctx, default=MAX_HORIZON_S)
    if opens is None or closes is None:
        return None
    if closes < opens:
        ctx.errors.add(where, f"closes ({item.get('end')}) before it opens ({item.get('start')})")
        return None
    if closes < 0:
        ctx.errors.add(f"{where}.end", f"closes before startTime ({ctx.start_time.isoformat()})")
        return None
    return Window(max(0, opens), closes)


def parse_moment(value: Any, where: str, ctx: Context, *, default: int) -> int | None:
    """Whole seconds after startTime (negative: before it), or None after a violation."""
    if value is None:
        return default
    moment = parse_start_time(value, ctx.start_time, probe := ParameterErrors()) if isinstance(value, str) else None
    if moment is None or probe:
        ctx.errors.add(where, f"must be an ISO 8601 date-time with a UTC offset (e.g. 2026-11-23T09:00:00+02:00), got {short(value)}")
        return None
    seconds = math.floor((moment - ctx.start_time).total_seconds())
    if seconds > MAX_HORIZON_S:
        ctx.errors.add(where, f"must lie within {MAX_HORIZON_S // 86_400} days after startTime, got {short(value)}")
        return None
    return seconds
