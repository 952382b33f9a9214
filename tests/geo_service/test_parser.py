"""Free-text parsing: words, house number with suffixes, postcode, in any order."""

from __future__ import annotations

import pytest

from geo_service.normalize import Normalizer
from geo_service.parser import house_numbers_of_tag, parse_house_number, parse_query

NORMALIZER = Normalizer()


@pytest.mark.parametrize(
    "text", ["Hauptstraße 12, 69117 Heidelberg", "hauptstr 12 heidelberg 69117", "69117 Heidelberg Hauptstrasse 12"]
)
def test_any_order_gives_the_same_parts(text: str) -> None:
    parsed = parse_query(text, NORMALIZER, {"69117"})
    assert sorted(parsed.words) == ["hauptstrasse", "heidelberg"]
    assert parsed.house_number is not None and parsed.house_number.text == "12"
    assert parsed.postcode == ("69117" if "69117" in text else None)


@pytest.mark.parametrize(
    ("typed", "key", "base"),
    [
        ("12", "12", 12),
        ("12a", "12a", 12),
        ("12 a", "12a", 12),
        ("12A", "12a", 12),
        ("12-14", "12-14", 12),
        ("12 - 14", "12-14", 12),
        ("12/1", "12/1", 12),
        ("007", "7", 7),
    ],
)
def test_house_number_suffixes(typed: str, key: str, base: int) -> None:
    parsed = parse_query(f"Tal {typed}", NORMALIZER)
    assert parsed.house_number is not None
    assert (parsed.house_number.text, parsed.house_number.base) == (key, base)
    assert parsed.words == ("tal",)


def test_house_number_glued_to_the_street() -> None:
    parsed = parse_query("Hauptstraße12", NORMALIZER)
    assert parsed.words == ("hauptstrasse",) and parsed.house_number == parse_house_number("12")


def test_an_ordinal_stays_part_of_the_name() -> None:
    parsed = parse_query("Straße des 17. Juni 5", NORMALIZER)
    assert parsed.words == ("strasse", "des", "17", "juni")
    assert parsed.house_number == parse_house_number("5")


def test_known_postcodes_with_letters() -> None:
    parsed = parse_query("Av. Meritxell 12, AD500 Andorra la Vella", Normalizer({"avinguda"}), {"ad500"})
    assert parsed.postcode == "ad500"
    assert parsed.words[:2] == ("avinguda", "meritxell")


def test_osm_lists_of_numbers_are_split() -> None:
    assert [n.text for n in house_numbers_of_tag("12;14, 16a")] == ["12", "14", "16a"]
    assert house_numbers_of_tag("UG1") == []


def test_several_numbers_give_alternative_readings() -> None:
    """'Avenue du 3 Septembre 126': the first number is tried first, the second as an alternative."""
    parsed = parse_query("Avenue du 3 Septembre 126", NORMALIZER)
    assert parsed.house_number is not None and parsed.house_number.text == "3"
    assert [a.house_number.text for a in parsed.alternatives if a.house_number] == ["126"]
    assert parsed.alternatives[0].words == tuple(NORMALIZER.words("Avenue du 3 Septembre"))


def test_a_known_postcode_that_does_not_look_like_one_is_the_house_number_when_alone() -> None:
    """Andorra maps postcodes such as '100': in 'Avinguda Meritxell 100' it is the house number."""
    alone = parse_query("Avinguda Meritxell 100", NORMALIZER, {"100"})
    assert alone.house_number is not None and alone.house_number.text == "100" and alone.postcode is None
    with_number = parse_query("Carrer Major 5, 100 Canillo", NORMALIZER, {"100"})
    assert with_number.postcode == "100" and with_number.house_number is not None
    assert with_number.house_number.text == "5"


@pytest.mark.parametrize(
    ("text", "known", "postcode", "words"),
    [
        ("0AD 200 Encamp", {"0ad 200"}, "0ad 200", ("encamp",)),  # as mapped in Andorra
        ("10 Downing Street, SW1A 2AA London", {"sw1a 2aa"}, "sw1a 2aa", ("downing", "street", "london")),
        ("Damrak 1, 1012 LG Amsterdam", {"1012 lg"}, "1012 lg", ("damrak", "amsterdam")),
    ],
)
def test_a_known_postcode_in_two_parts_is_one_postcode(text: str, known: set[str], postcode: str, words: tuple[str, ...]) -> None:
    parsed = parse_query(text, NORMALIZER, known)
    assert (parsed.postcode, parsed.words) == (postcode, words)
    assert parse_query(text, NORMALIZER, set()).postcode != postcode  # unknown: the parts stay apart
