"""The two public error formats (problem detail and legacy), the choice between them by Accept,
and the internal one that carries a typed error between our services."""

from __future__ import annotations

import pytest

from common.errors import (
    DiameterTooLarge,
    InvalidParameter,
    MissingAddress,
    ParameterErrors,
)
from common.problems import internal_body, read_internal_body, render_error, wants_legacy


@pytest.mark.parametrize(
    ("accept", "legacy"),
    [
        ("application/json", True),
        ("application/json; charset=utf-8", True),
        ("APPLICATION/JSON", True),
        ("application/json, application/problem+json", False),
        ("application/problem+json, application/json", False),
        ("application/problem+json", False),
        ("*/*", False),
        (None, False),
        ("", False),
        ("text/html", False),
        # q-values: q=0 is "not acceptable" (RFC 9110 §12.4.2).
        ("application/json;q=0", False),
        ("application/json; q=0.0", False),
        ("application/json;q=0.5", True),
        ("application/json;q=1, application/problem+json;q=0", True),
        ("application/json, application/problem+json;q=0.1", False),
        ("application/json;q=0, application/json;q=0.8", True),
        ("application/json;q=abc", True),  # malformed q: as if absent
        ("application/json;q=nan", True),
        ("application/json;level=1;q=0", False),
    ],
)
def test_accept_header_selects_the_format(accept: str | None, legacy: bool) -> None:
    assert wants_legacy(accept) is legacy


def test_problem_detail_has_the_fixed_fields() -> None:
    error = InvalidParameter("must be at most 2", parameter="alternatives")
    rendered = render_error(error, accept="application/json, application/problem+json", instance="/v1/route?x=1")
    assert rendered.content_type == "application/problem+json"
    body = rendered.body
    assert body["status"] == 400
    assert body["type"] == "/problems/general/invalid-parameter/"
    assert body["title"] == "Some parameters have invalid values"
    assert body["detail"] == "alternatives: must be at most 2"
    assert body["instance"] == "/v1/route?x=1"
    assert body["timestamp"].endswith("Z") and "T" in body["timestamp"]


def test_legacy_format_has_status_details_and_errors() -> None:
    error = MissingAddress("must not be blank", parameter="address")
    rendered = render_error(error, accept="application/json", instance="/v1/geocoder")
    assert rendered.content_type == "application/json"
    assert rendered.body == {
        "status": 400,
        "details": [{"code": "GEOCODER_ERROR_MISSING_ADDRESS", "message": "address: must not be blank"}],
        "errors": ["address: must not be blank"],
    }


def test_several_violations_are_all_reported_in_both_formats() -> None:
    errors = ParameterErrors()
    errors.add("alternatives", "must be at most 2, got 3")
    errors.add("emergencyRoutingRadius", "must be at most 5000, got 6000")
    with pytest.raises(InvalidParameter) as caught:
        errors.raise_if_any()
    problem = render_error(caught.value, accept=None, instance="/v1/route").body
    assert (
        problem["detail"]
        == "alternatives: must be at most 2, got 3; emergencyRoutingRadius: must be at most 5000, got 6000"
    )
    legacy = render_error(caught.value, accept="application/json", instance="/v1/route").body
    assert [d["code"] for d in legacy["details"]] == ["ERROR_INVALID_PARAMETER"] * 2
    assert len(legacy["errors"]) == 2


def test_mixed_violations_keep_their_own_codes() -> None:
    errors = ParameterErrors()
    errors.add("address", "must not be blank", MissingAddress)
    errors.add("limit", "must be between 1 and 50, got 0")
    with pytest.raises(MissingAddress) as caught:
        errors.raise_if_any()
    legacy = render_error(caught.value, accept="application/json", instance="/").body
    assert [d["code"] for d in legacy["details"]] == ["GEOCODER_ERROR_MISSING_ADDRESS", "ERROR_INVALID_PARAMETER"]


def test_no_violation_raises_nothing_and_one_raises_its_error() -> None:
    errors = ParameterErrors()
    assert not errors and errors.violations == []
    errors.raise_if_any()  # nothing collected: nothing raised
    errors.add("from", "must be a point")
    assert errors
    with pytest.raises(InvalidParameter):
        errors.raise_if_any()


def test_diameter_error_is_413_with_its_fixed_type_and_code() -> None:
    rendered = render_error(DiameterTooLarge("1300 km > 1200 km"), accept="application/json", instance="/")
    assert rendered.status == 413
    assert rendered.body["details"][0]["code"] == "OPTIMIZE_ERROR_DIAMETER_TOO_LARGE"
    problem = render_error(DiameterTooLarge("x"), accept=None, instance="/").body
    assert problem["type"] == "/problems/optimize/diameter-too-large"


def test_internal_body_round_trips_through_upstream_error() -> None:
    errors = ParameterErrors()
    errors.add("from", "latitude must be between -90 and 90")
    errors.add("to", "is required")
    with pytest.raises(InvalidParameter) as caught:
        errors.raise_if_any()
    rebuilt = read_internal_body(internal_body(caught.value, "/internal/matrix"))
    assert rebuilt.status == 400
    assert rebuilt.code == "ERROR_INVALID_PARAMETER"
    assert rebuilt.detail == caught.value.detail
    again = render_error(rebuilt, accept="application/json", instance="/").body
    assert again["details"][1] == {"code": "ERROR_INVALID_PARAMETER", "message": "to: is required"}


def test_a_message_never_splits_into_two_violations() -> None:
    """`detail` joins violations with "; ": a message holding one is written with ", "."""
    errors = ParameterErrors()
    errors.add("avoid", "first; second")
    errors.add("to", "third")
    assert [v.message for v in errors.violations] == ["first, second", "third"]
