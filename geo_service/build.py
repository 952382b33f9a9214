"""From raw OSM records to the index's rows: filled-in addresses, street groups, places, POIs.

Missing country / addr:city / addr:postcode are filled from where the object lies (locate.py):
the country from a valid `addr:country` tag, else the map's country areas, else offline country
polygons; the city from the enclosing municipality or settlement area, then the tagged
addresses nearby, then the nearest settlement, then the city that names nearly all of the
country's addresses in this input; the postcode from postal areas, then tagged neighbours on
the same street. Neighbours and settlements are only looked up in the same country.

Streets are named highway ways grouped by name key, country and proximity (one group per
street and town); every address is attached to the nearest group of its street's key in its
country, or to a group made from its addresses when no highway carries that name.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from geo_service.country_lookup import CountryLookup
from geo_service.extract import PLACE_TYPES, SETTLEMENTS, Extract, LatLon, RawAddress, RawStreetWay
from geo_service.geometry import METRES_PER_DEGREE, Projection
from geo_service.locate import (
    Locator,
    NeighbourIndex,
    Placement,
    boundary_city,
    boundary_postcode,
    majority,
)
from geo_service.normalize import Normalizer, vocabulary_of

STREET_JOIN_M = 300.0  # ways of one name closer than this are one street
ADDRESS_TO_STREET_M = 1000.0
NEIGHBOUR_CITY_M = 500.0
NEIGHBOUR_POSTCODE_M = 300.0
NEIGHBOUR_CITY_FAR_M = 3000.0
# An inferred default city is used only when it names nearly every address of its country.
DOMINANT_CITY_SHARE = 0.8


@dataclass
class Address:
    street: str
    house_number: str
    house_key: str
    house_base: int
    postcode: str | None
    city: str | None
    country: str | None
    lat: float
    lon: float
    interpolated: bool
    street_id: int = -1


@dataclass
class Named:
    """A searchable name: a street group, a place or a POI."""

    kind: str  # street | place | poi
    name: str
    key: str
    lat: float
    lon: float
    city: str | None = None
    postcode: str | None = None
    country: str | None = None
    importance: float = 0.0
    category: str | None = None
    street: str | None = None
    house_number: str | None = None
    postcodes: set[str] = field(default_factory=set)
    geometry: list[list[LatLon]] = field(default_factory=list)


@dataclass
class Dataset:
    addresses: list[Address]
    names: list[Named]
    vocabulary: set[str]
    default_country: str | None
    default_city: str | None


# ---------------------------------------------------------------- addresses


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


# ---------------------------------------------------------------- streets


@dataclass
class StreetCluster:
    key: str
    country: str | None
    ways: list[RawStreetWay] = field(default_factory=list)
    addresses: list[Address] = field(default_factory=list)

    def coords(self) -> list[LatLon]:
        points = [c for w in self.ways for c in w.coords]
        return points or [(a.lat, a.lon) for a in self.addresses]

    def anchors(self) -> list[LatLon]:
        """The middle vertex of each way (where its country was found), else the addresses."""
        return [middle(w) for w in self.ways] or [(a.lat, a.lon) for a in self.addresses]

    def bbox(self) -> tuple[float, float, float, float]:
        points = np.array(self.coords())
        return (
            float(points[:, 0].min()),
            float(points[:, 1].min()),
            float(points[:, 0].max()),
            float(points[:, 1].max()),
        )


def bbox_gap_m(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Distance between two lat/lon boxes (0 when they overlap)."""
    dlat = max(0.0, a[0] - b[2], b[0] - a[2])
    dlon = max(0.0, a[1] - b[3], b[1] - a[3]) * math.cos(math.radians((a[0] + b[0]) / 2))
    return math.hypot(dlat, dlon) * METRES_PER_DEGREE


def cluster_ways(ways: list[RawStreetWay], key: str, country: str | None) -> list[StreetCluster]:
    """Ways of one name whose boxes lie within STREET_JOIN_M of each other form one street."""
    if len(ways) == 1:
        return [StreetCluster(key, country, list(ways))]
    boxes = np.array(
        [
            [
                min(c[0] for c in w.coords),
                min(c[1] for c in w.coords),
                max(c[0] for c in w.coords),
                max(c[1] for c in w.coords),
            ]
            for w in ways
        ]
    )
    margin_lat = STREET_JOIN_M / METRES_PER_DEGREE
    margin_lon = margin_lat / math.cos(math.radians(float(boxes[:, 0].mean())))
    near = (
        (boxes[:, None, 0] <= boxes[None, :, 2] + margin_lat)
        & (boxes[None, :, 0] <= boxes[:, None, 2] + margin_lat)
        & (boxes[:, None, 1] <= boxes[None, :, 3] + margin_lon)
        & (boxes[None, :, 1] <= boxes[:, None, 3] + margin_lon)
    )
    rows, cols = np.nonzero(near)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(ways), len(ways)))
    count, labels = connected_components(graph, directed=False)
    clusters = [StreetCluster(key, country) for _ in range(count)]
    for way, label in zip(ways, labels, strict=True):
        clusters[label].ways.append(way)
    return clusters


def street_clusters(ways: list[RawStreetWay], addresses: list[Address], context: Context) -> list[StreetCluster]:
    """Streets per name key and country: a street that crosses a border is two streets."""
    middles = [middle(w) for w in ways]
    placements = context.locator.place([m[0] for m in middles], [m[1] for m in middles])
    by_key: dict[tuple[str, str | None], list[RawStreetWay]] = defaultdict(list)
    for way, where in zip(ways, placements, strict=True):
        by_key[(context.normalizer.key(way.name), where.country)].append(way)
    clusters_by_key = {k: cluster_ways(v, *k) for k, v in by_key.items() if k[0]}
    boxes = {id(c): c.bbox() for cs in clusters_by_key.values() for c in cs}
    orphans: dict[tuple[str, str | None, str | None], StreetCluster] = {}
    for address in addresses:
        key = context.normalizer.key(address.street)
        point = (address.lat, address.lon, address.lat, address.lon)
        candidates = [(bbox_gap_m(boxes[id(c)], point), c) for c in clusters_by_key.get((key, address.country), [])]
        gap, nearest = min(candidates, key=lambda pair: pair[0], default=(math.inf, None))
        if nearest is not None and gap <= ADDRESS_TO_STREET_M:
            nearest.addresses.append(address)
        else:
            orphan = (key, address.country, address.city)
            orphans.setdefault(orphan, StreetCluster(key, address.country)).addresses.append(address)
    return [c for cs in clusters_by_key.values() for c in cs] + list(orphans.values())


def representative_point(coords: list[LatLon]) -> LatLon:
    """The vertex nearest to the mean: a point that lies on the street itself."""
    points = np.array(coords)
    mean = points.mean(axis=0)
    return tuple(points[int(np.argmin(((points - mean) ** 2).sum(axis=1)))])


def display_name(cluster: StreetCluster) -> str:
    return majority([w.name for w in cluster.ways] + [a.street for a in cluster.addresses]) or cluster.key


def street_length_m(cluster: StreetCluster) -> float:
    total = 0.0
    for way in cluster.ways:
        for (lat1, lon1), (lat2, lon2) in zip(way.coords, way.coords[1:], strict=False):
            total += math.hypot(lat2 - lat1, (lon2 - lon1) * math.cos(math.radians(lat1))) * METRES_PER_DEGREE
    return total




def middle(way: RawStreetWay) -> LatLon:
    return way.coords[len(way.coords) // 2]


def streets_as_names(clusters: list[StreetCluster], context: Context) -> list[Named]:
    # A point among the anchors lies in the cluster's country even when the street runs along a
    # border (Rue Jean Jaurès between Beausoleil and Monaco); the mean of all vertices may not.
    points = [representative_point(c.anchors()) for c in clusters]
    placements = context.locator.place([p[0] for p in points], [p[1] for p in points])
    return [
        street_as_name(cluster, float(lat), float(lon), where, context)
        for cluster, (lat, lon), where in zip(clusters, points, placements, strict=True)
    ]


def street_as_name(cluster: StreetCluster, lat: float, lon: float, where: Placement, context: Context) -> Named:
    country = cluster.country or majority(a.country for a in cluster.addresses) or where.country
    city = (
        majority(a.city for a in cluster.addresses)
        or boundary_city(where.boundaries)
        or context.city_nearby(lat, lon, country, NEIGHBOUR_CITY_M)
        or context.locator.nearest_settlement(lat, lon, country)
        or context.city_nearby(lat, lon, country, NEIGHBOUR_CITY_FAR_M)
        or context.default_city(country)
    )
    postcodes = {a.postcode for a in cluster.addresses if a.postcode}
    if not postcodes and (code := boundary_postcode(where.boundaries)):
        postcodes.add(code)
    importance = min(1.0, math.log1p(len(cluster.addresses)) / 6 + street_length_m(cluster) / 20_000)
    return Named(
        kind="street",
        name=display_name(cluster),
        key=cluster.key,
        lat=lat,
        lon=lon,
        city=city,
        postcode=majority(a.postcode for a in cluster.addresses) or next(iter(sorted(postcodes)), None),
        country=country,
        importance=importance,
        postcodes=postcodes,
        geometry=[w.coords for w in cluster.ways],
    )


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
        names.append(
            Named(
                "place", place.name, key, place.lat, place.lon, city=city, country=where.country,
                importance=PLACE_TYPES.get(place.place_type, 0.3), category=f"place={place.place_type}",
            )
        )
    return names + cities_of_addresses(addresses, seen, context.normalizer)


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
        country = poi.tags.country or where.country
        city = (
            poi.tags.city
            or boundary_city(where.boundaries)
            or context.locator.nearest_settlement(poi.lat, poi.lon, country)
            or context.default_city(country)
        )
        names.append(
            Named(
                "poi", poi.name, context.normalizer.key(poi.name), poi.lat, poi.lon, city=city,
                postcode=poi.tags.postcode or boundary_postcode(where.boundaries), country=country,
                importance=0.3, category=poi.category, street=poi.tags.street_or_place,
                house_number=poi.house_number_text,
            )
        )
    return names


# ---------------------------------------------------------------- the whole dataset


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
    return Dataset(addresses, streets + [n for n in others if n.key], vocabulary, default_country, default_city)


def merge_datasets(datasets: list[Dataset]) -> Dataset:
    """Several inputs in one index: names concatenated, street ids shifted to match."""
    if len(datasets) == 1:
        return datasets[0]
    addresses: list[Address] = []
    names: list[Named] = []
    vocabulary: set[str] = set()
    for dataset in datasets:
        for address in dataset.addresses:
            address.street_id += len(names)
        addresses += dataset.addresses
        names += dataset.names
        vocabulary |= dataset.vocabulary
    return Dataset(addresses, names, vocabulary, datasets[0].default_country, datasets[0].default_city)
