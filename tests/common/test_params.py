"""Numbers in query texts are ASCII decimals only, and messages name JSON kinds, not Python types."""

from __future__ import annotations

import math

import pytest

from common.errors import ParameterErrors
from common.params import (
    Degrees,
    Point,
    Whole,
    flag,
    json_kind,
    number_or_nan,
    one_of,
    parse_decimal,
    parse_instant,
    parse_latlon_text,
    read_query,
)
from route_service.detour.csvfile import number

# Arabic-Indic, Extended Arabic-Indic and Devanagari "10", which float() reads as 10.0.
OTHER_SCRIPTS_TEN = ["\u0661\u0660", "\u06f1\u06f0", "\u0967\u0966"]


@pytest.mark.parametrize("text", ["1_0", *OTHER_SCRIPTS_TEN, "nan", "inf", "-Infinity", "1e999", "0x10", "1,5", "", " "])
def test_what_float_takes_but_is_no_ascii_decimal_is_refused(text: str) -> None:
    assert parse_decimal(text) is None
    assert math.isnan(number_or_nan(text))


@pytest.mark.parametrize(("text", "value"), [("10", 10.0), ("-0.5", -0.5), (".5", 0.5), ("+2.", 2.0), ("1e3", 1000.0)])
def test_ascii_decimals_are_read(text: str, value: float) -> None:
    assert parse_decimal(text) == value
    assert number_or_nan(text) == value


def test_coordinates_with_underscores_or_other_scripts_digits_are_refused() -> None:
    assert isinstance(parse_latlon_text("4_9.4,8.69"), str)
    assert isinstance(parse_latlon_text("\u0664\u0669.\u0664,\u0668.\u0666\u0669"), str)
    assert parse_latlon_text("49.4,8.69") is not None and not isinstance(parse_latlon_text("49.4,8.69"), str)
    errors = ParameterErrors()
    Degrees("lat", 90).read({"lat": "\u0664\u0669"}, errors)
    assert errors.violations and errors.violations[0].parameter == "lat"


def test_detour_files_take_ascii_digits_only() -> None:
    problems: list[str] = []
    assert number("\u0664\u0669.\u0664", "from_lat", -90, 90, ",", problems) is None
    assert problems and "not a number" in problems[0]


@pytest.mark.parametrize(
    ("value", "kind"),
    [(None, "null"), (True, "a boolean"), ("x", "a string"), ([], "an array"), ({}, "an object"), (1.5, "a number")],
)
def test_json_kinds_are_named_in_jsons_words(value: object, kind: str) -> None:
    assert json_kind(value) == kind


@pytest.mark.parametrize(("text", "accepted"), [("2026-12-01T08:00:00+01:00", True), ("2026-12-01T08:00:00Z", True),
                                                ("2026-12-01T08:00:00+01:00:30.5", False), ("2026-12-01T08:00:00+01:00:30", False)])  # fmt: skip
def test_time_offsets_are_whole_minutes(text: str, accepted: bool) -> None:
    errors = ParameterErrors()
    assert (parse_instant(text, "departureTime", errors) is not None) is accepted
    assert bool(errors.violations) is not accepted


def test_truck_dimensions_are_one_grammar_for_routes_and_fleets() -> None:
    """GET /v1/route's query texts, a matrix's `truck` object and a fleet vehicle's `truck` are
    read by one function: the same limits, the same words (issue 57, item 2)."""
    from optimize_service.fleet.parsing import parse_truck as fleet_truck
    from route_service.parsing import parse_truck as route_truck

    route_errors, fleet_errors = ParameterErrors(), ParameterErrors()
    route = route_truck({"height": "7", "weight": "18"}, "truck", route_errors)
    fleet = fleet_truck({"height": 7, "weight": 18}, "truck", "vehicles[0].truck", fleet_errors)
    [(route_name, route_message)] = [(v.parameter, v.message) for v in route_errors.violations]
    [(fleet_name, fleet_message)] = [(v.parameter, v.message) for v in fleet_errors.violations]
    assert (route_name, fleet_name) == ("height", "vehicles[0].truck.height")
    assert route_message.split(", got")[0] == fleet_message.split(", got")[0] == "must be a number of m above 0 and at most 6"
    assert route is not None and route.weight_t == 18.0 and fleet == (("weight", 18.0),)
    text_in_json = ParameterErrors()
    assert fleet_truck({"height": "4"}, "truck", "t", text_in_json) == () and text_in_json  # a body's must be numbers


def test_whole_numbers_are_one_grammar_for_query_texts_and_json() -> None:
    """`alternatives=2` in a query and `"maxStops": 2` in a fleet's body are read by one function
    (issue 57, item 2): a text of ASCII digits, a JSON number with nothing after the point."""
    from common.params import parse_whole

    def read(value: object, text: bool) -> int | None:
        errors = ParameterErrors()
        found = parse_whole(value, "n", 0, 5, errors, default=None, required=False, text=text)
        return None if errors else found

    assert [read(v, True) for v in ("2", " +3 ", "2.0", "²", "-1", "9")] == [2, 3, None, None, None, None]
    assert [read(v, False) for v in (2, 3.0, 2.5, True, "2", 10**400, math.nan)] == [2, 3, None, None, None, None, None]
    missing = ParameterErrors()
    assert parse_whole(None, "n", 0, 5, missing, default=None) is None and "is required" in missing.violations[0].message


def test_declared_query_fields_report_every_violation_at_once_with_their_fallbacks() -> None:
    """An operation's parameters as a tuple of fields: each refused one named, each absent or
    refused one read as its fallback, the rest as given."""
    fields = (Point("from"), Whole("limit", 1, 50, 5), flag("steps", True), one_of("units", ("metric", "imperial"), "metric"))
    errors = ParameterErrors()
    values = read_query({"limit": "51", "steps": "maybe", "units": "Imperial"}, fields, errors)
    assert values == [None, 5, True, "imperial"]
    assert [v.parameter for v in errors.violations] == ["from", "limit", "steps"]
    errors = ParameterErrors()
    assert read_query({"from": "49.4,8.69", "limit": "7", "steps": "no"}, fields, errors)[1:] == [7, False, "metric"]
    assert not errors.violations
