"""Autocomplete on indexes built from the real extracts: prefixes, typos, house numbers, focus, country."""

from __future__ import annotations

import pytest

from geo_service.autocomplete import read_text
from geo_service.formatter import label
from geo_service.index import LoadedIndex
from geo_service.model import AutocompleteQuery, GeocodeResult
from geo_service.normalize import Normalizer

HELSINKI = (60.1699, 24.9384)
ANDORRA_LA_VELLA = (42.5063, 1.5218)


def complete(
    index: LoadedIndex,
    text: str,
    *,
    country: str | None = None,
    limit: int = 5,
    focus: tuple[float, float] | None = None,
) -> list[GeocodeResult]:
    return index.autocompleter.complete(AutocompleteQuery(text, country, limit, focus))


def labels(results: list[GeocodeResult]) -> list[str]:
    return [label(r.address, r.name) for r in results]


# ------------------------------------------------------------------ reading the text


def test_the_last_word_is_a_prefix_unless_a_space_or_comma_follows() -> None:
    normalizer = Normalizer(["strasse"])
    typed = read_text("Sendlinger Str", normalizer)
    assert typed.words == ("sendlinger",) and typed.prefixes[0] == "str"
    for finished in ("Sendlinger Str ", "Sendlinger Str,", "Sendlinger Str."):
        typed = read_text(finished, normalizer)
        assert typed.words == ("sendlinger", "strasse") and typed.prefixes == ()


def test_house_numbers_and_postcodes_are_not_words() -> None:
    normalizer = Normalizer()
    typed = read_text("Mannerheimintie 2", normalizer)
    assert typed.words == ("mannerheimintie",) and typed.prefixes == ()
    assert (typed.number, typed.number_is_prefix) == ("2", True)
    typed = read_text("12 a Boulevard des Mou", normalizer)
    assert (typed.number, typed.number_is_prefix) == ("12a", False) and typed.prefixes == ("mou",)
    typed = read_text("80331 Mari", normalizer)
    assert typed.postcode == "80331" and typed.prefixes == ("mari",) and typed.number is None


# ------------------------------------------------------------------ prefixes


def test_a_prefix_finds_the_street(andorra_monaco_helsinki: LoadedIndex) -> None:
    results = complete(andorra_monaco_helsinki, "Mannerh")
    assert results[0].type == "street" and results[0].address.street == "Mannerheimintie"
    assert results[0].address.city == "Helsinki" and results[0].address.country == "FIN"
    assert 1 <= len(results) <= 5
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert all(0 < r.score <= 1 for r in results)


def test_a_munich_street_prefix(munich: LoadedIndex) -> None:
    first = complete(munich, "Sendlinger St")[0]
    assert (first.type, first.address.street, first.address.city) == ("street", "Sendlinger Straße", "München")
    assert complete(munich, "Marienpl")[0].address.street == "Marienplatz"
    # Typed as one compound word, as Germans often do.
    assert complete(munich, "Sendlingerstr")[0].address.street == "Sendlinger Straße"


def test_a_monaco_street_prefix_after_complete_words(andorra_monaco_helsinki: LoadedIndex) -> None:
    first = complete(andorra_monaco_helsinki, "Boulevard des Mou")[0]
    assert (first.address.street, first.address.country) == ("Boulevard des Moulins", "MCO")


def test_a_typo_in_a_complete_word_plus_a_prefix(andorra_monaco_helsinki: LoadedIndex, munich: LoadedIndex) -> None:
    assert complete(andorra_monaco_helsinki, "Bulevard des Mou")[0].address.street == "Boulevard des Moulins"
    assert complete(munich, "Sendlnger Str")[0].address.street == "Sendlinger Straße"
    # A typo in the only complete word, with a house-number prefix: the trigram fallback finds it.
    first = complete(andorra_monaco_helsinki, "Mannerhiemintie 1")[0]
    assert first.address.street == "Mannerheimintie" and first.address.house_number == "1"


def test_an_abbreviation_matches_every_word_it_may_stand_for(andorra_monaco_helsinki: LoadedIndex) -> None:
    # The merged index has "avenue" (Monaco) and "avinguda" (Andorra); "Av" means either.
    assert complete(andorra_monaco_helsinki, "Av Carlemany")[0].address.street == "Avinguda Carlemany"


# ------------------------------------------------------------------ house numbers


def test_a_house_number_prefix_lists_the_streets_addresses(andorra_monaco_helsinki: LoadedIndex) -> None:
    results = complete(andorra_monaco_helsinki, "Mannerheimintie 2", limit=6)
    addresses = [r for r in results if r.type == "address"]
    assert len(addresses) >= 3 and results[: len(addresses)] == addresses  # addresses first
    assert {r.address.street for r in addresses} == {"Mannerheimintie"}
    numbers = [r.address.house_number or "" for r in addresses]
    assert numbers[0] == "2" and all(n.startswith("2") for n in numbers)
    assert "20" in numbers
    assert len(set(labels(addresses))) == len(addresses)  # an address mapped several times is listed once
    # With a space after it the number is finished: 2 (and 2a, 2b, …) only.
    finished = [r for r in complete(andorra_monaco_helsinki, "Mannerheimintie 2 ") if r.type == "address"]
    assert finished and {r.address.house_number for r in finished} <= {"2", "2a", "2b", "2 A", "2 B"}


def test_a_house_number_typed_first(munich: LoadedIndex) -> None:
    first = complete(munich, "Marienplatz 8")[0]
    assert (first.type, first.address.street, first.address.house_number) == ("address", "Marienplatz", "8")


# ------------------------------------------------------------------ focus and country


def test_focus_puts_the_nearer_of_two_same_named_streets_first(heidelberg: LoadedIndex) -> None:
    towns = {r.address.city: r for r in complete(heidelberg, "Hauptstraße", limit=20) if r.type == "street"}
    assert len(towns) >= 2
    for town, street in towns.items():
        first = complete(heidelberg, "Hauptstr", focus=(street.lat, street.lon))[0]
        assert (first.address.street, first.address.city) == ("Hauptstraße", town)


def test_focus_puts_near_candidates_before_far_ones(andorra_monaco_helsinki: LoadedIndex) -> None:
    near_helsinki = complete(andorra_monaco_helsinki, "Ma", focus=HELSINKI)
    near_andorra = complete(andorra_monaco_helsinki, "Ma", focus=ANDORRA_LA_VELLA)
    assert {r.address.country for r in near_helsinki} == {"FIN"}
    assert {r.address.country for r in near_andorra} == {"AND"}


def test_country_filter(andorra_monaco_helsinki: LoadedIndex) -> None:
    for country in ("FIN", "MCO", "AND"):
        results = complete(andorra_monaco_helsinki, "Ma", country=country)
        assert results and {r.address.country for r in results} == {country}
    assert complete(andorra_monaco_helsinki, "Mannerh", country="MCO") == []
    assert complete(andorra_monaco_helsinki, "Ma", country="DEU") == []


# ------------------------------------------------------------------ finished words, limits, nothing


def test_a_trailing_space_makes_the_last_word_complete(andorra_monaco_helsinki: LoadedIndex) -> None:
    as_prefix = labels(complete(andorra_monaco_helsinki, "Mannerheimin"))
    assert as_prefix[0] == "Mannerheimintie, 00100 Helsinki"
    finished = complete(andorra_monaco_helsinki, "Mannerheimin ")
    assert finished[0].name == "Mannerheimin aukio"
    assert all(r.address.street != "Mannerheimintie" for r in finished)


def test_limit(andorra_monaco_helsinki: LoadedIndex) -> None:
    assert len(complete(andorra_monaco_helsinki, "Ma", limit=1)) == 1
    assert len(complete(andorra_monaco_helsinki, "Ma", limit=20)) == 20


@pytest.mark.parametrize("text", ["qzxv wprtk", "xqj", "zzzzzzzz ", "7", "12 ", "-", "…"])
def test_nonsense_finds_nothing(andorra_monaco_helsinki: LoadedIndex, text: str) -> None:
    assert complete(andorra_monaco_helsinki, text) == []
