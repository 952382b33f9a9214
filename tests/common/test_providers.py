"""The one rule for provider names, shared by the geocoding, routing and stop-order services."""

from __future__ import annotations

import pytest

from common.errors import InvalidParameter, ParameterErrors
from common.providers import requested_provider


def refused(raw: str, known: frozenset[str] | None = frozenset({"osrm", "valhalla"})) -> str:
    errors = ParameterErrors()
    assert requested_provider(raw, known, errors) is None
    with pytest.raises(InvalidParameter) as caught:
        errors.raise_if_any()
    [violation] = caught.value.violations
    assert violation.parameter == "provider"
    return violation.message


def test_a_name_is_matched_without_case_or_spaces() -> None:
    errors = ParameterErrors()
    assert requested_provider("  OSRM ", {"osrm", "valhalla"}, errors) == "osrm"
    assert requested_provider(None, {"osrm"}, errors) is None  # the default answers
    errors.raise_if_any()


def test_blank_and_unknown_names_are_refused_with_the_known_ones() -> None:
    assert "blank" in refused(" ")
    message = refused("Here")
    assert "'Here'" in message and "osrm, valhalla" in message
    assert len(refused("x" * 500)) < 120  # a hostile name is not echoed whole


def test_without_a_list_any_well_formed_name_passes() -> None:
    assert requested_provider(" Any ", None, ParameterErrors()) == "any"
    assert "blank" in refused("", None)
