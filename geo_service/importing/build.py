"""From raw OSM records to the index's rows: the assembly of one input's dataset.

Addresses are filled in (`enrich`), grouped onto streets (`streets`), and joined by the
places and POIs of the extract; several inputs are merged into one dataset.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np

from geo_service.geometry import Projection
from geo_service.importing.country_lookup import CountryLookup
from geo_service.importing.enrich import Context, countries_of, dominant_cities, fill_addresses
from geo_service.importing.extract import PLACE_TYPES, SETTLEMENTS, AddressTags, Extract
from geo_service.importing.locate import Locator, Placement, boundary_city, boundary_postcode, majority
from geo_service.importing.streets import representative_point, street_clusters, streets_as_names
from geo_service.normalize import Normalizer, vocabulary_of
from geo_service.records import Address, Dataset, Named, PostcodePoint

# ---------------------------------------------------------------- the whole dataset


def extract_vocabulary(extract: Extract) -> set[str]:
    """The words of every name: what ambiguous abbreviations are resolved against."""
    names = [w.name for w in extract.streets] + [a.tags.street_or_place or "" for a in extract.addresses]
    return vocabulary_of(names + [p.name for p in extract.places] + [p.name for p in extract.pois])


def build_dataset(
    extract: Extract,
    *,
    countries: CountryLookup,
    default_country: str | None = None,
    default_city: str | None = None,
    vocabulary: set[str] | None = None,
) -> Dataset:
    """`vocabulary`: of all inputs when several are merged, so every key is made the same way.
    `default_country` / `default_city`: the operator's, for objects nothing else places."""
    vocabulary = vocabulary if vocabulary is not None else extract_vocabulary(extract)
    lats = [a.lat for a in extract.addresses] + [c[0] for w in extract.streets[:1000] for c in w.coords[:1]]
    projection = Projection(float(np.mean(lats)) if lats else 0.0)
    locator = Locator(extract, projection, countries, default_country)
    raw = extract.addresses
    placements = locator.place([a.lat for a in raw], [a.lon for a in raw])
    cities = defaultdict(lambda: default_city) if default_city else dominant_cities(raw, countries_of(raw, placements))
    context = Context(locator, Normalizer(vocabulary), cities)
    addresses = fill_addresses(raw, placements, context)
    clusters = street_clusters(extract.streets, addresses, context)
    streets = streets_as_names(clusters, context)
    for street_id, cluster in enumerate(clusters):
        for address in cluster.addresses:
            address.street_id = street_id
    # Streets stay as they are (addresses refer to them by position); nameless others go.
    others = places_as_names(extract, addresses, context) + pois_as_names(extract, context)
    names = streets + [n for n in others if n.key]
    return Dataset(addresses, names, vocabulary, default_country, default_city, extract.translation_table(),
                   postcode_points(extract, context))  # fmt: skip


def merge_datasets(datasets: list[Dataset]) -> Dataset:
    """Several inputs in one index: names concatenated, street ids shifted to match."""
    if len(datasets) == 1:
        return datasets[0]
    addresses: list[Address] = []
    names: list[Named] = []
    vocabulary: set[str] = set()
    translations: dict[tuple[str, str], str] = {}
    postcodes: list[PostcodePoint] = []
    for dataset in datasets:
        for address in dataset.addresses:
            address.street_id += len(names)
        addresses += dataset.addresses
        names += dataset.names
        vocabulary |= dataset.vocabulary
        translations = dataset.translations | translations  # the first input's where two differ
        postcodes += dataset.postcodes
    return Dataset(addresses, names, vocabulary, datasets[0].default_country, datasets[0].default_city, translations,
                   postcodes)  # fmt: skip


# ---------------------------------------------------------------- places and POIs


def places_as_names(extract: Extract, addresses: list[Address], context: Context) -> list[Named]:
    names: list[Named] = []
    seen: set[tuple[str, str | None]] = set()
    placements = context.locator.place([p.lat for p in extract.places], [p.lon for p in extract.places])
    for place, where in zip(extract.places, placements, strict=True):
        settlement = place.place_type in SETTLEMENTS
        city = (
            place.name
            if settlement
            else (
                boundary_city(where.boundaries)
                or context.locator.nearest_settlement(place.lat, place.lon, where.country)
                or context.default_city(where.country)
            )
        )
        key = context.normalizer.key(place.name)
        seen.add((key, where.country))
        named = Named(
            "place", place.name, key, place.lat, place.lon, city=city, country=where.country,
            importance=PLACE_TYPES.get(place.place_type, 0.3), category=f"place={place.place_type}",
        )  # fmt: skip
        names += [named, *variant_names(named, place.variants, context.normalizer)]
    return names + cities_of_addresses(addresses, seen, context.normalizer)


def variant_names(named: Named, variants: tuple[str, ...], normalizer: Normalizer) -> list[Named]:
    """The object again under each of its other names (a row each, searched like any name; the
    answer shows the name it was found by). Names that normalize alike are one."""
    keys = {named.key}
    rows = []
    for variant in variants:
        key = normalizer.key(variant)
        if key and key not in keys:
            keys.add(key)
            rows.append(replace(named, name=variant, key=key))
    return rows


def cities_of_addresses(
    addresses: list[Address], seen: set[tuple[str, str | None]], normalizer: Normalizer
) -> list[Named]:
    """Cities named only by addr:city (no place node in the extract) become places at their
    addresses' centre, one per country."""
    by_city: dict[tuple[str, str | None], list[Address]] = defaultdict(list)
    for address in addresses:
        if address.city:
            by_city[(address.city, address.country)].append(address)
    names = []
    for (city, country), members in by_city.items():
        key = normalizer.key(city)
        if (key, country) in seen or not key:
            continue
        lat, lon = representative_point([(a.lat, a.lon) for a in members])
        names.append(
            Named(
                "place", city, key, float(lat), float(lon), city=city, country=country, importance=0.8,
                category="place=city", postcode=majority(a.postcode for a in members),
            )
        )
    return names


def pois_as_names(extract: Extract, context: Context) -> list[Named]:
    pois = extract.pois
    placements = context.locator.place([p.lat for p in pois], [p.lon for p in pois])
    names = []
    for poi, where in zip(pois, placements, strict=True):
        country, city = country_and_town(poi.tags, poi.lat, poi.lon, where, context)
        named = Named(
            "poi", poi.name, context.normalizer.key(poi.name), poi.lat, poi.lon, city=city,
            postcode=poi.tags.postcode or boundary_postcode(where.boundaries), country=country,
            importance=0.3, category=poi.category, street=poi.tags.street_or_place,
            house_number=poi.house_number_text,
        )  # fmt: skip
        names += [named, *variant_names(named, poi.variants, context.normalizer)]
    return names


def postcode_points(extract: Extract, context: Context) -> list[PostcodePoint]:
    """Every object's addr:postcode where it lies, with its town as a POI's is found (its
    addr:city, else the area or settlement it lies in)."""
    raw = extract.postcodes
    placements = context.locator.place([p.lat for p in raw], [p.lon for p in raw])
    points = []
    for point, where in zip(raw, placements, strict=True):
        country, city = country_and_town(point.tags, point.lat, point.lon, where, context)
        points.append(PostcodePoint(point.postcode, city, country, point.lat, point.lon))
    return points


def country_and_town(tags: AddressTags, lat: float, lon: float, where: Placement, context: Context) -> tuple[str | None, str | None]:
    """An object's country and town: its tags', else the areas it lies in, else the nearest
    settlement, else the operator's default."""
    country = tags.country or where.country
    town = (
        tags.city
        or boundary_city(where.boundaries)
        or context.locator.nearest_settlement(lat, lon, country)
        or context.default_city(country)
    )
    return country, town
