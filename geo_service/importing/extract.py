"""Reading OSM extracts: every addressable object as a plain record (no enrichment yet).

One pass per file with pyosmium: node locations are kept so ways get coordinates, and
multipolygon relations are assembled into areas (addresses on relations, boundaries,
place areas). Ways and relation areas are reduced to their centroid; named streets keep
their geometry so the importer can group them and pick a point on the street.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import osmium

from common.languages import most_carried, names_in_languages
from common.vocabulary import LANGUAGES
from geo_service.countries import alpha3_from_tag
from geo_service.parser import HouseNumber, house_numbers_of_tag
from geo_service.records import POI_KEYS, POI_VALUES

PLACE_TYPES = {
    "city": 1.0,
    "town": 0.9,
    "village": 0.8,
    "borough": 0.75,
    "suburb": 0.7,
    "quarter": 0.65,
    "hamlet": 0.6,
    "neighbourhood": 0.6,
    "locality": 0.5,
    "isolated_dwelling": 0.4,
    "square": 0.5,
    "island": 0.5,
    "islet": 0.4,
    "city_block": 0.3,
}
SETTLEMENTS = ("city", "town", "village", "hamlet")
VARIANT_KEYS = ("alt_name", "old_name", "official_name", "short_name", "loc_name")
# A landmark's names in 14 languages and its old and short names: more are kept as noise.
MAX_VARIANTS = 12
MIN_VARIANT_LETTERS = 2
# Highways that are not streets anyone lives on or asks for.
SKIPPED_HIGHWAYS = {"platform", "bus_stop", "proposed", "construction", "abandoned", "razed", "elevator", "corridor"}
INTERPOLATION_STEPS = {"odd": 2, "even": 2, "all": 1, "1": 1, "2": 2}
MAX_INTERPOLATED_PER_SEGMENT = 500

LatLon = tuple[float, float]
LISTED = re.compile(r"[;,]")  # "69117;69118": an object on a border says nothing of either area


@dataclass
class AddressTags:
    street: str | None
    place: str | None
    postcode: str | None
    city: str | None
    country: str | None  # alpha-3

    @property
    def street_or_place(self) -> str | None:
        return self.street or self.place


@dataclass
class RawAddress:
    tags: AddressTags
    house_number: HouseNumber
    house_number_text: str
    lat: float
    lon: float
    interpolated: bool = False


@dataclass
class RawStreetWay:
    name: str
    coords: list[LatLon]


@dataclass
class RawPlace:
    name: str
    place_type: str
    lat: float
    lon: float
    variants: tuple[str, ...] = ()  # its other names (name_variants)


@dataclass
class RawPoi:
    name: str
    category: str
    tags: AddressTags
    house_number_text: str | None
    lat: float
    lon: float
    variants: tuple[str, ...] = ()  # its other names (name_variants)


@dataclass
class Boundary:
    """A closed area that says where a point is: a municipality, a postcode area, a country."""

    name: str | None
    admin_level: int | None
    postal_code: str | None
    country: str | None  # alpha-3, from ISO3166-1 (a country's own area)
    rings: list[np.ndarray]  # each (n, 2) of lon, lat; even-odd rule, so holes just work
    bbox: tuple[float, float, float, float]  # min_lon, min_lat, max_lon, max_lat
    place: str | None = None  # a settlement's own area (place=town on a polygon): names the city


@dataclass
class RawPostcodePoint:
    postcode: str
    tags: AddressTags
    lat: float
    lon: float


@dataclass
class Extract:
    addresses: list[RawAddress] = field(default_factory=list)
    streets: list[RawStreetWay] = field(default_factory=list)
    places: list[RawPlace] = field(default_factory=list)
    pois: list[RawPoi] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)
    # (a name, "<kind>:<language>", the object's name in it) → how many objects say so; kind:
    # street, place or poi (a station named "Helsinki" is no town); language "": the object's
    # local name, for a result found by one of its other names (issue 35, item 3)
    translations: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    postcodes: list[RawPostcodePoint] = field(default_factory=list)

    def merge(self, other: Extract) -> None:
        self.addresses += other.addresses
        self.streets += other.streets
        self.places += other.places
        self.pois += other.pois
        self.boundaries += other.boundaries
        self.translations += other.translations
        self.postcodes += other.postcodes

    def translation_table(self) -> dict[tuple[str, str], str]:
        """(name, language) → the translation most objects carry."""
        return most_carried({((name, language), translated): count
                             for (name, language, translated), count in self.translations.items()})  # fmt: skip


def address_tags(tags: Any) -> AddressTags:
    return AddressTags(
        street=tags.get("addr:street"),
        place=tags.get("addr:place"),
        postcode=tags.get("addr:postcode"),
        city=tags.get("addr:city"),
        country=alpha3_from_tag(tags.get("addr:country")),
    )


def poi_category(tags: Any) -> str | None:
    for key in POI_KEYS:
        value = tags.get(key)
        if value and value != "no":
            return f"{key}={value}"
    for key, values in POI_VALUES.items():
        value = tags.get(key)
        if value in values:
            return f"{key}={value}"
    return None


def name_variants(tags: Any, name: str) -> tuple[str, ...]:
    """A POI's or place's other names (issue 34, item 3): alt_name, old_name, official_name,
    short_name, loc_name (";"-separated lists) and name:<lang> in the platform's LANGUAGES
    (Helsinki's Swedish, Monaco's Italian, Andorra's Spanish), each once, at most MAX_VARIANTS."""
    found: list[str] = []
    for key in (*VARIANT_KEYS, *(f"name:{language}" for language in LANGUAGES)):
        value = tags.get(key)
        if value:
            found += [v.strip() for v in value.split(";")]
    # "24/7" (opening hours tagged as a short name) is no name: a variant needs some letters.
    named = (v for v in found if v != name and sum(c.isalpha() for c in v) >= MIN_VARIANT_LETTERS)
    return tuple(dict.fromkeys(named))[:MAX_VARIANTS]


def count_translations(tags: Any, counts: Counter[tuple[str, str, str]], street: bool = False) -> None:
    """A named object's names in the platform's languages (name:<lang>), for each name it is
    known by; and its local name for each other name (alt_name … and name:<lang>). Counted per
    kind of object (`translation_kind`): a street's, a place's and a POI's names apart."""
    name = tags.get("name")
    if not name:
        return
    kind = translation_kind(tags, street)
    in_languages = names_in_languages(tags, name)
    if not in_languages and not any(key in tags for key in VARIANT_KEYS):
        return
    known = [name, *name_variants(tags, name)]
    for language, other in in_languages.items():
        for each in known:
            counts[(each, f"{kind}:{language}", other)] += 1
    for each in known[1:]:
        counts[(each, f"{kind}:", name)] += 1


def translation_kind(tags: Any, street: bool) -> str:
    """"street" (a highway way), "place" (a place or an administrative area) or "poi"."""
    if street and "highway" in tags:
        return "street"
    if tags.get("place") or tags.get("boundary") == "administrative":
        return "place"
    return "poi"


def is_settlement_area(tags: Any) -> bool:
    return bool(tags.get("name")) and tags.get("place") in SETTLEMENTS and tags.get("boundary") is None


def way_coords(way: Any) -> list[LatLon]:
    coords = []
    for node in way.nodes:
        location = node.location
        if location.valid():
            coords.append((location.lat, location.lon))
    return coords


def centroid(coords: list[LatLon]) -> LatLon | None:
    """The mean of the vertices (the closing vertex of a ring counted once)."""
    if not coords:
        return None
    if len(coords) > 2 and coords[0] == coords[-1]:
        coords = coords[:-1]
    return (sum(c[0] for c in coords) / len(coords), sum(c[1] for c in coords) / len(coords))


def area_rings(area: Any) -> list[np.ndarray]:
    rings = []
    for outer in area.outer_rings():
        rings.append(np.array([(n.lon, n.lat) for n in outer], dtype=np.float64))
        for inner in area.inner_rings(outer):
            rings.append(np.array([(n.lon, n.lat) for n in inner], dtype=np.float64))
    return [r for r in rings if len(r) >= 4]


def ring_centroid(rings: list[np.ndarray]) -> LatLon | None:
    if not rings:
        return None
    outer = rings[0][:-1]
    return (float(outer[:, 1].mean()), float(outer[:, 0].mean()))


def interpolate(start: LatLon, end: LatLon, count: int) -> Iterator[LatLon]:
    """`count` points evenly spaced strictly between start and end."""
    for i in range(1, count + 1):
        f = i / (count + 1)
        yield (start[0] + (end[0] - start[0]) * f, start[1] + (end[1] - start[1]) * f)


def point_along(coords: list[LatLon], fraction: float) -> LatLon:
    """The point at `fraction` of the polyline's length (planar; the segments are short)."""
    lengths = [math.dist(a, b) for a, b in itertools.pairwise(coords)]
    target = sum(lengths) * fraction
    for (a, b), length in zip(itertools.pairwise(coords), lengths, strict=True):
        if target <= length and length > 0:
            f = target / length
            return (a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f)
        target -= length
    return coords[-1]


class _Reader:
    def __init__(self) -> None:
        self.extract = Extract()
        # Numbered nodes by id: interpolation ways refer to them.
        self.numbered_nodes: dict[int, tuple[RawAddress, LatLon]] = {}

    def add_addressable(self, tags: Any, point: LatLon, node_id: int | None = None) -> None:
        value = tags.get("addr:housenumber")
        address = address_tags(tags)
        if address.postcode and not LISTED.search(address.postcode):
            self.extract.postcodes.append(RawPostcodePoint(address.postcode.strip(), address, *point))
        if value and address.street_or_place:
            for number in house_numbers_of_tag(value):
                raw = RawAddress(address, number, value.strip() if ";" not in value else number.text, *point)
                self.extract.addresses.append(raw)
                if node_id is not None:
                    self.numbered_nodes[node_id] = (raw, point)
        name = tags.get("name")
        category = poi_category(tags) if name else None
        place = tags.get("place")
        variants = name_variants(tags, name) if name and (category or place in PLACE_TYPES) else ()
        if name and category:
            self.extract.pois.append(RawPoi(name, category, address, value, *point, variants))
        if name and place in PLACE_TYPES:
            self.extract.places.append(RawPlace(name, place, *point, variants))

    def node(self, node: Any) -> None:
        tags = node.tags
        if len(tags) == 0:
            return
        count_translations(tags, self.extract.translations)
        self.add_addressable(tags, (node.location.lat, node.location.lon), node.id)

    def way(self, way: Any) -> None:
        tags = way.tags
        count_translations(tags, self.extract.translations, street=True)
        if "addr:interpolation" in tags:
            self.interpolation(way)
            return
        coords = way_coords(way)
        if not coords:
            return
        highway = tags.get("highway")
        name = tags.get("name")
        if highway and name and highway not in SKIPPED_HIGHWAYS:
            self.extract.streets.append(RawStreetWay(name, coords))
            if "addr:housenumber" not in tags:  # a building mapped as a ramp or a square can be both
                return
        point = centroid(coords)
        if point is not None:
            self.add_addressable(tags, point)

    def area(self, area: Any) -> None:
        tags = area.tags
        boundary = tags.get("boundary")
        iso = alpha3_from_tag(tags.get("ISO3166-1") or tags.get("ISO3166-1:alpha2"))
        rings = area_rings(area)
        if rings and (boundary in ("administrative", "postal_code") or is_settlement_area(tags)):
            self.add_boundary(tags, rings, iso)
        if area.from_way():
            return  # closed ways were handled as ways
        count_translations(tags, self.extract.translations)
        point = ring_centroid(rings)
        if point is not None:
            self.add_addressable(tags, point)

    def add_boundary(self, tags: Any, rings: list[np.ndarray], iso: str | None) -> None:
        level = tags.get("admin_level")
        stacked = np.vstack(rings)
        self.extract.boundaries.append(
            Boundary(
                name=tags.get("name"),
                admin_level=int(level) if level and level.isascii() and level.isdigit() else None,
                postal_code=tags.get("postal_code"),
                country=iso,
                place=tags.get("place") if is_settlement_area(tags) else None,
                rings=rings,
                bbox=(
                    float(stacked[:, 0].min()),
                    float(stacked[:, 1].min()),
                    float(stacked[:, 0].max()),
                    float(stacked[:, 1].max()),
                ),
            )
        )

    def interpolation(self, way: Any) -> None:
        """addr:interpolation: numbers between each pair of numbered nodes along the way."""
        step = INTERPOLATION_STEPS.get(way.tags.get("addr:interpolation", ""))
        if step is None:
            return
        own = address_tags(way.tags)
        ends = [(i, self.numbered_nodes[n.ref]) for i, n in enumerate(way.nodes) if n.ref in self.numbered_nodes]
        coords = way_coords(way)
        if len(coords) != len(way.nodes):
            return
        for (i, (first, _)), (j, (last, _)) in itertools.pairwise(ends):
            self.fill_between(first, last, coords[i : j + 1], step, own)

    def fill_between(
        self, first: RawAddress, last: RawAddress, coords: list[LatLon], step: int, own: AddressTags
    ) -> None:
        low, high = first.house_number.base, last.house_number.base
        if first.house_number.has_suffix or last.house_number.has_suffix or abs(high - low) <= step:
            return
        direction = step if high > low else -step
        numbers = list(range(low + direction, high, direction))[:MAX_INTERPOLATED_PER_SEGMENT]
        tags = AddressTags(
            street=own.street or first.tags.street,
            place=own.place or first.tags.place,
            postcode=own.postcode or first.tags.postcode,
            city=own.city or first.tags.city,
            country=own.country or first.tags.country,
        )
        if not tags.street_or_place:
            return
        for k, number in enumerate(numbers, start=1):
            lat, lon = point_along(coords, k / (len(numbers) + 1))
            house = HouseNumber(str(number), number)
            self.extract.addresses.append(RawAddress(tags, house, str(number), lat, lon, interpolated=True))


AREA_FILTER_KEYS = ("addr:housenumber", "boundary", "place", "name")


def read_osm(path: Path) -> Extract:
    reader = _Reader()
    processor = osmium.FileProcessor(str(path)).with_locations().with_areas(osmium.filter.KeyFilter(*AREA_FILTER_KEYS))
    for obj in processor:
        if isinstance(obj, osmium.osm.Node):
            reader.node(obj)
        elif isinstance(obj, osmium.osm.Way):
            reader.way(obj)
        elif isinstance(obj, osmium.osm.Area):
            reader.area(obj)
    return reader.extract
