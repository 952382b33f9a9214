"""From raw OSM records to the index's rows: filled-in addresses, street groups, places, POIs.

Missing addr:city / addr:postcode / country are filled, in this order of trust:
the enclosing boundary (admin_level 4 to 8 for the city, postal_code areas or a boundary's
postal_code tag for the postcode, ISO3166-1 for the country), then the nearest tagged
addresses, then the nearest settlement (place=city/town/village/hamlet), then the
dataset's default (the most common addr:city; the most common country in the data).

Streets are named highway ways grouped by name key and proximity (one group per street and
town); every address is attached to the nearest group of its street's key, or to a group
made from its addresses when no highway carries that name.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from geo_service.extract import PLACE_TYPES, SETTLEMENTS, Boundary, Extract, LatLon, RawAddress, RawStreetWay
from geo_service.geometry import METRES_PER_DEGREE, PointIndex, Projection, points_in_rings
from geo_service.normalize import Normalizer, vocabulary_of

STREET_JOIN_M = 300.0  # ways of one name closer than this are one street
ADDRESS_TO_STREET_M = 1000.0
NEIGHBOUR_CITY_M = 500.0
NEIGHBOUR_POSTCODE_M = 300.0
NEIGHBOUR_CITY_FAR_M = 3000.0
# An inferred default city is used only when it names nearly every address of the data.
DOMINANT_CITY_SHARE = 0.8
SETTLEMENT_RADIUS_M = {"city": 15_000.0, "town": 6_000.0, "village": 3_000.0, "hamlet": 1_000.0}


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


# ---------------------------------------------------------------- where is a point


class Locator:
    """Answers 'which city / postcode / country is this point in' from the data."""

    def __init__(self, extract: Extract, projection: Projection, default_country: str | None) -> None:
        self.boundaries = extract.boundaries
        self.default_country = default_country
        settlements = [p for p in extract.places if p.place_type in SETTLEMENTS]
        self.settlements = settlements
        self.settlement_index = PointIndex(
            projection,
            [p.lat for p in settlements],
            [p.lon for p in settlements],
            [str(i) for i in range(len(settlements))],
        )
        self.projection = projection
        self.city_by_neighbours: PointIndex | None = None
        self.postcode_by_neighbours: PointIndex | None = None

    def enclosing(self, lats: np.ndarray, lons: np.ndarray) -> list[list[Boundary]]:
        """For each point, the boundaries that contain it."""
        found: list[list[Boundary]] = [[] for _ in range(len(lats))]
        points = np.column_stack((lons, lats))
        for boundary in self.boundaries:
            min_lon, min_lat, max_lon, max_lat = boundary.bbox
            candidates = np.flatnonzero((lons >= min_lon) & (lons <= max_lon) & (lats >= min_lat) & (lats <= max_lat))
            for chunk in np.array_split(candidates, max(1, len(candidates) // 256)):
                if len(chunk) == 0:
                    continue
                inside = points_in_rings(points[chunk], boundary.rings)
                for i in chunk[inside]:
                    found[int(i)].append(boundary)
        return found

    def nearest_settlement(self, lat: float, lon: float) -> str | None:
        for label in self.settlement_index.nearby_labels(lat, lon, max(SETTLEMENT_RADIUS_M.values()), k=4):
            place = self.settlements[int(label)]
            radius = SETTLEMENT_RADIUS_M[place.place_type]
            distance = math.dist(
                self.projection.project(np.array([lat]), np.array([lon]))[0],
                self.projection.project(np.array([place.lat]), np.array([place.lon]))[0],
            )
            if distance <= radius:
                return place.name
        return None


def boundary_city(boundaries: list[Boundary]) -> str | None:
    municipal = [b for b in boundaries if b.admin_level and 4 <= b.admin_level <= 8 and b.name]
    return max(municipal, key=lambda b: b.admin_level or 0).name if municipal else None


def boundary_postcode(boundaries: list[Boundary]) -> str | None:
    with_code = [b for b in boundaries if b.postal_code]
    return max(with_code, key=lambda b: b.admin_level or 99).postal_code if with_code else None


def boundary_country(boundaries: list[Boundary]) -> str | None:
    return next((b.country for b in boundaries if b.country), None)


def majority(values: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in values if v)
    return counts.most_common(1)[0][0] if counts else None


# ---------------------------------------------------------------- addresses


def fill_addresses(
    raw: list[RawAddress], locator: Locator, normalizer: Normalizer, default_city: str | None
) -> list[Address]:
    lats = np.array([a.lat for a in raw])
    lons = np.array([a.lon for a in raw])
    enclosing = locator.enclosing(lats, lons) if raw else []
    tagged_city = [(a.lat, a.lon, a.tags.city) for a in raw if a.tags.city]
    city_index = PointIndex(
        locator.projection, [t[0] for t in tagged_city], [t[1] for t in tagged_city], [str(t[2]) for t in tagged_city]
    )
    tagged_postcode = [(a, normalizer.key(a.tags.street_or_place or "")) for a in raw if a.tags.postcode]
    postcode_index = PointIndex(
        locator.projection,
        [a.lat for a, _ in tagged_postcode],
        [a.lon for a, _ in tagged_postcode],
        [f"{key}\t{a.tags.postcode}" for a, key in tagged_postcode],
    )
    locator.city_by_neighbours = city_index
    addresses = []
    for a, inside in zip(raw, enclosing, strict=True):
        street = a.tags.street_or_place or ""
        city = (
            a.tags.city
            or boundary_city(inside)
            or majority(city_index.nearby_labels(a.lat, a.lon, NEIGHBOUR_CITY_M))
            or locator.nearest_settlement(a.lat, a.lon)
            or default_city
        )
        postcode = (
            a.tags.postcode
            or boundary_postcode(inside)
            or neighbour_postcode(postcode_index, a, normalizer.key(street))
        )
        country = a.tags.country or boundary_country(inside) or locator.default_country
        number = a.house_number
        addresses.append(
            Address(
                street,
                a.house_number_text,
                number.text,
                number.base,
                postcode,
                city,
                country,
                a.lat,
                a.lon,
                a.interpolated,
            )
        )
    return addresses


def neighbour_postcode(index: PointIndex, address: RawAddress, street_key: str) -> str | None:
    """The postcode of the nearest tagged addresses, preferring those on the same street."""
    labels = index.nearby_labels(address.lat, address.lon, NEIGHBOUR_POSTCODE_M)
    same_street = [label.split("\t")[1] for label in labels if label.split("\t")[0] == street_key]
    return majority(same_street) or majority(label.split("\t")[1] for label in labels[:3])


# ---------------------------------------------------------------- streets


@dataclass
class StreetCluster:
    key: str
    ways: list[RawStreetWay] = field(default_factory=list)
    addresses: list[Address] = field(default_factory=list)

    def coords(self) -> list[LatLon]:
        points = [c for w in self.ways for c in w.coords]
        return points or [(a.lat, a.lon) for a in self.addresses]

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


def cluster_ways(ways: list[RawStreetWay], key: str) -> list[StreetCluster]:
    """Ways of one name whose boxes lie within STREET_JOIN_M of each other form one street."""
    if len(ways) == 1:
        return [StreetCluster(key, list(ways))]
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
    clusters = [StreetCluster(key) for _ in range(count)]
    for way, label in zip(ways, labels, strict=True):
        clusters[label].ways.append(way)
    return clusters


def street_clusters(ways: list[RawStreetWay], addresses: list[Address], normalizer: Normalizer) -> list[StreetCluster]:
    by_key: dict[str, list[RawStreetWay]] = defaultdict(list)
    for way in ways:
        by_key[normalizer.key(way.name)].append(way)
    clusters_by_key: dict[str, list[StreetCluster]] = {k: cluster_ways(v, k) for k, v in by_key.items() if k}
    boxes = {id(c): c.bbox() for cs in clusters_by_key.values() for c in cs}
    orphans: dict[tuple[str, str | None], StreetCluster] = {}
    for address in addresses:
        key = normalizer.key(address.street)
        point = (address.lat, address.lon, address.lat, address.lon)
        candidates = [(bbox_gap_m(boxes[id(c)], point), c) for c in clusters_by_key.get(key, [])]
        gap, nearest = min(candidates, key=lambda pair: pair[0], default=(math.inf, None))
        if nearest is not None and gap <= ADDRESS_TO_STREET_M:
            nearest.addresses.append(address)
        else:
            orphans.setdefault((key, address.city), StreetCluster(key)).addresses.append(address)
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


def streets_as_names(clusters: list[StreetCluster], locator: Locator, default_city: str | None) -> list[Named]:
    points = [representative_point(c.coords()) for c in clusters]
    enclosing = locator.enclosing(np.array([p[0] for p in points]), np.array([p[1] for p in points])) if points else []
    names = []
    for cluster, (lat, lon), inside in zip(clusters, points, enclosing, strict=True):
        city = majority(a.city for a in cluster.addresses) or boundary_city(inside)
        if city is None and locator.city_by_neighbours is not None:
            city = majority(locator.city_by_neighbours.nearby_labels(lat, lon, NEIGHBOUR_CITY_M))
        city = city or locator.nearest_settlement(lat, lon)
        if city is None and locator.city_by_neighbours is not None:
            city = majority(locator.city_by_neighbours.nearby_labels(lat, lon, NEIGHBOUR_CITY_FAR_M))
        city = city or default_city
        postcodes = {a.postcode for a in cluster.addresses if a.postcode}
        if not postcodes and (code := boundary_postcode(inside)):
            postcodes.add(code)
        country = majority(a.country for a in cluster.addresses) or boundary_country(inside) or locator.default_country
        importance = min(1.0, math.log1p(len(cluster.addresses)) / 6 + street_length_m(cluster) / 20_000)
        names.append(
            Named(
                kind="street",
                name=display_name(cluster),
                key=cluster.key,
                lat=float(lat),
                lon=float(lon),
                city=city,
                postcode=majority(a.postcode for a in cluster.addresses) or next(iter(sorted(postcodes)), None),
                country=country,
                importance=importance,
                postcodes=postcodes,
                geometry=[w.coords for w in cluster.ways],
            )
        )
    return names


# ---------------------------------------------------------------- places and POIs


def places_as_names(
    extract: Extract, addresses: list[Address], locator: Locator, normalizer: Normalizer, default_city: str | None
) -> list[Named]:
    names: list[Named] = []
    seen: set[str] = set()
    for place in extract.places:
        settlement = place.place_type in SETTLEMENTS
        inside = locator.enclosing(np.array([place.lat]), np.array([place.lon]))[0]
        city = (
            place.name
            if settlement
            else (boundary_city(inside) or locator.nearest_settlement(place.lat, place.lon) or default_city)
        )
        key = normalizer.key(place.name)
        seen.add(key)
        names.append(
            Named(
                "place",
                place.name,
                key,
                place.lat,
                place.lon,
                city=city,
                country=boundary_country(inside) or locator.default_country,
                importance=PLACE_TYPES.get(place.place_type, 0.3),
                category=f"place={place.place_type}",
            )
        )
    # Cities named only by addr:city (no place node in the extract) become places at their addresses' centre.
    by_city: dict[str, list[Address]] = defaultdict(list)
    for address in addresses:
        if address.city:
            by_city[address.city].append(address)
    for city, members in by_city.items():
        key = normalizer.key(city)
        if key in seen or not key:
            continue
        lat, lon = representative_point([(a.lat, a.lon) for a in members])
        names.append(
            Named(
                "place",
                city,
                key,
                float(lat),
                float(lon),
                city=city,
                country=majority(a.country for a in members),
                importance=0.8,
                category="place=city",
                postcode=majority(a.postcode for a in members),
            )
        )
    return names


def pois_as_names(extract: Extract, locator: Locator, normalizer: Normalizer, default_city: str | None) -> list[Named]:
    pois = extract.pois
    enclosing = locator.enclosing(np.array([p.lat for p in pois]), np.array([p.lon for p in pois])) if pois else []
    names = []
    for poi, inside in zip(pois, enclosing, strict=True):
        city = poi.tags.city or boundary_city(inside) or locator.nearest_settlement(poi.lat, poi.lon) or default_city
        names.append(
            Named(
                "poi",
                poi.name,
                normalizer.key(poi.name),
                poi.lat,
                poi.lon,
                city=city,
                postcode=poi.tags.postcode or boundary_postcode(inside),
                country=poi.tags.country or boundary_country(inside) or locator.default_country,
                importance=0.3,
                category=poi.category,
                street=poi.tags.street_or_place,
                house_number=poi.house_number_text,
            )
        )
    return names


# ---------------------------------------------------------------- the whole dataset


def infer_default_country(extract: Extract) -> str | None:
    return extract.country_votes.most_common(1)[0][0] if extract.country_votes else None


def dominant_city(extract: Extract) -> str | None:
    counts = Counter(a.tags.city for a in extract.addresses if a.tags.city)
    if not counts:
        return None
    city, count = counts.most_common(1)[0]
    return city if count >= DOMINANT_CITY_SHARE * len(extract.addresses) else None


def extract_vocabulary(extract: Extract) -> set[str]:
    """The words of every name: what ambiguous abbreviations are resolved against."""
    names = [w.name for w in extract.streets] + [a.tags.street_or_place or "" for a in extract.addresses]
    return vocabulary_of(names + [p.name for p in extract.places] + [p.name for p in extract.pois])


def build_dataset(
    extract: Extract,
    *,
    default_country: str | None = None,
    default_city: str | None = None,
    vocabulary: set[str] | None = None,
) -> Dataset:
    """`vocabulary`: of all inputs when several are merged, so every key is made the same way."""
    vocabulary = vocabulary if vocabulary is not None else extract_vocabulary(extract)
    normalizer = Normalizer(vocabulary)
    default_country = default_country or infer_default_country(extract)
    default_city = default_city or dominant_city(extract)
    lats = [a.lat for a in extract.addresses] + [c[0] for w in extract.streets[:1000] for c in w.coords[:1]]
    projection = Projection(float(np.mean(lats)) if lats else 0.0)
    locator = Locator(extract, projection, default_country)
    addresses = fill_addresses(extract.addresses, locator, normalizer, default_city)
    clusters = street_clusters(extract.streets, addresses, normalizer)
    streets = streets_as_names(clusters, locator, default_city)
    for street_id, cluster in enumerate(clusters):
        for address in cluster.addresses:
            address.street_id = street_id
    # Streets stay as they are (addresses refer to them by position); nameless others go.
    others = places_as_names(extract, addresses, locator, normalizer, default_city)
    others += pois_as_names(extract, locator, normalizer, default_city)
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
    countries = Counter(d.default_country for d in datasets for _ in d.addresses if d.default_country)
    return Dataset(addresses, names, vocabulary, majority(countries.elements()), None)
