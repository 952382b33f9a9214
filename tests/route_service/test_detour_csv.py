"""Parsing of detour files into typed lines: formats, line errors with their numbers, limits."""

from __future__ import annotations

import pytest

from common.errors import (
    DetourEmptyFile,
    DetourFileTooLarge,
    DetourInvalidEncoding,
    DetourInvalidHeader,
    MalformedBody,
)
from common.geo import LatLon
from route_service.detour import csvfile
from route_service.detour.csvfile import INVALID_LINE, Kind, decode_text, parse_file

HEADER = "id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon"
LINE = "a,49.4105,8.7050,49.4170,8.6950,49.4140,8.7000"


def test_detour_cases() -> None:
    parsed = parse_file(f"{HEADER}\n{LINE}\nb,1,2,3,4,5,6\n")
    assert parsed.kind is Kind.DETOURS and parsed.delimiter == "," and parsed.lines_read == 2
    first, second = parsed.cases
    assert (first.line, first.id) == (2, "a")
    assert (first.origin, first.destination, first.via) == (
        LatLon(49.4105, 8.705),
        LatLon(49.417, 8.695),
        LatLon(49.414, 8.7),
    )
    assert second.line == 3 and parsed.errors == []


def test_track_with_and_without_time() -> None:
    parsed = parse_file("lat,lon,time\n49.41,8.70,1700000000\n49.42,8.71,2023-11-14T22:13:21Z\n")
    assert parsed.kind is Kind.TRACK and parsed.has_time
    assert [p.time for p in parsed.points] == [1_700_000_000, 1_700_000_001]
    plain = parse_file("lat,lon\n49.41,8.70\n49.42,8.71")
    assert not plain.has_time and [p.line for p in plain.points] == [2, 3] and plain.points[0].time is None


def test_bom_crlf_semicolons_quotes_blank_lines_and_decimal_commas() -> None:
    body = (
        "\ufeff" + HEADER.replace(",", ";") + "\r\n"
        '"x;1";49,4105;8,7050;"49.4170";8.6950;49.4140;8.7000\r\n'
        "\r\n"
        ";;;;;;\r\n"
        '"say ""hi""";1;2;3;4;5;6\r\n'
    ).encode()
    parsed = parse_file(decode_text(body))
    assert parsed.delimiter == ";" and parsed.lines_read == 2 and parsed.errors == []
    assert [(c.line, c.id) for c in parsed.cases] == [(2, "x;1"), (5, 'say "hi"')]
    assert parsed.cases[0].origin == LatLon(49.4105, 8.705)


def test_header_in_any_order_and_case_with_spaces() -> None:
    parsed = parse_file(" LON ; Lat \n8.70;49.41\n")
    assert parsed.kind is Kind.TRACK and parsed.points[0].point == LatLon(49.41, 8.70)
    cases = parse_file("via_lat,via_lon,ID,to_lat,to_lon,from_lat,from_lon\n1,2,z,3,4,5,6\n")
    case = cases.cases[0]
    assert (case.id, case.origin, case.destination, case.via) == ("z", LatLon(5, 6), LatLon(3, 4), LatLon(1, 2))


def test_leading_blank_lines_count_in_line_numbers() -> None:
    parsed = parse_file(f"\n\n{HEADER}\n\n{LINE}\n")
    assert parsed.cases[0].line == 5


LINE_ERRORS = [
    ("a,1,2,3,4,5", "expected 7 fields separated by ',', got 6"),
    ("a,1,2,3,4,5,6,7", "got 8"),
    ("a,x,2,3,4,5,6", "from_lat: not a number: 'x'"),
    ("a,1,2,3,4,5,", "via_lon: missing"),
    ("a,91,2,3,4,5,6", "from_lat: must be between -90 and 90, got 91"),
    ("a,1,2,3,-180.5,5,6", "to_lon: must be between -180 and 180"),
    ("a,nan,2,3,4,5,6", "from_lat: not a number"),
    ("a,inf,2,3,4,5,6", "from_lat: not a number"),
    ("a,1_0,2,3,4,5,6", "from_lat: not a number"),
    ("a,1,2,3,4,5,0x10", "via_lon: not a number"),
    ("a,49,4105,8.7,1,2,3,4", "got 8"),  # a decimal comma with comma separators splits the field
    ("a" * 201 + ",1,2,3,4,5,6", "id: longer than 200"),
]


@pytest.mark.parametrize(("line", "message"), LINE_ERRORS)
def test_line_errors_carry_their_line_number_and_the_rest_is_read(line: str, message: str) -> None:
    parsed = parse_file(f"{HEADER}\n{LINE}\n{line}\n{LINE}\n")
    assert parsed.lines_read == 3 and [c.line for c in parsed.cases] == [2, 4]
    (error,) = parsed.errors
    assert error.line == 3 and error.code == INVALID_LINE and message in error.message


def test_every_problem_of_a_line_is_in_its_one_error() -> None:
    parsed = parse_file(f"{HEADER}\na,x,2,3,400,5,y\n")
    (error,) = parsed.errors
    assert error.message.split("; ") == [
        "from_lat: not a number: 'x'",
        "to_lon: must be between -180 and 180, got 400",
        "via_lon: not a number: 'y'",
    ]


def test_an_unclosed_quote_says_so_at_its_line() -> None:
    parsed = parse_file(f'{HEADER}\n{LINE}\n"b,1,2,3,4,5,6\n{LINE}\n')
    (error,) = parsed.errors
    assert error.line == 3 and "closing quote" in error.message and parsed.lines_read == 2


TRACK_ERRORS = [
    ("49.5,abc,3", "lon: not a number"),
    ("49.5,8.7", "expected 3 fields"),
    ("49.5,8.7,", "time: missing"),
    ("49.5,8.7,yesterday", "time: neither unix seconds nor ISO 8601"),
    ("49.5,8.7,-5", "time: out of range"),
    ("49.5,8.7,99", "time: earlier than the time of the previous point (line 2)"),
]


@pytest.mark.parametrize(("line", "message"), TRACK_ERRORS)
def test_bad_track_points_are_skipped_with_their_error(line: str, message: str) -> None:
    parsed = parse_file(f"lat,lon,time\n49.4,8.7,100\n{line}\n49.41,8.71,101\n")
    assert [p.line for p in parsed.points] == [2, 4] and parsed.lines_read == 3
    (error,) = parsed.errors
    assert error.line == 3 and message in error.message


def test_equal_times_are_accepted() -> None:
    parsed = parse_file("lat,lon,time\n49.4,8.7,100\n49.41,8.71,100\n")
    assert len(parsed.points) == 2 and parsed.errors == []


@pytest.mark.parametrize("text", ["", "\n\n", " \r\n ; \n", "\ufeff"])
def test_empty_file(text: str) -> None:
    with pytest.raises(DetourEmptyFile, match="empty"):
        parse_file(decode_text(text.encode()))


@pytest.mark.parametrize("text", [HEADER, f"{HEADER}\n", f"{HEADER}\r\n\r\n,,,\n", "lat;lon\n"])
def test_header_only(text: str) -> None:
    with pytest.raises(DetourEmptyFile, match="no data lines"):
        parse_file(text)


@pytest.mark.parametrize(
    "header",
    [
        "id,from_lat,from_lon,to_lat,to_lon",  # a column missing
        "lat,lon,timestamp",
        "lat,lon,lat",
        "lat|lon",
        "49.41,8.70",  # data without a header
        "id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon,extra",
    ],
)
def test_unknown_header(header: str) -> None:
    with pytest.raises(DetourInvalidHeader):
        parse_file(f"{header}\n1,2\n")


def test_not_utf8_names_the_line() -> None:
    with pytest.raises(DetourInvalidEncoding, match=r"line 3"):
        decode_text(f"{HEADER}\n{LINE}\nb\xe4r,1,2,3,4,5,6\n".encode("latin-1"))


def test_utf16_is_not_utf8() -> None:
    with pytest.raises(DetourInvalidEncoding):
        decode_text(f"{HEADER}\n{LINE}\n".encode("utf-16"))


def test_byte_limit() -> None:
    decode_text(b"x" * csvfile.MAX_BYTES)
    with pytest.raises(DetourFileTooLarge):
        decode_text(b"x" * (csvfile.MAX_BYTES + 1))


@pytest.mark.parametrize(
    ("header", "line", "limit"),
    [(HEADER, LINE, csvfile.MAX_DETOUR_LINES), ("lat,lon", "49.4,8.7", csvfile.MAX_TRACK_POINTS)],
)
def test_line_limits_count_data_lines_only(header: str, line: str, limit: int) -> None:
    at_limit = "\n".join([header, *([line] * limit)]) + "\n\n\n"
    assert parse_file(at_limit).lines_read == limit
    with pytest.raises(DetourFileTooLarge, match=f"more than {limit} data lines"):
        parse_file(at_limit + line + "\n")


def test_documented_limits_are_at_least_the_required_ones() -> None:
    assert csvfile.MAX_BYTES >= 5_000_000
    assert min(csvfile.MAX_DETOUR_LINES, csvfile.MAX_TRACK_POINTS) >= 10_000


def test_a_giant_quoted_field_is_a_malformed_body() -> None:
    with pytest.raises(MalformedBody, match="closing quote"):
        parse_file(f'{HEADER}\n"{"x" * 200_000}\n')
