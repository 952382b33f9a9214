"""Kinds of places in the user's language (issue 34, item 2): "Apotheke München", "pharmacie
Monaco", "ravintola Helsinki", "pharmacy near 48.137,11.575" find POIs of that kind, from iD's
tagging schema (vendored by make install), in the place named, nearest its centre first.

Cases are drawn by rule from each index: its city with most POIs, that city's most common
kinds of POI, and each kind's preset name in English, German, French and Finnish.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from common.geo import LatLon, haversine_m
from gateway.vendor import ID_TAGGING_SCHEMA, KIND_LANGUAGES
from geo_service.candidates import KIND_DISTANCE_M
from geo_service.index import LoadedIndex
from geo_service.kinds import KindVocabulary, KindWords, PresetWords, kind_vocabulary, preset_words
from geo_service.model import GeocodeAnswer, GeocodeQuery, match_level
from geo_service.normalize import Normalizer
from geo_service.ranking import NAMED_AS_ASKED
from geo_service.similarity import MIN_PART_CHARS

INDEXES = ("munich", "heidelberg", "andorra_monaco_helsinki", "all_extracts")
ASKED_LANGUAGES = ("en", "de", "fr", "fi")


@pytest.fixture(params=INDEXES)
def index(request: pytest.FixtureRequest) -> LoadedIndex:
    loaded: LoadedIndex = request.getfixturevalue(request.param)
    return loaded


def ask(index: LoadedIndex, text: str, limit: int = 5) -> GeocodeAnswer:
    return index.matcher.geocode(GeocodeQuery(text=text, limit=limit))


def test_the_schema_is_vendored_in_every_language() -> None:
    """make install vendors it; under CI its absence is a failure, never a skip."""
    words = preset_words(ID_TAGGING_SCHEMA.directory)
    assert {w.language for w in words} == set(KIND_LANGUAGES), os.environ.get("CI")
    assert ID_TAGGING_SCHEMA.installed()


def test_names_win_over_search_terms_and_shared_words_ask_every_kind() -> None:
    presets = [
        PresetWords("amenity=bar", "en", "Bar", ("pub",)),
        PresetWords("amenity=restaurant", "en", "Restaurant", ("bar", "dining", "EV")),
        PresetWords("amenity=bank", "de", "Bank", ()),
        PresetWords("amenity=bench", "de", "Bank", ()),
        PresetWords("amenity=place_of_worship", "en", "Place of Worship", ()),
    ]
    kinds = KindVocabulary(presets, Normalizer().key)
    assert kinds.kinds["bar"] == {"amenity=bar"}  # only a term of restaurants
    assert kinds.kinds["dining"] == {"amenity=restaurant"}
    assert kinds.kinds["bank"] == {"amenity=bank", "amenity=bench"}
    assert "ev" not in kinds.kinds  # too short a term: an abbreviation
    found = kinds.find(["place", "of", "worship", "munchen"])
    assert found is not None and (found.kind, found.rest) == ("place of worship", "munchen")
    assert kinds.find(["hauptstrasse", "heidelberg"]) is None


def kinds_of_the_busiest_city(index: LoadedIndex) -> tuple[str, list[str]]:
    """The city with most POIs, and its three most common kinds of POI (at least 3 of each)."""
    connection = index.reader.connection()
    (city,) = connection.execute(
        "SELECT city FROM names WHERE kind = 'poi' AND city IS NOT NULL GROUP BY city ORDER BY count(*) DESC LIMIT 1"
    ).fetchone()
    counts = Counter(c for (c,) in connection.execute("SELECT category FROM names WHERE kind = 'poi' AND city = ?", (city,)))
    return city, [c for c, n in counts.most_common() if n >= 3 and known(index, c)][:3]


def known(index: LoadedIndex, category: str) -> bool:
    return any(w.category == category and w.name for w in preset_words())


def test_a_kind_in_each_language_and_a_city_finds_that_kind_there_nearest_the_centre_first(index: LoadedIndex) -> None:
    city, categories = kinds_of_the_busiest_city(index)
    assert categories, city
    vocabulary = kind_vocabulary(tuple(sorted(index.matcher.lexicon.normalizer.expansions.items())))
    asked = 0
    for category in categories:
        for word in {w.name for w in preset_words() if w.category == category and w.name and w.language in ASKED_LANGUAGES}:
            found = vocabulary.find(index.matcher.lexicon.normalizer.words(word))
            assert found is not None
            there = len([p for p in index.reader.pois_of(found.categories, None) if p.city == city])
            answer = ask(index, f"{word} {city}")
            of_kind = answer.results[: min(5, there)]  # then other answers may follow, below them
            assert len(of_kind) == min(5, there) >= 3, (word, city, answer.notes)
            for result in of_kind:
                assert (result.category in found.categories, result.address.city, match_level(result)) == (
                    True, city, "poi"), (word, result)  # fmt: skip
            scores = [r.score for r in of_kind]
            assert scores == sorted(scores, reverse=True)
            asked += 1
    assert asked >= len(categories)


def test_a_kind_near_a_point_answers_the_nearest_of_that_kind(index: LoadedIndex) -> None:
    city, categories = kinds_of_the_busiest_city(index)
    category = categories[0]
    lat, lon, name = index.reader.connection().execute(
        "SELECT lat, lon, name FROM names WHERE kind = 'poi' AND category = ? AND city = ? ORDER BY id LIMIT 1",
        (category, city),
    ).fetchone()
    word = category.partition("=")[2].replace("_", " ")  # the tag's value: English words
    answer = ask(index, f"{word} near {lat:.6f},{lon:.6f}")
    assert answer.results[0].name == name
    here = LatLon(lat, lon)
    assert all(haversine_m(here, LatLon(r.lat, r.lon)) <= KIND_DISTANCE_M for r in answer.results)


def test_a_kind_the_place_lacks_is_no_result_and_a_note_not_a_street_that_resembles_it(
    all_extracts: LoadedIndex,
) -> None:
    """Heidelberg's extract holds no pharmacy: "Apotheke Heidelberg" was the street
    Apothekergasse. A name that is exactly what was asked still answers ("Marktplatz", a square)."""
    answer = ask(all_extracts, "Apotheke Heidelberg")
    assert answer.results == [] and [n.code for n in answer.notes] == ["KIND_NOT_FOUND"]
    assert "amenity=pharmacy" in answer.notes[0].message
    square = ask(all_extracts, "Marktplatz Heidelberg").results[0]
    assert (square.type, square.address.street) == ("street", "Marktplatz")
    for text, street in (("Am Markt, Heidelberg", "Am Markt"), ("Apothekergasse Heidelberg", "Apothekergasse")):
        assert ask(all_extracts, text).results[0].address.street == street


def test_a_search_term_alone_is_no_kind_but_a_preset_name_is(index: LoadedIndex) -> None:
    """iD's search terms hold brands ("KappAhl", "Cubus": a clothes shop in Finnish): asked
    alone, a term is a name, not every POI of its kind; a preset's name alone still is a kind,
    and a term with a place too. Drawn by rule: terms of one word that no name of the index holds."""
    kinds = index.matcher.lexicon.kinds
    terms = sorted(word for word in kinds.kinds if word not in kinds.preset_names and " " not in word)
    unknown = [t for t in terms[:: max(1, len(terms) // 300)] if not index.reader.names_with_keys([t], None)][:60]
    assert len(unknown) >= 30
    answered_as_kind = [t for t in unknown if any(r.category in kinds.kinds[t] for r in ask(index, t).results)]
    assert len(answered_as_kind) <= 0.1 * len(unknown), answered_as_kind[:10]
    restaurants = ask(index, "restaurant").results
    assert restaurants and all(r.category == "amenity=restaurant" for r in restaurants)


def test_a_kind_of_many_words_is_read_whole() -> None:
    """Preset names of four and more words ("Magasin de matériel hi-fi", "Centre de fitness /
    gym") are kinds too: bench geocoder_places' kinds in a city went from 93-96 to 99-100 %."""
    normalizer = Normalizer()
    vocabulary = kind_vocabulary(())
    for name in ("Magasin de matériel hi-fi", "Centre de fitness / gym"):
        words = normalizer.key(f"{name} München").split()
        found = vocabulary.find(words)
        assert found is not None and found.kind == normalizer.key(name) and found.rest == "munchen", (name, found)


def preset_names_held_by_names(index: LoadedIndex) -> list[tuple[str, frozenset[str], list[tuple[str, str]]]]:
    """Each preset name of one word (a kind alone, asked without a place) that names of the index
    hold as a whole word, long enough to be found as a part of them (MIN_PART_CHARS): (the word,
    its kind's categories, those names' (name, category))."""
    kinds, normalizer = index.matcher.lexicon.kinds, index.matcher.lexicon.normalizer
    rows = index.reader.connection().execute("SELECT name, key, category FROM names WHERE kind = 'poi'").fetchall()
    holders: dict[str, list[tuple[str, str]]] = {}
    for name, key, category in rows:
        for word in set(key.split()):
            if word in kinds.preset_names and len(word) >= MIN_PART_CHARS:
                holders.setdefault(word, []).append((name, category))
    return [(word, kinds.kinds[word], held) for word, held in sorted(holders.items())
            if kinds.find(normalizer.words(word)) == KindWords(word, kinds.kinds[word], "", True)]  # fmt: skip


def test_a_kind_alone_answers_first_its_poi_whose_name_holds_the_word(index: LoadedIndex) -> None:
    """A kind's word alone is also a word of names ("Optikko": the optician "Optikko Kaisla"
    first, then the other opticians; names matched exactly before both): bench geocoder_places'
    parts of names that are a kind's word. Drawn by rule: every such word whose holders include
    a POI of the kind."""
    asked = 0
    for word, categories, held in preset_names_held_by_names(index):
        if any(category in categories for _, category in held):
            # the first of the kind: names matched exactly may come before ("Casino", a shop so named)
            top = next(r for r in ask(index, word, limit=20).results if r.category in categories)
            key = index.matcher.lexicon.normalizer.key(top.name or "")
            assert f" {word} " in f" {key} ", (word, top)
            asked += 1
    assert asked >= 3


def test_a_kind_the_map_lacks_asked_alone_answers_a_name_that_holds_the_word(index: LoadedIndex) -> None:
    """"Pastissería" on a map without pastry shops is the bar "Granja Pastissería Xocolatí", not
    nothing; where the kind is on the map, the names of other kinds come after its POIs."""
    asked = 0
    for word, categories, _ in preset_names_held_by_names(index):
        results = ask(index, word).results
        if not index.reader.pois_of(categories, None):
            key = index.matcher.lexicon.normalizer.key(results[0].name or "") if results else ""
            assert f" {word} " in f" {key} ", (word, results[:1])
            asked += 1
        else:  # below the names matched exactly ("Marktplatz", the streets)
            of_kind = [r.category in categories for r in results if r.score < NAMED_AS_ASKED]
            assert of_kind == sorted(of_kind, reverse=True), (word, results)
    assert asked >= 1
