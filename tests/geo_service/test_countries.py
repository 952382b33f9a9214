"""Several countries in one index: every object's country and city from where it lies (issue 10).

The index holds every shared extract at once (Germany twice, Finland, Monaco with its French
suburbs, Andorra with Spanish and French edges), as a user loads a map of several regions.
"""

from __future__ import annotations

import pytest

from geo_service.index import LoadedIndex
from geo_service.model import GeocodeAnswer, GeocodeQuery, GeocodeResult, StructuredAddress

# Boxes around each extract's addresses: (min_lat, max_lat, min_lon, max_lon) → the one country there.
SINGLE_COUNTRY_AREAS = {
    "DEU": [(49.3, 49.6, 7.7, 9.2), (48.0, 48.3, 11.4, 11.8)],
    "FIN": [(60.1, 60.3, 24.8, 25.1)],
}


def answer(index: LoadedIndex, text: str, country: str | None = None, limit: int = 5) -> GeocodeAnswer:
    return index.matcher.geocode(GeocodeQuery(text, country, limit))


def top(index: LoadedIndex, text: str, country: str | None = None) -> GeocodeResult:
    results = answer(index, text, country).results
    assert results, f"nothing found for {text!r} (country={country})"
    return results[0]


def countries_in_box(index: LoadedIndex, table: str, box: tuple[float, float, float, float]) -> dict[str | None, int]:
    sql = f"SELECT country, count(*) FROM {table} WHERE lat BETWEEN ? AND ? AND lon BETWEEN ? AND ? GROUP BY country"  # noqa: S608 - constant table names from the test
    return dict(index.reader.connection().execute(sql, box).fetchall())


@pytest.mark.parametrize("table", ["addresses", "names"])
@pytest.mark.parametrize("country", sorted(SINGLE_COUNTRY_AREAS))
def test_objects_far_from_borders_get_their_own_country(all_extracts: LoadedIndex, table: str, country: str) -> None:
    for box in SINGLE_COUNTRY_AREAS[country]:
        assert set(countries_in_box(all_extracts, table, box)) == {country}


def test_monaco_and_its_french_suburbs_by_postcode(all_extracts: LoadedIndex) -> None:
    rows = all_extracts.reader.connection().execute(
        "SELECT postcode, country FROM addresses WHERE lat BETWEEN 43.6 AND 43.9 AND lon BETWEEN 7.2 AND 7.6"
        " AND postcode IS NOT NULL AND NOT interpolated"
    )
    by_prefix = {(postcode[:3], country) for postcode, country in rows}
    assert ("980", "MCO") in by_prefix and any(country == "FRA" for _, country in by_prefix)
    assert all((prefix == "980") == (country == "MCO") for prefix, country in by_prefix)


def test_andorra_and_its_spanish_and_french_edges(all_extracts: LoadedIndex) -> None:
    addresses = countries_in_box(all_extracts, "addresses", (42.4, 42.7, 1.4, 1.8))
    assert set(addresses) == {"AND"}
    names = countries_in_box(all_extracts, "names", (42.3, 42.8, 1.3, 1.9))
    assert {"AND", "ESP", "FRA"} <= set(names)
    assert None not in names


def test_no_dataset_wide_default_country(all_extracts: LoadedIndex) -> None:
    assert all_extracts.reader.meta["default_country"] is None
    assert {"AND", "DEU", "ESP", "FIN", "FRA", "MCO"} <= set(all_extracts.reader.meta["countries"])


def test_a_city_never_crosses_a_border(all_extracts: LoadedIndex) -> None:
    cities = all_extracts.reader.connection().execute(
        "SELECT DISTINCT city, country FROM addresses WHERE city IS NOT NULL"
        " UNION SELECT DISTINCT city, country FROM names WHERE city IS NOT NULL AND kind = 'street'"
    )
    countries_of_city: dict[str, set[str]] = {}
    for city, country in cities:
        countries_of_city.setdefault(city, set()).add(country)
    assert countries_of_city["Monaco"] == {"MCO"}
    assert countries_of_city["Helsinki"] == {"FIN"}
    assert "MCO" not in countries_of_city.get("Beausoleil", set())


@pytest.mark.parametrize(
    ("text", "country", "street", "number"),
    [
        ("Mannerheimintie 20, Helsinki", "FIN", "Mannerheimintie", "20"),
        ("Aleksanterinkatu 21", "FIN", "Aleksanterinkatu", "21"),
        ("Marienplatz 8, 80331 München", "DEU", "Marienplatz", "8"),
        ("Quai Antoine 1er 6, 98000 Monaco", "MCO", "Quai Antoine 1er", "6"),
        ("Av. Meritxell 92, Andorra la Vella", "AND", "Avinguda Meritxell", "92"),
    ],
)
def test_the_country_filter_keeps_every_countrys_addresses(
    all_extracts: LoadedIndex, text: str, country: str, street: str, number: str
) -> None:
    result = top(all_extracts, text, country)
    assert (result.address.street, result.address.house_number, result.address.country) == (street, number, country)
    other = "DEU" if country != "DEU" else "FIN"
    assert all(r.address.country == other for r in answer(all_extracts, text, other).results)


@pytest.mark.parametrize("country", [None, "MCO"])
def test_a_word_that_names_a_country_and_a_place_matches_as_either(
    all_extracts: LoadedIndex, country: str | None
) -> None:
    result = top(all_extracts, "Quai Antoine 1er 6, Monaco", country)
    assert (result.address.street, result.address.house_number, result.address.country) == (
        "Quai Antoine 1er",
        "6",
        "MCO",
    )
    assert result.address.city == "Monaco"


def test_a_country_name_alone_at_the_end_filters(all_extracts: LoadedIndex) -> None:
    assert top(all_extracts, "Mannerheimintie 20, Finland").address.country == "FIN"
    assert answer(all_extracts, "Marienplatz 8, Finland").results == []


def test_notes_say_why_an_answer_is_empty(all_extracts: LoadedIndex) -> None:
    not_loaded = answer(all_extracts, "Rua Augusta 100, Lisboa", "PRT")
    assert not_loaded.results == [] and [n.code for n in not_loaded.notes] == ["COUNTRY_NOT_LOADED", "PLACE_NOT_FOUND"]
    assert "PRT" in not_loaded.notes[0].message and "FIN" in not_loaded.notes[0].message
    conflict = answer(all_extracts, "Marienplatz 8, Finland", "DEU")
    assert conflict.results == [] and [n.code for n in conflict.notes] == ["COUNTRY_CONFLICT"]
    unknown_town = answer(all_extracts, "Rua Nova do Almada 100, Lisboa")
    assert [n.code for n in unknown_town.notes] == ["PLACE_NOT_FOUND"] and "Lisboa" in unknown_town.notes[0].message


def test_structured_input_in_a_multi_country_index(all_extracts: LoadedIndex) -> None:
    query = GeocodeQuery("", "FIN", 5, StructuredAddress(street="Mannerheimintie", house_number="20", city="Helsinki"))
    result = all_extracts.matcher.geocode(query).results[0]
    assert (result.address.street, result.address.house_number, result.address.country) == (
        "Mannerheimintie",
        "20",
        "FIN",
    )


def test_reverse_answers_each_address_once_with_its_distance(all_extracts: LoadedIndex) -> None:
    from geo_service.model import ReverseQuery

    results = all_extracts.matcher.reverse(ReverseQuery(60.1699, 24.9384, 10)).results
    labels = [(r.address.street, r.address.house_number, r.address.postcode) for r in results]
    assert len(results) == 10 and len(set(labels)) == 10
    distances = [r.distance_m or 0.0 for r in results]
    assert distances == sorted(distances) and distances[-1] < 250
