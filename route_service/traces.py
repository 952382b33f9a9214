"""A GPS trace as POST /v1/match receives it, validated into a typed query (no aiohttp here):
JSON `{"points": [{"lat", "lon", "time"?}…], "vehicle"?, "type"?, "provider"?}` or GPX text.

Times are optional, for all points or none: seconds since the epoch (JSON numbers) or ISO 8601
with an offset (JSON strings, GPX `<time>`), never decreasing. GPX is read with the standard
defusedxml (no DTD, no entity expansion, no external entities): track points (`trkpt`), else
route points (`rtept`), in document order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree
from defusedxml import DefusedXmlException

from common.errors import MalformedBody, ParameterErrors, TraceTooLong
from common.geo import LatLon
from common.params import number_or_nan, parse_degrees

MAX_TRACE_POINTS = 10_000
MIN_TRACE_POINTS = 2
GPX_MEDIA_TYPES = frozenset({"application/gpx+xml", "application/xml", "text/xml"})


# The GPS error OSRM is told to expect, unless the trace says (`gpsAccuracy`): 20 m matched
# 95-98 % of points of noisy city traces to the right road, 10 m 93-98 % (bench/match.py).
DEFAULT_GPS_ACCURACY_M = 20.0
GPS_ACCURACY_RANGE_M = (1.0, 100.0)


@dataclass(frozen=True)
class Trace:
    points: list[LatLon]
    timestamps: list[int] | None
    options: dict[str, str]  # vehicle, type, provider as given
    gps_accuracy_m: float = DEFAULT_GPS_ACCURACY_M


def check_length(count: int) -> None:
    if count > MAX_TRACE_POINTS:
        raise TraceTooLong(
            f"{count} points sent, at most {MAX_TRACE_POINTS} are matched per request", parameter="points"
        )


# ---------------------------------------------------------------- JSON

MAX_TIMESTAMP = 32_503_680_000  # year 3000
TRACE_FIELDS = frozenset({"points", "vehicle", "type", "provider", "gpsAccuracy"})


def trace_from_json(body: Any, errors: ParameterErrors) -> Trace:
    if not isinstance(body, dict):
        raise MalformedBody("the body must be a JSON object {points: [{lat, lon, time?}…], vehicle?, type?}")
    for key in sorted(set(body) - TRACE_FIELDS)[:10]:
        errors.add(str(key)[:40], f"is not a field of this body (those are {', '.join(sorted(TRACE_FIELDS))})")
    raw = body.get("points")
    if isinstance(raw, list):
        check_length(len(raw))
    if not isinstance(raw, list) or len(raw) < MIN_TRACE_POINTS:
        errors.add("points", f"must be a list of {MIN_TRACE_POINTS} to {MAX_TRACE_POINTS} points {{lat, lon, time?}}")
        return Trace([], None, {})
    points: list[LatLon] = []
    times: list[int | None] = []
    for index, item in enumerate(raw):
        if not trace_point_fast(item, points, times):
            trace_point(index, item, points, times, errors)
    options = {k: str(body[k]) for k in ("vehicle", "type", "provider") if body.get(k) is not None}
    return Trace(points, checked_times(times, errors), options, gps_accuracy(body.get("gpsAccuracy"), errors))


def trace_point_fast(item: Any, points: list[LatLon], times: list[int | None]) -> bool:
    """The common point (float degrees in range, a whole-second time or none) read without
    building its name: a 10 000-point trace's validation took 28 ms of the service's loop with
    a name per point, a third of it here (measured 2026-11-26). False: read it with messages."""
    if type(item) is not dict:
        return False
    lat, lon, given = item.get("lat"), item.get("lon"), item.get("time")
    if type(lat) is not float or type(lon) is not float or not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
        return False
    if given is not None and not (type(given) is int and 0 <= given < MAX_TIMESTAMP):
        return False
    points.append(LatLon(lat, lon))
    times.append(given)
    return True


def trace_point(index: int, item: Any, points: list[LatLon], times: list[int | None], errors: ParameterErrors) -> None:
    where = f"points[{index}]"
    if not isinstance(item, dict) or not {"lat", "lon"} <= item.keys():
        errors.add(where, "must be an object {lat, lon, time?}")
        return
    lat = parse_degrees(item["lat"], f"{where}.lat", 90, errors)
    lon = parse_degrees(item["lon"], f"{where}.lon", 180, errors)
    if lat is not None and lon is not None:
        points.append(LatLon(lat, lon))
    given = item.get("time")
    times.append(None if given is None else read_time(given, f"{where}.time", errors))


def gps_accuracy(value: Any, errors: ParameterErrors) -> float:
    """`gpsAccuracy` (m): a JSON number or query text; the default when absent."""
    if value is None:
        return DEFAULT_GPS_ACCURACY_M
    low, high = GPS_ACCURACY_RANGE_M
    number = number_or_nan(value)
    if not low <= number <= high:  # NaN fails too
        errors.add("gpsAccuracy", f"must be a number of metres from {low:g} to {high:g}")
        return DEFAULT_GPS_ACCURACY_M
    return number


def timestamp(value: Any, name: str, errors: ParameterErrors) -> int | None:
    """Seconds since the epoch: a JSON number, or ISO 8601 text with an offset."""
    if isinstance(value, bool):
        errors.add(name, "must be seconds since 1970 or ISO 8601 text with an offset")
        return None
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value < MAX_TIMESTAMP:
        return int(value)
    if isinstance(value, str) and len(value) <= 40:
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return int(parsed.timestamp())
    errors.add(name, "must be seconds since 1970 or ISO 8601 text with an offset (e.g. 2026-11-24T08:00:00Z)")
    return None


INVALID_TIME = -1  # a time given but unreadable: already reported


def read_time(value: Any, name: str, errors: ParameterErrors) -> int:
    seconds = timestamp(value, name, errors)
    return INVALID_TIME if seconds is None else seconds


def checked_times(times: list[int | None], errors: ParameterErrors) -> list[int] | None:
    """All or none; never decreasing."""
    if INVALID_TIME in times:
        return None
    given = [t for t in times if t is not None]
    if not given:
        return None
    if len(given) != len(times):
        errors.add("points", "give a time for every point or for none")
        return None
    for index in range(1, len(given)):
        if given[index] < given[index - 1]:
            errors.add(f"points[{index}].time", "must not be earlier than the previous point's")
            return None
    return given


# ---------------------------------------------------------------- GPX


def trace_from_gpx(data: bytes, options: dict[str, str], errors: ParameterErrors) -> Trace:
    """Track points of a GPX document; vehicle, type and provider come from the query."""
    try:
        root = defusedxml.ElementTree.fromstring(data, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise MalformedBody("a GPX document with a DOCTYPE or entities is refused") from exc
    except ParseError as exc:
        raise MalformedBody(f"the body is not well-formed GPX (XML): {exc}") from exc
    elements = [e for e in root.iter() if local(e.tag) == "trkpt"] or [
        e for e in root.iter() if local(e.tag) == "rtept"
    ]
    check_length(len(elements))
    if len(elements) < MIN_TRACE_POINTS:
        errors.add("points", f"the GPX document must hold {MIN_TRACE_POINTS} to {MAX_TRACE_POINTS} trkpt (or rtept)")
        return Trace([], None, options)
    points: list[LatLon] = []
    times: list[int | None] = []
    for index, element in enumerate(elements):
        where = f"points[{index}]"
        lat = gpx_number(element.get("lat"), f"{where}.lat", 90, errors)
        lon = gpx_number(element.get("lon"), f"{where}.lon", 180, errors)
        if lat is not None and lon is not None:
            points.append(LatLon(lat, lon))
        text = next((child.text for child in element if local(child.tag) == "time"), None)
        times.append(None if text is None else read_time(text, f"{where}.time", errors))
    return Trace(points, checked_times(times, errors), options, gps_accuracy(options.get("gpsAccuracy"), errors))


def local(tag: str) -> str:
    """The tag without its XML namespace (GPX 1.0 and 1.1 use different ones)."""
    return tag.rsplit("}", 1)[-1]


def gpx_number(text: str | None, name: str, limit: float, errors: ParameterErrors) -> float | None:
    try:
        value = float(text) if text is not None and len(text) <= 30 else math.nan
    except ValueError:
        value = math.nan
    return parse_degrees(value if math.isfinite(value) else None, name, limit, errors)
