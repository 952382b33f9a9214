"""A batch of geocoder lines (POST /v1/geocoder/batch): a CSV file or JSON lines → typed lines
and per-line errors (no aiohttp here).

Each line is one geocoder request whose parameters are the line's columns (or keys), named as
GET /v1/geocoder and /v1/geocoder/reverse name them: `address`, or `street`, `houseNumber`,
`postalCode`, `city`, with an optional `country`; or `lat` and `lon` for a reverse line. An
optional `id` is echoed back. The batch's query parameters (`provider`, `country`, `limit`)
apply to every line; a line's own `country` wins over the batch's.

The detour file's conventions: nothing lost, nothing reordered. Every data line gets one entry
in the answer, in the input's order, with the line number it has in the file (blank lines are
skipped and not counted; a CSV record spanning several lines is numbered by its first). A line
that cannot be read is that line's error, never the whole request's; only a file that cannot be
read as a whole (no header, an unknown column, bad UTF-8, too many lines) is refused.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from threading import Event
from typing import Any

import orjson

from common.errors import ApiError, BatchEmpty, BatchInvalidHeader, BatchTooLarge, MalformedBody
from common.params import UTF8_BOM, json_kind, utf8_text

# Synchronous batches answer up to this many lines (10 000 within the gateway's wait, the
# issue's goal); larger ones run as a job (`?async=true`) up to MAX_JOB_LINES.
MAX_SYNC_LINES = 10_000
MAX_JOB_LINES = 100_000
# 100 000 lines of ~80 bytes, with room for long structured lines.
MAX_BATCH_BYTES = 16 * 1024 * 1024
ID_COLUMN = "id"
FORWARD_COLUMNS = ("address", "street", "houseNumber", "postalCode", "city", "country")
REVERSE_COLUMNS = ("lat", "lon")
COLUMNS = (ID_COLUMN, *FORWARD_COLUMNS, *REVERSE_COLUMNS)
# Column names as written by spreadsheets: any case, `_`/`-`/space between words.
_CANONICAL = {re.sub(r"[^a-z]", "", name.lower()): name for name in COLUMNS}
MAX_ID_CHARS = 200
INVALID_LINE = "GEOCODER_ERROR_INVALID_LINE"
# A line and its ending; the last line may have none (never an empty match at the very end).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_BYTE_LINE_END = re.compile(rb"\r\n|\r|\n")
# A header names at most the API's nine columns (~90 bytes); spreadsheets quote and space them.
MAX_HEADER_BYTES = 4096
# How often (in lines) a batch being read looks whether its client went.
STOP_CHECK_LINES = 1000


class Form(StrEnum):
    CSV = "csv"
    JSON_LINES = "jsonl"


class LineKind(StrEnum):
    GEOCODE = "geocode"
    REVERSE = "reverse"


@dataclass(frozen=True)
class BatchLine:
    """One data line: where it is in the file, its id, and its parameters (blank ones dropped)."""

    line: int
    id: str | None
    kind: LineKind
    params: dict[str, str]

    @property
    def same_as(self) -> tuple[str, ...]:
        """Lines with the same key ask the same question (their ids and places aside)."""
        return (self.kind, *(f"{name}={value}" for name, value in sorted(self.params.items())))


@dataclass(frozen=True)
class LineError:
    """A line that is not answered: why, with the geocoder's code and its violations."""

    line: int
    id: str | None
    code: str
    message: str
    violations: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class LineResult:
    """An answered line: the geocoder's JSON answer to its request."""

    source: BatchLine
    body: dict[str, Any]

    @property
    def line(self) -> int:
        return self.source.line


LineAnswer = LineResult | LineError


def line_error(line: BatchLine, error: ApiError) -> LineError:
    """A line's request refused: its error as the line's, every violation kept."""
    violations = [{"parameter": v.parameter, "message": v.message, "code": v.code} for v in error.violations]
    return LineError(line.line, line.id, error.violations[0].code if error.violations else error.code, error.detail, violations)


@dataclass
class ParsedBatch:
    form: Form
    lines: list[BatchLine] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)

    @property
    def lines_read(self) -> int:
        return len(self.lines) + len(self.errors)


def decode(body: bytes) -> str:
    """UTF-8 (a BOM is dropped); anything else is a whole-request error naming the line."""
    if len(body) > MAX_BATCH_BYTES:
        raise BatchTooLarge(f"the batch has {len(body)} bytes; at most {MAX_BATCH_BYTES} are accepted")
    return utf8_text(body, MalformedBody, "send the batch as UTF-8 text")


def parse_batch(text: str, form: Form, max_lines: int, stop: Event | None = None) -> ParsedBatch:
    """The batch's typed lines, read line by line (never split whole: a 16 MiB body of short
    lines split at once held ~350 MB); raises for an empty batch, a bad header, more than
    `max_lines`, or `stop` set (the client went)."""
    parsed = ParsedBatch(form)
    rows = csv_rows(text) if form is Form.CSV else json_rows(text)
    for line, row in rows:
        if parsed.lines_read >= max_lines:
            raise BatchTooLarge(too_many(max_lines))
        if stop is not None and parsed.lines_read % STOP_CHECK_LINES == 0 and stop.is_set():
            raise ConnectionResetError("the client went while its batch was read")
        if isinstance(row, LineError):
            parsed.errors.append(row)
        else:
            add_line(parsed, line, row)
    if parsed.lines_read == 0:
        raise BatchEmpty("the batch has no data lines")
    return parsed


def too_many(max_lines: int) -> str:
    if max_lines <= MAX_SYNC_LINES:
        return f"the batch has more than {max_lines} lines: send it with ?async=true (up to {MAX_JOB_LINES} lines) or split it"
    return f"the batch has more than {max_lines} lines: split it"


def text_lines(text: str) -> Iterator[str]:
    """The text's lines with their endings (\\n, \\r\\n or \\r), one at a time."""
    return (match.group() for match in _LINE.finditer(text))


def counted_lines(body: bytes, form: Form) -> int:
    """The data lines the body can hold at most, counted in C before anything is parsed: its
    line breaks (blank lines included; a CSV's header line not)."""
    breaks = body.count(b"\n") + body.count(b"\r") - body.count(b"\r\n")
    lines = breaks + (0 if body.endswith((b"\n", b"\r")) or not body else 1)
    return max(0, lines - (1 if form is Form.CSV else 0))


Row = dict[str, str] | LineError


def header_line(prefix: bytes) -> str | None:
    """A CSV's header, its first non-blank line, once `prefix` holds all of it (None before);
    refused when it is not within the first MAX_HEADER_BYTES."""
    start = len(UTF8_BOM) if prefix.startswith(UTF8_BOM) else 0
    while (end := _BYTE_LINE_END.search(prefix, start)) is not None and start < MAX_HEADER_BYTES:
        line = prefix[start : end.start()]
        if line.strip(b" \t,;"):
            return utf8_text(line, MalformedBody, "send the batch as UTF-8 text")
        start = end.end()
    if len(prefix) > MAX_HEADER_BYTES:
        raise BatchInvalidHeader(
            f"the header (the first non-blank line) must end within the first {MAX_HEADER_BYTES} bytes: "
            f"it names the columns, of {', '.join(COLUMNS)}"
        )
    return None


def header_checked(start: bytes) -> bool:
    """True once the body's start holds a whole header and its columns are the API's; raises
    for a header that is not (refused before the rest of the body is read)."""
    header = header_line(start)
    if header is not None:
        header_columns_of(header)
    return header is not None


def header_columns_of(header: str) -> tuple[str, list[str]]:
    """The header's delimiter and its names as the API's columns (unknown or repeated ones refused)."""
    delimiter = max((",", ";", "\t"), key=header.count)
    return delimiter, header_columns(next(csv.reader([header], delimiter=delimiter)))


def csv_rows(text: str) -> Iterator[tuple[int, Row]]:
    """(line number, the row's values by column) for every non-blank record after the header."""
    header = next((line for line in text_lines(text) if line.strip(" \t,;\r\n")), None)
    if header is None:
        raise BatchEmpty("the batch is empty")
    delimiter, columns = header_columns_of(header)
    reader = csv.reader(text_lines(text), delimiter=delimiter)
    seen_header, line_num = False, 0
    try:
        for fields in reader:
            start, line_num = line_num + 1, reader.line_num
            if not any(value.strip() for value in fields):
                continue
            if not seen_header:
                seen_header = True
                continue
            if len(fields) != len(columns):
                yield start, LineError(start, None, INVALID_LINE,
                                       f"expected {len(columns)} fields separated by {delimiter!r}, got {len(fields)}")  # fmt: skip
                continue
            yield start, {name: value.strip() for name, value in zip(columns, fields, strict=True)}
    except csv.Error as exc:  # a field over the csv module's size limit: a quote never closed
        raise MalformedBody(f"line {line_num + 1}: {exc}; is a closing quote missing?") from exc


def header_columns(names: list[str]) -> list[str]:
    """The header's names as the API's columns; unknown or repeated ones refuse the batch. Linear
    in the header's width, and no wider than the API's columns is read at all (a 25 000-column
    header was 6.6 CPU-s of a quadratic check)."""
    if len(names) > len(COLUMNS):
        raise BatchInvalidHeader(
            f"the header has {len(names)} columns, more than the {len(COLUMNS)} the API knows: "
            f"{', '.join(COLUMNS)} (an address, its parts, or lat and lon)"
        )
    columns = [_CANONICAL.get(re.sub(r"[^a-z]", "", name.lower()), name.strip()) for name in names]
    unknown = [name for name in columns if name not in COLUMNS]
    repeated = sorted(name for name, count in Counter(columns).items() if count > 1)
    if unknown or repeated or not set(columns) - {ID_COLUMN}:
        problem = (f"unknown columns {', '.join(repr(n[:40]) for n in unknown[:5])}" if unknown
                   else f"repeated columns {', '.join(repeated)}" if repeated else "no address or coordinate column")  # fmt: skip
        raise BatchInvalidHeader(
            f"{problem}: the header names the columns, of {', '.join(COLUMNS)} (an address, its parts, or lat and lon)"
        )
    return columns


def json_rows(text: str) -> Iterator[tuple[int, Row]]:
    """(line number, the object's values by key) for every non-blank line."""
    for number, raw in enumerate(text_lines(text), start=1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            yield number, LineError(number, None, INVALID_LINE, f"not a JSON object: {exc.args[0][:80]}")
            continue
        yield number, json_row(number, value)


def json_row(number: int, value: Any) -> Row:
    if not isinstance(value, dict):
        return LineError(number, None, INVALID_LINE, f"expected a JSON object, got {json_kind(value)}")
    line_id = value.get(ID_COLUMN)
    text_id = None if line_id is None else str(line_id)[:MAX_ID_CHARS]
    unknown = [key for key in value if key not in COLUMNS]
    if unknown:
        return LineError(number, text_id, INVALID_LINE,
                         f"unknown keys {', '.join(repr(k[:40]) for k in unknown[:5])}: use {', '.join(COLUMNS)}")  # fmt: skip
    wrong = [key for key, v in value.items() if v is not None and (isinstance(v, bool) or not isinstance(v, str | int | float))]
    if wrong:
        return LineError(number, text_id, INVALID_LINE, f"{', '.join(wrong)}: must be a string or a number")
    return {key: str(v) for key, v in value.items() if v is not None}


def add_line(parsed: ParsedBatch, line: int, row: dict[str, str]) -> None:
    """The row as a typed line: a reverse one when it has coordinates and no address."""
    line_id = row.get(ID_COLUMN) or None
    if line_id is not None and len(line_id) > MAX_ID_CHARS:
        parsed.errors.append(LineError(line, line_id[:MAX_ID_CHARS], INVALID_LINE, f"id must be at most {MAX_ID_CHARS} characters"))
        return
    params = {name: value for name, value in row.items() if name != ID_COLUMN and value.strip()}
    has_address = any(name in params for name in FORWARD_COLUMNS if name != "country")
    has_point = any(name in params for name in REVERSE_COLUMNS)
    if has_address and has_point:
        parsed.errors.append(LineError(line, line_id, INVALID_LINE, "give an address or lat and lon, not both"))
        return
    kind = LineKind.REVERSE if has_point else LineKind.GEOCODE
    parsed.lines.append(BatchLine(line, line_id, kind, params))
