"""Names by their parts (issue 34, item 3): a POI is found by a whole word of its name that no
other name holds ("Tuomiokirkko Helsinki" for "Helsingin tuomiokirkko"; before, the railway
station at Kaivokatu 1 was answered).

The cases are drawn by rule from each extract read with plain pyosmium: of every POI node's name
of several words that no other object carries, its longest word of at least 6 letters that no
other name of the extract holds as a word.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import osmium
import pytest

from common.geo import LatLon
from geo_service.importing.extract import poi_category
from geo_service.index import LoadedIndex
from geo_service.model import GeocodeQuery
from tests.geo_service.conftest import missed_near

INDEXES = {"munich": ("munich",), "heidelberg": ("heidelberg",), "andorra_monaco_helsinki": ("andorra", "monaco", "helsinki")}
PER_INDEX = 60
# Measured on these draws' kind (bench/geocoder_places.py, "part of a name"): 80-92 % per map
# with the rule, 27-67 % without it.
LEAST_FOUND = 0.75


def parts_in(path: Path) -> list[tuple[str, LatLon]]:
    names: Counter[str] = Counter()
    pois: list[tuple[str, LatLon]] = []
    for obj in osmium.FileProcessor(str(path)).with_filter(osmium.filter.KeyFilter("name")):
        names.update({v.casefold() for k, v in obj.tags if k == "name" or k.endswith("_name") or k.startswith("name:")})
        if isinstance(obj, osmium.osm.Node) and poi_category(obj.tags):
            pois.append((obj.tags["name"], LatLon(obj.location.lat, obj.location.lon)))
    words = Counter(w for name in names for w in set(name.split()))
    found = []
    for name, point in pois:
        mine = [w for w in name.split() if w.isalpha() and len(w) >= 6 and words[w.casefold()] == 1]
        if names[name.casefold()] == 1 and len(name.split()) > 1 and mine:
            found.append((max(mine, key=len), point))
    return found


@pytest.mark.parametrize("index_name", list(INDEXES))
def test_a_poi_is_found_by_a_word_of_its_name_no_other_name_holds(
    index_name: str, request: pytest.FixtureRequest, shared_osm: Path
) -> None:
    index: LoadedIndex = request.getfixturevalue(index_name)
    every = [case for city in INDEXES[index_name] for case in parts_in(shared_osm / f"{city}.osm.pbf")]
    cases = random.Random(index_name).sample(every, min(PER_INDEX, len(every)))
    assert len(cases) >= 30, index_name
    missed = missed_near(index, cases)
    assert len(missed) <= (1 - LEAST_FOUND) * len(cases), missed


def test_the_cathedral_by_its_short_finnish_name_and_its_town(andorra_monaco_helsinki: LoadedIndex) -> None:
    [top] = andorra_monaco_helsinki.matcher.geocode(GeocodeQuery(text="Tuomiokirkko Helsinki", limit=1)).results
    assert (top.name, top.type) == ("Helsingin tuomiokirkko", "poi")
