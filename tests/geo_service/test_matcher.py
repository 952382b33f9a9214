"""Matching on the real Munich extract (and a merged Andorra + Monaco + Helsinki index), in-process."""

from __future__ import annotations

import pytest

from common.geo import LatLon, haversine_m
from geo_service.index import LoadedIndex
from geo_service.model import GeocodeQuery, GeocodeResult, ReverseQuery

# Marienplatz 8, 80331 München as mapped in the extract.
MARIENPLATZ_8 = (48.1373943, 11.5760552)


def geocode(index: LoadedIndex, text: str, country: str | None = None, limit: int = 5) -> list[GeocodeResult]:
    return index.matcher.geocode(GeocodeQuery(text, country, limit)).results


def top(index: LoadedIndex, text: str, country: str | None = None) -> GeocodeResult:
    results = geocode(index, text, country)
    assert results, f"nothing found for {text!r}"
    return results[0]


def near(result: GeocodeResult, point: tuple[float, float], metres: float = 50.0) -> bool:
    return haversine_m(LatLon(result.lat, result.lon), LatLon(*point)) <= metres


@pytest.mark.parametrize(
    "text",
    [
        "Marienplatz 8, 80331 München",
        "marienplatz 8 munchen",
        "80331 München Marienplatz 8",
        "MARIENPLATZ 8 MUENCHEN",
        "Marienpl. 8",
        "Marienplatz 8, München, Germany",
    ],
)
def test_free_text_in_any_form_finds_the_address(munich: LoadedIndex, text: str) -> None:
    result = top(munich, text)
    assert result.type == "address"
    assert (result.address.street, result.address.house_number) == ("Marienplatz", "8")
    assert result.address.postcode == "80331" and result.address.country == "DEU"
    assert near(result, MARIENPLATZ_8)


@pytest.mark.parametrize(
    "text", ["Sendlingerstrase 12", "Sendlinger Strase 12, München", "Sendlnger Straße 12", "Sendlinger Sraße 12"]
)
def test_typos_in_the_street_are_tolerated(munich: LoadedIndex, text: str) -> None:
    result = top(munich, text)
    assert (result.type, result.address.street, result.address.house_number) == ("address", "Sendlinger Straße", "12")


def test_an_exact_match_scores_higher_than_a_typo(munich: LoadedIndex) -> None:
    assert top(munich, "Sendlinger Straße 12").score > top(munich, "Sendlingerstrase 12").score


@pytest.mark.parametrize(("typed", "found"), [("1a", "1a"), ("1 a", "1a"), ("1A", "1a")])
def test_house_number_suffixes(munich: LoadedIndex, typed: str, found: str) -> None:
    result = top(munich, f"Platzl {typed}, München")
    assert (result.address.street, result.address.house_number, result.score) == ("Platzl", found, 1.0)


def test_a_missing_suffix_falls_back_to_the_same_number_with_a_lower_score(munich: LoadedIndex) -> None:
    result = top(munich, "Weinstraße 7z")
    assert result.type == "address" and result.address.house_number in {"7", "7a"}
    assert result.score < top(munich, "Weinstraße 7a").score


def test_unknown_house_number_falls_back_to_the_street_then_the_place(munich: LoadedIndex) -> None:
    address, street, place = top(munich, "Tal 4"), top(munich, "Tal 999"), top(munich, "Gibtesnichtweg 5, München")
    assert street.type == "street" and street.address.street == "Tal" and street.address.house_number is None
    assert place.type == "place" and place.address.city == "München"
    assert address.score > street.score > place.score


def test_results_are_ordered_by_score_and_limited(munich: LoadedIndex) -> None:
    results = geocode(munich, "Marienplatz", limit=50)
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True) and len(results) > 1
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert len(geocode(munich, "Marienplatz", limit=1)) == 1


def test_country_filter(munich: LoadedIndex) -> None:
    assert top(munich, "Marienplatz 8", country="DEU").address.country == "DEU"
    assert geocode(munich, "Marienplatz 8", country="FIN") == []
    assert geocode(munich, "Marienplatz 8, München, France") == []


@pytest.mark.parametrize(
    "text", ["qzxv wprtk 17", "Mannerheimintie 5, 00100 Helsinki", "Avinguda Meritxell 12, Andorra la Vella", "12"]
)
def test_nonsense_and_foreign_addresses_find_nothing(munich: LoadedIndex, text: str) -> None:
    assert geocode(munich, text) == []


def test_streets_places_postcodes_and_pois(munich: LoadedIndex) -> None:
    street = top(munich, "Sendlinger Straße")
    assert street.type == "street" and street.address.street == "Sendlinger Straße"
    assert top(munich, "München").type == "place"
    postcode = top(munich, "80331")
    assert (postcode.type, postcode.address.postcode, postcode.address.city) == ("place", "80331", "München")
    poi = top(munich, "Hofbräuhaus München")
    assert poi.type == "poi" and poi.name == "Hofbräuhaus" and poi.address.street == "Platzl"


def test_reverse_gives_the_nearest_addresses_first(munich: LoadedIndex) -> None:
    results = munich.matcher.reverse(ReverseQuery(*MARIENPLATZ_8, limit=5)).results
    assert len(results) == 5
    assert (results[0].address.street, results[0].address.house_number) == ("Marienplatz", "8")
    distances = [r.distance_m for r in results]
    assert distances[0] is not None and distances[0] < 1.0
    assert distances == sorted(distances)  # type: ignore[type-var]


def test_reverse_far_from_any_address_is_empty_and_says_why(munich: LoadedIndex) -> None:
    answer = munich.matcher.reverse(ReverseQuery(0.0, 0.0, limit=5))
    assert answer.results == []
    assert [n.code for n in answer.notes] == ["NO_MATCH"] and "DEU" in answer.notes[0].message


def test_reverse_answers_each_address_once(munich: LoadedIndex) -> None:
    results = munich.matcher.reverse(ReverseQuery(*MARIENPLATZ_8, limit=20)).results
    labels = [(r.address.street, r.address.house_number, r.address.postcode, r.address.city) for r in results]
    assert len(results) == 20 and len(set(labels)) == len(labels)
    assert all(r.distance_m is not None for r in results)


def test_interpolated_house_numbers_are_found(heidelberg: LoadedIndex) -> None:
    row = (
        heidelberg.reader.connection()
        .execute("SELECT street, house_number, city FROM addresses WHERE interpolated = 1 ORDER BY id LIMIT 1")
        .fetchone()
    )
    result = top(heidelberg, f"{row[0]} {row[1]}, {row[2]}")
    assert result.interpolated and (result.address.street, result.address.house_number) == (row[0], row[1])


def test_hauptstrasse_spellings_in_heidelberg(heidelberg: LoadedIndex) -> None:
    exact = top(heidelberg, "Hauptstraße, Heidelberg")
    assert exact.type == "street" and exact.address.city == "Heidelberg"
    for text in ("hauptstr heidelberg", "Heidelberg Hauptstrasse"):
        assert near(top(heidelberg, text), (exact.lat, exact.lon), 1.0)


@pytest.mark.parametrize(
    ("text", "street", "number", "country"),
    [
        ("Av. Meritxell 92, Andorra la Vella", "Avinguda Meritxell", "92", "AND"),
        ("C. La Llacuna 7", "Carrer La Llacuna", "7", "AND"),
        ("Mikonk. 18 Helsinki", "Mikonkatu", "18", "FIN"),
        ("paasivuorenkatu 5a", "Paasivuorenkatu", "5 A", "FIN"),
        ("Rue du Gabian 7, 98000 Monaco", "Rue du Gabian", "7", "MCO"),
    ],
)
def test_catalan_french_and_finnish_addresses_in_one_merged_index(
    andorra_monaco_helsinki: LoadedIndex, text: str, street: str, number: str, country: str
) -> None:
    result = top(andorra_monaco_helsinki, text)
    assert (result.address.street, result.address.house_number, result.address.country) == (street, number, country)
    assert top(andorra_monaco_helsinki, text, country=country) == result
    other = "FIN" if country != "FIN" else "AND"
    assert all(r.address.country == other for r in geocode(andorra_monaco_helsinki, text, country=other))


def test_a_street_s_names_are_searched_once_for_all_its_house_numbers(
    munich: LoadedIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Address lists name the same streets with other numbers: the candidate names of a text's
    words (80 % of a lookup) are found once, and each number is still its own answer."""
    searches: list[str] = []
    search_keys = munich.reader.search_keys

    def counted(fts_query: str, limit: int) -> list[str]:
        searches.append(fts_query)
        return search_keys(fts_query, limit)

    monkeypatch.setattr(munich.reader, "search_keys", counted)
    munich.matcher.candidates.names.cache_clear()  # what other tests asked
    numbers = [top(munich, f"Sendlinger Straße {n}, München").address.house_number for n in (3, 28, 49)]
    assert numbers == ["3", "28", "49"]
    assert len(searches) == 1
    top(munich, "Marienplatz 8, München")  # other words: searched anew
    assert len(searches) == 2


def test_a_street_with_a_typo_beside_a_town_of_several_words_is_read_as_both(all_extracts: LoadedIndex) -> None:
    """The reading that explains every word wins over a closer one that leaves words of its own:
    "Avinguda del Fenre … Andorra la Vella" is Avinguda del Fener and its town (bench geocoder's
    typo case), not "Avinguda" with "del fenre" left over."""
    best = top(all_extracts, "Avinguda del Fenre 11-13, AD500 Andorra la Vella")
    assert (best.address.street, best.address.house_number) == ("Avinguda del Fener", "11-13")
