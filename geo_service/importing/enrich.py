"""Filling in what an object's tags leave out: its country, city and postcode.

Missing country / addr:city / addr:postcode are filled from where the object lies (locate.py):
the country from a valid `addr:country` tag, else the map's country areas, else offline country
polygons; the city from the enclosing municipality or settlement area, then the tagged
addresses nearby, then the nearest settlement, then the city that names nearly all of the
country's addresses in this input; the postcode from postal areas, then tagged neighbours on
the same street. Neighbours and settlements are only looked up in the same country.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from geo_service.importing.extract import RawAddress
from geo_service.importing.locate import Locator, NeighbourIndex, Placement, boundary_city, boundary_postcode, majority
from geo_service.normalize import Normalizer
from geo_service.records import Address

NEIGHBOUR_CITY_M = 500.0
NEIGHBOUR_POSTCODE_M = 300.0
NEIGHBOUR_CITY_FAR_M = 3000.0
# An inferred default city is used only when it names nearly every address of its country.
DOMINANT_CITY_SHARE = 0.8


@dataclass
class Context:
    """What every step of one input's build looks things up in."""

    locator: Locator
    normalizer: Normalizer
    default_cities: dict[str | None, str]  # per country
    tagged_cities: NeighbourIndex | None = None

    def default_city(self, country: str | None) -> str | None:
        return self.default_cities.get(country)

    def city_nearby(self, lat: float, lon: float, country: str | None, radius_m: float) -> str | None:
        if self.tagged_cities is None:
            return None
        return majority(self.tagged_cities.nearby_labels(lat, lon, country, radius_m))


def countries_of(raw: list[RawAddress], placements: list[Placement]) -> list[str | None]:
    """A valid addr:country tag wins over where the address lies."""
    return [a.tags.country or where.country for a, where in zip(raw, placements, strict=True)]


def fill_addresses(raw: list[RawAddress], placements: list[Placement], context: Context) -> list[Address]:
    countries = countries_of(raw, placements)
    projection = context.locator.projection
    context.tagged_cities = NeighbourIndex(
        projection, ((a.lat, a.lon, c, a.tags.city) for a, c in zip(raw, countries, strict=True) if a.tags.city)
    )
    normalizer = context.normalizer
    postcodes = NeighbourIndex(
        projection,
        (
            (a.lat, a.lon, c, f"{normalizer.key(a.tags.street_or_place or '')}\t{a.tags.postcode}")
            for a, c in zip(raw, countries, strict=True)
            if a.tags.postcode
        ),
    )
    addresses = []
    for a, where, country in zip(raw, placements, countries, strict=True):
        street = a.tags.street_or_place or ""
        city = (
            a.tags.city
            or boundary_city(where.boundaries)
            or context.city_nearby(a.lat, a.lon, country, NEIGHBOUR_CITY_M)
            or context.locator.nearest_settlement(a.lat, a.lon, country)
            or context.default_city(country)
        )
        postcode = (
            a.tags.postcode
            or boundary_postcode(where.boundaries)
            or neighbour_postcode(postcodes, a, country, normalizer.key(street))
        )
        number = a.house_number
        addresses.append(
            Address(
                street, a.house_number_text, number.text, number.base, postcode, city, country, a.lat, a.lon,
                a.interpolated,
            )
        )
    return addresses


def neighbour_postcode(index: NeighbourIndex, address: RawAddress, country: str | None, street_key: str) -> str | None:
    """The postcode of the nearest tagged addresses, preferring those on the same street."""
    labels = index.nearby_labels(address.lat, address.lon, country, NEIGHBOUR_POSTCODE_M)
    same_street = [label.split("\t")[1] for label in labels if label.split("\t")[0] == street_key]
    return majority(same_street) or majority(label.split("\t")[1] for label in labels[:3])


def dominant_cities(addresses: list[RawAddress], countries: list[str | None]) -> dict[str | None, str]:
    """Per country, the addr:city that names at least DOMINANT_CITY_SHARE of its addresses."""
    by_country: dict[str | None, Counter[str | None]] = defaultdict(Counter)
    for address, country in zip(addresses, countries, strict=True):
        by_country[country][address.tags.city] += 1
    dominant = {}
    for country, counts in by_country.items():
        total = sum(counts.values())
        named = [(city, n) for city, n in counts.most_common() if city]
        if named and named[0][1] >= DOMINANT_CITY_SHARE * total:
            dominant[country] = named[0][0]
    return dominant
