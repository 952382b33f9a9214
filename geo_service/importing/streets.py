"""Street clustering: named highway ways grouped into streets, and the addresses on them.

Streets are named highway ways grouped by name key, country and proximity (one group per
street and town); every address is attached to the nearest group of its street's key in its
country, or to a group made from its addresses when no highway carries that name.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from common.geo import METRES_PER_DEGREE
from geo_service.importing.enrich import NEIGHBOUR_CITY_FAR_M, NEIGHBOUR_CITY_M, Context
from geo_service.importing.extract import LatLon, RawStreetWay
from geo_service.importing.locate import Placement, boundary_city, boundary_postcode, majority
from geo_service.records import Address, Named

STREET_JOIN_M = 300.0  # ways of one name closer than this are one street
ADDRESS_TO_STREET_M = 1000.0


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
