"""Honest matches (issue 34, item 4): every result says how much of the query it matched
(`matchLevel`), a house number that is not on the map is said so beside the street answered in
its place, and "postcode city" answers the postcode's area with the postcode kept.

Cases are drawn by rule from each index's own rows, on each extract's index (Munich, Heidelberg,
and Andorra + Monaco + Helsinki in one) and on all five as one map.
"""

from __future__ import annotations

import pytest
import yaml

from gateway.docs import SPEC_PATH
from geo_service.analysis import analyse
from geo_service.formatter import result_json
from geo_service.index import LoadedIndex
from geo_service.model import MATCH_LEVELS, GeocodeAnswer, GeocodeQuery, match_level

INDEXES = ("munich", "heidelberg", "andorra_monaco_helsinki", "all_extracts")


@pytest.fixture(params=INDEXES)
def index(request: pytest.FixtureRequest) -> LoadedIndex:
    loaded: LoadedIndex = request.getfixturevalue(request.param)
    return loaded


def ask(index: LoadedIndex, text: str, country: str | None = None) -> GeocodeAnswer:
    return index.matcher.geocode(GeocodeQuery(text=text, country=country, limit=3))


def rows(index: LoadedIndex, sql: str) -> list[tuple[str, ...]]:
    return [tuple(str(v) for v in row) for row in index.reader.connection().execute(sql)]


def test_each_kind_of_result_names_its_match_level(index: LoadedIndex) -> None:
    street, number, postcode, city, country = rows(index, (
        "SELECT street, house_number, postcode, city, country FROM addresses WHERE interpolated = 0 "
        "AND postcode IS NOT NULL AND city IS NOT NULL ORDER BY id LIMIT 1"))[0]  # fmt: skip
    area = index.reader.postcode_areas(postcode, country)[0]
    cases = {
        f"{street} {number}, {postcode} {city}": "houseNumber",
        f"{street}, {postcode} {city}": "street",
        f"{postcode} {area.city}": "postcode",  # the town most of its objects name
    }
    for text, level in cases.items():
        best = ask(index, text, country).results[0]
        assert match_level(best) == level, (text, best)
        assert result_json(best)["matchLevel"] == level
    for (name,) in rows(index, "SELECT name FROM names WHERE category = 'place=city' ORDER BY importance DESC LIMIT 3"):
        levels = {match_level(r) for r in ask(index, name).results if name in (r.name, r.address.city)}
        assert "city" in levels, name  # a station of the same name may come first


def test_an_estimated_house_number_is_marked_interpolated(all_extracts: LoadedIndex) -> None:
    interpolated = rows(all_extracts, (
        "SELECT street, house_number, postcode, city FROM addresses WHERE interpolated = 1 AND postcode IS NOT NULL "
        "AND house_number NOT IN (SELECT house_number FROM addresses b WHERE b.interpolated = 0 "
        "AND b.street = addresses.street AND b.city = addresses.city) ORDER BY id LIMIT 20"))  # fmt: skip
    assert interpolated, "Heidelberg's extract has addr:interpolation ways"
    for street, number, postcode, city in interpolated:
        best = ask(all_extracts, f"{street} {number}, {postcode} {city}").results[0]
        assert (best.address.house_number, match_level(best)) == (number, "interpolated")


def test_a_house_number_not_on_the_map_is_said_so_beside_its_street(index: LoadedIndex) -> None:
    """Every street of the index with addresses, asked with a number past its last one: its
    street, marked as such (matchLevel street and a note that names the number)."""
    streets = rows(index, (
        "SELECT street, city, max(house_base) + 500 FROM addresses WHERE city IS NOT NULL AND interpolated = 0 "
        "GROUP BY street, city ORDER BY count(*) DESC LIMIT 25"))  # fmt: skip
    for street, city, missing in streets:
        answer = ask(index, f"{street} {missing}, {city}")
        best = answer.results[0]
        assert (best.address.street, match_level(best)) == (street, "street"), (street, city, best)
        (note,) = answer.notes
        assert note.code == "HOUSE_NUMBER_NOT_FOUND" and f"house number {missing} " in note.message
    found = ask(index, "{} {}, {}".format(*rows(index, "SELECT street, house_number, city FROM addresses "
                                               "WHERE interpolated = 0 AND city IS NOT NULL LIMIT 1")[0]))  # fmt: skip
    assert found.notes == () and match_level(found.results[0]) == "houseNumber"


def test_postcode_and_city_answer_the_postcode_s_area_and_keep_the_postcode(index: LoadedIndex) -> None:
    """Every postcode of the index that reads as one, with each town its objects name (any
    object's addr:postcode, named or not: "AD300 Llorts" as well as "AD300 Ordino"): the area
    there, not the town alone, which drops the postcode."""
    matcher, asked = index.matcher, 0
    for postcode in sorted(set(matcher.lexicon.postcodes.values())):
        for area in index.reader.postcode_areas(postcode, None):
            if not area.city or not any(c.isalpha() for c in area.city):
                continue  # addr:city=7, mapped in Helsinki: a number, no town
            if analyse(GeocodeQuery(f"{postcode} {area.city}"), matcher.lexicon).parsed.postcode is None:
                continue  # a tag that is no postcode ("100", mapped in Andorra): read as a number
            best = ask(index, f"{postcode} {area.city}").results[0]
            town = matcher.lexicon.city_key(best.address.city)  # "Pas de La Casa" is "Pas de la Casa"
            assert (best.address.postcode, town, match_level(best)) == (postcode, matcher.lexicon.city_key(area.city), "postcode")
            asked += 1
    assert asked >= 2


def test_a_postcode_only_unnamed_objects_carry_is_still_an_area(heidelberg: LoadedIndex) -> None:
    """69214 is on Heidelberg's map only as parking lots' and a bare area's addr:postcode, with
    addr:city Eppelheim: "69214 Eppelheim" was the sports club "ASV Eppelheim"."""
    connection = heidelberg.reader.connection()
    only_there = connection.execute(
        "SELECT postcode, city FROM postcode_areas WHERE city IS NOT NULL AND postcode NOT IN "
        "(SELECT postcode FROM addresses WHERE postcode IS NOT NULL) AND postcode NOT IN "
        "(SELECT postcode FROM names WHERE postcode IS NOT NULL) ORDER BY postcode"
    ).fetchall()
    assert only_there
    for postcode, city in only_there:
        best = ask(heidelberg, f"{postcode} {city}").results[0]
        assert (best.address.postcode, match_level(best)) == (postcode, "postcode")


def test_a_number_that_is_a_known_postcode_beside_its_town_is_the_area(andorra_monaco_helsinki: LoadedIndex) -> None:
    """Andorra's mappers wrote "500" for AD500: "500 Santa Coloma" is that area, not house number
    500 of a street named after the town; beside a street the number stays a house number."""
    index = andorra_monaco_helsinki
    best = ask(index, "500 Santa Coloma").results[0]
    assert (best.address.postcode, match_level(best)) == ("500", "postcode")
    street = ask(index, "Avinguda de Santa Coloma 500").results[0]
    assert match_level(street) == "street" and street.address.street == "Avinguda de Santa Coloma"


def test_the_levels_are_the_documented_ones() -> None:
    """The spec lists exactly the levels the code answers."""
    spec = yaml.safe_load(SPEC_PATH.read_text(encoding="utf-8"))
    documented = spec["components"]["schemas"]["GeocodeResult"]["properties"]["matchLevel"]["enum"]
    assert tuple(documented) == MATCH_LEVELS == ("houseNumber", "interpolated", "street", "postcode", "place", "poi", "city")
