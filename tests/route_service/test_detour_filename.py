"""File-name rules of the detour upload (unit level; the HTTP answers are in test_detour_app)."""

from __future__ import annotations

import pytest

from common.errors import InvalidFilename
from route_service.detour.filename import disposition_filename, file_name, validate_filename

VALID = [
    "trips.csv",
    "trips.txt",
    "a.csv",
    "Trips_2024-06-01.v2.csv",
    "-.csv",
    "x" * 251 + ".csv",  # exactly 255 characters
    "trips.CSV",  # the extension in any case: Windows and Excel write it so
    "trips.Txt",
]

INVALID = [
    ("", "must not be empty"),
    ("x" * 252 + ".csv", "at most 255"),
    ("../etc/passwd.csv", "path separators"),
    ("a/b.csv", "path separators"),
    ("a\\b.csv", "path separators"),
    ("/trips.csv", "path separators"),
    ("C:\\Users\\me\\trips.csv", "path separators"),
    ("..csv", "'..'"),
    ("a..b.csv", "'..'"),
    (".hidden.csv", "start with a dot"),
    (".csv", "start with a dot"),
    ("trips.exe", "end in .csv or .txt"),
    ("trips.csv.exe", "end in .csv or .txt"),
    ("trips", "end in .csv or .txt"),
    ("trips.csvx", "end in .csv or .txt"),
    ("trips.csv\x00.txt", "control characters"),
    ("trips\x00.csv", "control characters"),
    ("trips\n.csv", "control characters"),
    ("trips\x7f.csv", "control characters"),
    ("trips .csv", "only ASCII letters"),
    ("trips;.csv", "only ASCII letters"),
    ("tr\u0456ps.csv", "only ASCII letters"),  # Cyrillic small i (U+0456)
    ("\u0430.csv", "only ASCII letters"),  # Cyrillic small a (U+0430), looks like Latin a
    ("trips\uff0ecsv", "only ASCII letters"),  # fullwidth full stop
    ("trips.\uff43sv", "only ASCII letters"),  # fullwidth c
    ("trips\u2024csv", "only ASCII letters"),  # one-dot leader
    ("träps.csv", "only ASCII letters"),
    ("trips.csv\u200b", "only ASCII letters"),  # zero-width space
]


@pytest.mark.parametrize("name", VALID)
def test_valid_names(name: str) -> None:
    assert validate_filename(name) == name


@pytest.mark.parametrize(("name", "reason"), INVALID)
def test_invalid_names_say_why(name: str, reason: str) -> None:
    with pytest.raises(InvalidFilename) as caught:
        validate_filename(name)
    violation = caught.value.violations[0]
    assert violation.parameter == "filename" and violation.code == "DETOUR_ERROR_INVALID_FILENAME"
    assert reason in violation.message
    assert "\x00" not in violation.message and "\n" not in violation.message  # echoed escaped


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ('attachment; filename="trips.csv"', "trips.csv"),
        ("attachment; filename=trips.csv", "trips.csv"),
        ('inline; filename="trips.csv"', "trips.csv"),
        ('form-data; name="file"; filename="trips.csv"', "trips.csv"),
        ('attachment;filename="a \\"b\\".csv"', 'a "b".csv'),
        ('attachment; FILENAME="trips.csv"', "trips.csv"),
        ("attachment; filename*=UTF-8''trips.csv", "trips.csv"),
        ("attachment; filename*=utf-8'en'trips%2Ecsv", "trips.csv"),
        ("attachment; filename*=UTF-8''tr%C3%A4ps.csv", "träps.csv"),
        ("attachment; filename*=UTF-8''..%2Fetc%2Fpasswd.csv", "../etc/passwd.csv"),
        ("attachment; filename*=UTF-8''trips.csv%00.txt", "trips.csv\x00.txt"),
        ("attachment; filename*=ISO-8859-1''tr%E4ps.csv", "träps.csv"),
        # RFC 6266: filename* wins, in either order.
        ("attachment; filename=\"fallback.csv\"; filename*=UTF-8''real.csv", "real.csv"),
        ("attachment; filename*=UTF-8''real.csv; filename=\"fallback.csv\"", "real.csv"),
        ("attachment", None),
        ('attachment; name="file"', None),
    ],
)
def test_content_disposition_is_parsed_and_decoded(header: str, name: str | None) -> None:
    assert disposition_filename(header) == name


@pytest.mark.parametrize(
    "header",
    [
        'attachment; filename="trips.csv',  # unterminated quote
        "attachment; filename",  # no value
        "attachment; =trips.csv",
        "attachment; filename*=trips.csv",  # no charset part
        "attachment; filename*=KOI8-R''trips.csv",  # a charset we do not decode
        "attachment; filename*=UTF-8''tr%E4ps.csv",  # not UTF-8 after decoding
    ],
)
def test_malformed_content_disposition_is_an_invalid_filename(header: str) -> None:
    with pytest.raises(InvalidFilename):
        file_name(header, None)


def test_header_wins_over_the_query_and_the_query_is_the_fallback() -> None:
    assert file_name('attachment; filename="header.csv"', "query.csv") == "header.csv"
    assert file_name("attachment", "query.csv") == "query.csv"
    assert file_name(None, "query.txt") == "query.txt"


def test_missing_name_is_invalid() -> None:
    with pytest.raises(InvalidFilename) as caught:
        file_name(None, None)
    assert "is required" in caught.value.detail


def test_decoded_names_are_validated() -> None:
    for header in ("attachment; filename*=UTF-8''..%2Fx.csv", "attachment; filename*=UTF-8''x.csv%00.txt"):
        with pytest.raises(InvalidFilename):
            file_name(header, None)
