"""The detour file's bytes → typed lines (no aiohttp here).

Two kinds, told apart by the header (column names in any order and case):
- detour cases `id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon` → `DetourCase`s;
- a driven track `lat,lon[,time]` → `TrackPoint`s; `time` is unix seconds or ISO 8601.

Comma or semicolon separated (detected from the header), UTF-8 with or without BOM, any
line ends, quoted fields, blank lines anywhere. With semicolons a decimal comma (`49,41`)
is accepted, as spreadsheets in many locales write it. Line numbers are 1-based physical
lines with the header counted, as an editor shows them. A line that is not usable becomes
a `LineError` and the rest of the file is still read; whole-file problems raise.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from common.errors import (
    DetourEmptyFile,
    DetourFileTooLarge,
    DetourInvalidEncoding,
    DetourInvalidHeader,
    MalformedBody,
)
from common.geo import LatLon
from common.params import DECIMAL, utf8_text

MAX_BYTES = 10 * 1024 * 1024
# Bounded by time: a detour case costs one or two OSRM CH Table calls (~0.3 ms; a failed line
# a few ms more for its diagnosis), a track point a fraction of a map-matching call; 20 000
# lines are 5-25 s of CPU shared by two processes (issue 17, bench/RESULTS.md), and the gateway
# gives a detour request 120 s.
MAX_DETOUR_LINES = 20_000
MAX_TRACK_POINTS = 100_000
MAX_ID_LENGTH = 200

DETOUR_COLUMNS = ("id", "from_lat", "from_lon", "to_lat", "to_lon", "via_lat", "via_lon")
TRACK_COLUMNS = ("lat", "lon")
TIME_COLUMN = "time"
INVALID_LINE = "DETOUR_ERROR_INVALID_LINE"
_NUMBER = DECIMAL  # ASCII digits only (common.params)
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+")
_LINE_END = re.compile(r"\r\n|\r|\n")


class Kind(StrEnum):
    DETOURS = "detours"
    TRACK = "track"


@dataclass(frozen=True)
class LineError:
    """One line that is not answered; `line` None: the error concerns the whole track."""

    line: int | None
    code: str
    message: str


@dataclass(frozen=True)
class DetourCase:
    line: int
    id: str
    origin: LatLon
    destination: LatLon
    via: LatLon


@dataclass(frozen=True)
class TrackPoint:
    line: int
    point: LatLon
    time: float | None  # unix seconds


@dataclass
class ParsedFile:
    kind: Kind
    delimiter: str
    columns: dict[str, int]  # column name → field index
    lines_read: int = 0  # data lines, blank lines not counted
    cases: list[DetourCase] = field(default_factory=list)
    points: list[TrackPoint] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)

    @property
    def has_time(self) -> bool:
        return TIME_COLUMN in self.columns


# ---------------------------------------------------------------- bytes → text


def decode_text(body: bytes) -> str:
    """UTF-8 (a BOM is dropped); anything else is a whole-request error naming the line."""
    if len(body) > MAX_BYTES:
        raise DetourFileTooLarge(f"the file has {len(body)} bytes; at most {MAX_BYTES} are accepted")
    return utf8_text(body, DetourInvalidEncoding, "save the file as UTF-8 text")


# ---------------------------------------------------------------- text → lines


def parse_file(text: str) -> ParsedFile:
    """The typed lines of a file; raises for an empty file, a bad header or too many lines."""
    parsed = parse_header(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=parsed.delimiter)
    limit = MAX_DETOUR_LINES if parsed.kind is Kind.DETOURS else MAX_TRACK_POINTS
    header_seen = False
    for line, fields in records(reader):
        if not header_seen:
            header_seen = True  # the first non-blank record is the header parse_header read
            continue
        parsed.lines_read += 1
        if parsed.lines_read > limit:
            raise DetourFileTooLarge(f"the file has more than {limit} data lines ({parsed.kind} file); split it")
        parse_line(parsed, line, fields)
    if parsed.lines_read == 0:
        raise DetourEmptyFile("the file has a header but no data lines")
    return parsed


def records(reader: Iterator[list[str]]) -> Iterator[tuple[int, list[str]]]:
    """(first physical line of the record, fields) for every non-blank record."""
    line_num = 0
    try:
        for fields in reader:
            start = line_num + 1
            line_num = reader.line_num  # type: ignore[attr-defined]  # csv.reader objects have it
            if any(value.strip() for value in fields):
                yield start, fields
    except csv.Error as exc:  # a field over the csv module's size limit: a quote never closed
        raise MalformedBody(f"line {line_num + 1}: {exc}; is a closing quote missing?") from exc


def parse_header(text: str) -> ParsedFile:
    # The csv module's line ends only (str.splitlines would also split at \f, \x1c, U+2028 …).
    header = next((line for line in _LINE_END.split(text) if line.strip(" \t,;")), None)
    if header is None:
        raise DetourEmptyFile("the file is empty")
    for delimiter in (",", ";"):
        names = [name.strip().lower() for name in next(csv.reader([header], delimiter=delimiter))]
        kind = header_kind(names)
        if kind is not None:
            return ParsedFile(kind, delimiter, {name: index for index, name in enumerate(names)})
    raise DetourInvalidHeader(
        f"the header must be {','.join(DETOUR_COLUMNS)} (detour cases) or lat,lon[,time] (a track), "
        f"separated by commas or semicolons; got {header[:120]!r}"
    )


def header_kind(names: list[str]) -> Kind | None:
    if len(set(names)) != len(names):
        return None
    if set(names) == set(DETOUR_COLUMNS):
        return Kind.DETOURS
    if set(names) in (set(TRACK_COLUMNS), {*TRACK_COLUMNS, TIME_COLUMN}):
        return Kind.TRACK
    return None


def parse_line(parsed: ParsedFile, line: int, fields: list[str]) -> None:
    if len(fields) != len(parsed.columns):
        message = f"expected {len(parsed.columns)} fields separated by {parsed.delimiter!r}, got {len(fields)}"
        if any("\n" in value or "\r" in value for value in fields):
            message += "; a quoted field runs over several lines: is a closing quote missing?"
        parsed.errors.append(LineError(line, INVALID_LINE, message))
        return
    values = {name: fields[index].strip() for name, index in parsed.columns.items()}
    problems: list[str] = []
    if parsed.kind is Kind.DETOURS:
        case = detour_case(line, values, parsed.delimiter, problems)
        if case is not None:
            parsed.cases.append(case)
    else:
        point = track_point(line, values, parsed.delimiter, problems)
        if point is not None and in_time_order(point, parsed.points, problems):
            parsed.points.append(point)
    if problems:
        parsed.errors.append(LineError(line, INVALID_LINE, "; ".join(problems)))


def detour_case(line: int, values: dict[str, str], delimiter: str, problems: list[str]) -> DetourCase | None:
    origin = latlon(values, "from_lat", "from_lon", delimiter, problems)
    destination = latlon(values, "to_lat", "to_lon", delimiter, problems)
    via = latlon(values, "via_lat", "via_lon", delimiter, problems)
    if len(values["id"]) > MAX_ID_LENGTH:
        problems.append(f"id: longer than {MAX_ID_LENGTH} characters")
    if problems or origin is None or destination is None or via is None:
        return None
    return DetourCase(line, values["id"], origin, destination, via)


def track_point(line: int, values: dict[str, str], delimiter: str, problems: list[str]) -> TrackPoint | None:
    point = latlon(values, "lat", "lon", delimiter, problems)
    time = parse_time(values[TIME_COLUMN], problems) if TIME_COLUMN in values else None
    if point is None or problems:
        return None
    return TrackPoint(line, point, time)


def in_time_order(point: TrackPoint, accepted: list[TrackPoint], problems: list[str]) -> bool:
    """OSRM needs non-decreasing times; a point recorded earlier than its predecessor is skipped."""
    previous = accepted[-1] if accepted else None
    if point.time is None or previous is None or previous.time is None or point.time >= previous.time:
        return True
    problems.append(f"time: earlier than the time of the previous point (line {previous.line})")
    return False


# ---------------------------------------------------------------- values


def latlon(values: dict[str, str], lat_name: str, lon_name: str, delimiter: str, problems: list[str]) -> LatLon | None:
    lat = number(values[lat_name], lat_name, -90, 90, delimiter, problems)
    lon = number(values[lon_name], lon_name, -180, 180, delimiter, problems)
    return None if lat is None or lon is None else LatLon(lat, lon)


def number(text: str, name: str, low: float, high: float, delimiter: str, problems: list[str]) -> float | None:
    if delimiter == ";" and _DECIMAL_COMMA.fullmatch(text):
        text = text.replace(",", ".")
    if not text:
        problems.append(f"{name}: missing")
        return None
    # A strict pattern: float() would also take 'nan', 'inf' and '1_0'.
    if not _NUMBER.fullmatch(text):
        problems.append(f"{name}: not a number: {text[:40]!r}")
        return None
    value = float(text)
    if not low <= value <= high:
        problems.append(f"{name}: must be between {low} and {high}, got {text[:40]}")
        return None
    return value


def parse_time(text: str, problems: list[str]) -> float | None:
    """Unix seconds, or ISO 8601 (without an offset: UTC)."""
    if _NUMBER.fullmatch(text):
        value = float(text)
    else:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            problems.append(f"time: neither unix seconds nor ISO 8601: {text[:40]!r}" if text else "time: missing")
            return None
        value = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if not (math.isfinite(value) and 0 <= value < 2**32):
        problems.append(f"time: out of range: {text[:40]!r}")
        return None
    return value
