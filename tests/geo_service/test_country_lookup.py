"""CountryLookup: the country a point lies in, from timezonefinder's areas and zone.tab.

Points on both sides of the borders the shared extracts touch (most taken from the extracts
themselves, with their distance to the border in the extract's own OSM data), the micro-states
and exclaves, the cities of the other extracts, and the sea.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import osmium
import pytest

from geo_service.importing.country_lookup import CountryLookup, zone_countries

POINTS: list[tuple[str, float, float, str]] = [
    # Monaco / France (addresses and stations of monaco.osm.pbf; metres to the border in brackets).
    ("Monaco, Mairie (790 m)", 43.73079, 7.42373, "MCO"),
    ("Monaco - Monte-Carlo station (80 m)", 43.73823, 7.41959, "MCO"),
    ("Monaco, Ambassade de France, Rue du Ténao (30 m)", 43.74932, 7.43412, "MCO"),
    ("Beausoleil, 06240 (120 m)", 43.74321, 7.42537, "FRA"),
    ("Beausoleil - Le Ténao, 06240 (110 m)", 43.75093, 7.43494, "FRA"),
    ("Roquebrune - Saint-Romain, 06190 (170 m)", 43.75280, 7.43939, "FRA"),
    ("Cap-d'Ail, 06320", 43.72305, 7.39694, "FRA"),
    # Andorra / Spain, at the Farga de Moles crossing, and the towns either side.
    ("Andorra, road north of the Farga de Moles crossing (300 m)", 42.44150, 1.44970, "AND"),
    ("Spain, road south-west of the crossing (120 m)", 42.44467, 1.44116, "ESP"),
    ("Andorra la Vella", 42.5063, 1.5218, "AND"),
    ("Sant Julià de Lòria", 42.4637, 1.4913, "AND"),
    ("La Seu d'Urgell", 42.3583, 1.4597, "ESP"),
    # Andorra / France, at Pas de la Case.
    ("Pas de la Case (200 m)", 42.54257, 1.73198, "AND"),
    ("France, road south of Pas de la Case (60 m)", 42.52082, 1.73034, "FRA"),
    ("L'Hospitalet-près-l'Andorre", 42.5886, 1.8008, "FRA"),
    # Basel: Switzerland, France, Germany.
    ("Basel SBB station", 47.5476, 7.5897, "CHE"),
    ("Basel Badischer Bahnhof (DB station on Swiss soil)", 47.5673, 7.6075, "CHE"),
    ("EuroAirport terminal (on French soil)", 47.5897, 7.5294, "FRA"),
    ("Saint-Louis (Haut-Rhin) station", 47.5906, 7.5581, "FRA"),
    ("Weil am Rhein station", 47.5934, 7.6106, "DEU"),
    # Liechtenstein, Switzerland across the Rhine, Austria.
    ("Vaduz, Rathaus", 47.1397, 9.5215, "LIE"),
    ("Schaan-Vaduz station", 47.1658, 9.5089, "LIE"),
    ("Buchs SG station", 47.1683, 9.4789, "CHE"),
    ("Feldkirch station", 47.2406, 9.6000, "AUT"),
    # Büsingen am Hochrhein: a German exclave inside Switzerland.
    ("Büsingen, village centre", 47.6967, 8.6900, "DEU"),
    ("Schaffhausen station", 47.6979, 8.6329, "CHE"),
    # The other extracts.
    ("Helsinki, Senate Square", 60.1695, 24.9525, "FIN"),
    ("Heidelberg, Bismarckplatz", 49.4094, 8.6942, "DEU"),
    ("Munich, Marienplatz", 48.1374, 11.5755, "DEU"),
    # Territorial waters belong to their country.
    ("Monaco, Port Hercule", 43.7347, 7.4226, "MCO"),
    ("Sea 1.5 km off Monaco", 43.7200, 7.4300, "MCO"),
]

# The open sea lies in the nautical zones Etc/GMT±N, which name no country.
NOWHERE: list[tuple[str, float, float]] = [
    ("Mediterranean between the Riviera and Algeria", 42.0, 6.0),
    ("Mid-Atlantic", 30.0, -40.0),
    ("South Pacific", -40.0, -130.0),
]


@pytest.fixture(scope="module")
def lookup() -> CountryLookup:
    return CountryLookup()


@pytest.mark.parametrize(("what", "lat", "lon", "country"), POINTS, ids=[p[0] for p in POINTS])
def test_country_at(lookup: CountryLookup, what: str, lat: float, lon: float, country: str) -> None:
    assert lookup.country_at(lat, lon) == country


@pytest.mark.parametrize(("what", "lat", "lon"), NOWHERE, ids=[p[0] for p in NOWHERE])
def test_open_sea_is_no_country(lookup: CountryLookup, what: str, lat: float, lon: float) -> None:
    assert lookup.country_at(lat, lon) is None


def test_countries_at_answers_each_point_in_order(lookup: CountryLookup) -> None:
    lats = np.array([p[1] for p in POINTS] + [p[1] for p in NOWHERE])
    lons = np.array([p[2] for p in POINTS] + [p[2] for p in NOWHERE])
    expected = [p[3] for p in POINTS] + [None] * len(NOWHERE)
    assert lookup.countries_at(lats, lons) == expected


def test_invalid_coordinates_answer_none(lookup: CountryLookup) -> None:
    lats = np.array([95.0, math.nan, 47.1397, -91.0])
    lons = np.array([0.0, 9.5, 9.5215, 200.0])
    assert lookup.countries_at(lats, lons) == [None, None, "LIE", None]


def test_empty_and_mismatched_input(lookup: CountryLookup) -> None:
    assert lookup.countries_at(np.array([]), np.array([])) == []
    with pytest.raises(ValueError, match="equally long"):
        lookup.countries_at(np.array([1.0, 2.0]), np.array([1.0]))


def test_lists_are_accepted_as_arrays(lookup: CountryLookup) -> None:
    assert lookup.countries_at([60.1695], [24.9525]) == ["FIN"]  # type: ignore[arg-type]


def test_instances_share_one_load() -> None:
    from geo_service.importing import country_lookup

    CountryLookup().country_at(60.1695, 24.9525)
    loaded = country_lookup._LOADED
    assert loaded is not None
    CountryLookup().country_at(48.1374, 11.5755)
    assert country_lookup._LOADED is loaded


def test_zone_tab_gives_one_country_per_zone() -> None:
    zones = zone_countries()
    # zone1970.tab would give Europe/Zurich to CH, DE and LI, and Europe/Paris to FR and MC.
    assert zones["Europe/Zurich"] == "CHE"
    assert zones["Europe/Busingen"] == "DEU"
    assert zones["Europe/Vaduz"] == "LIE"
    assert zones["Europe/Monaco"] == "MCO"
    assert zones["Europe/Paris"] == "FRA"
    assert zones["Europe/Andorra"] == "AND"
    assert "Etc/GMT-1" not in zones


def test_zone_countries_parses_given_text() -> None:
    text = "# comment\nMC\t+4342+00723\tEurope/Monaco\nXX\t+0000+00000\tNowhere/Unknown\n\n"
    assert zone_countries(text) == {"Europe/Monaco": "MCO"}


POSTCODE_COUNTRY = ((r"980\d\d", "MCO"), (r"06\d{3}", "FRA"), (r"AD\d{3}", "AND"))


@pytest.mark.parametrize("name", ["monaco", "andorra"])
def test_addresses_lie_in_the_country_of_their_postcode(lookup: CountryLookup, shared_osm: Path, name: str) -> None:
    """Every address node of the extract whose postcode names a country lies in that country."""
    lats, lons, expected = [], [], []
    for obj in osmium.FileProcessor(str(shared_osm / f"{name}.osm.pbf")).with_filter(
        osmium.filter.KeyFilter("addr:postcode")
    ):
        if not isinstance(obj, osmium.osm.Node):
            continue
        postcode = obj.tags["addr:postcode"].replace(" ", "").upper()
        country = next((c for pattern, c in POSTCODE_COUNTRY if re.fullmatch(pattern, postcode)), None)
        if country:
            lats.append(obj.location.lat)
            lons.append(obj.location.lon)
            expected.append(country)
    assert len(expected) > 40
    assert lookup.countries_at(np.array(lats), np.array(lons)) == expected
