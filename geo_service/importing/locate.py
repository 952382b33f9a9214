"""Where an object lies: its country, and the areas and neighbours that name its city and postcode.

Country, in this order of trust (the caller applies a valid `addr:country` tag before all):
1. an OSM `admin_level=2` area with an `ISO3166-1` tag that contains the point (only extracts
   that hold the whole border have one: Andorra's, Monaco's);
2. the offline country polygons of `country_lookup.CountryLookup` (most extracts cut the
   country's boundary relation, so no area can be assembled);
3. the operator's `--default-country`, only when given (a point at sea, say).
There is no dataset-wide majority: one map may hold several countries, and a majority made
Helsinki's and Monaco's addresses German on a map of four countries (issue 10).

City neighbours and settlements are searched per country, so a city never crosses a border.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from geo_service.geometry import PointIndex, Projection, points_in_rings
from geo_service.importing.country_lookup import CountryLookup
from geo_service.importing.extract import SETTLEMENTS, Boundary, Extract, RawPlace

SETTLEMENT_RADIUS_M = {"city": 15_000.0, "town": 6_000.0, "village": 3_000.0, "hamlet": 1_000.0}
MUNICIPAL_LEVEL = 8
# Points are tested against a boundary in chunks: one (points x ring vertices) array per chunk.
CHUNK = 256
# A 12 x 12 grid puts points inside all but the thinnest areas; ~100 lookups per area.
GRID_STEPS = 12


@dataclass(frozen=True)
class Placement:
    """What contains a point: the map's areas, and the country found for it (None: unknown)."""

    boundaries: tuple[Boundary, ...]
    country: str | None


def majority(values: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in values if v)
    return counts.most_common(1)[0][0] if counts else None


def boundary_city(boundaries: Sequence[Boundary]) -> str | None:
    """The municipality (admin_level 8) first, then a settlement's own area (place=town …),
    then the finest administrative area of levels 4-7 (Munich is a level-6 city)."""
    named = [b for b in boundaries if b.name]
    municipal = [b for b in named if b.admin_level == MUNICIPAL_LEVEL]
    if municipal:
        return municipal[0].name
    settlements = [b for b in named if b.place in SETTLEMENTS]
    if settlements:
        return min(settlements, key=lambda b: SETTLEMENTS.index(b.place or "")).name
    regional = [b for b in named if b.admin_level and 4 <= b.admin_level < MUNICIPAL_LEVEL]
    return max(regional, key=lambda b: b.admin_level or 0).name if regional else None


def boundary_postcode(boundaries: Sequence[Boundary]) -> str | None:
    with_code = [b for b in boundaries if b.postal_code]
    return max(with_code, key=lambda b: b.admin_level or 99).postal_code if with_code else None


def boundary_country(boundaries: Sequence[Boundary]) -> str | None:
    return next((b.country for b in boundaries if b.country and b.admin_level == 2), None)


def grid_inside(boundary: Boundary, steps: int = GRID_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Points of a regular grid over the boundary's box that lie inside it (its first vertex
    when the area is too thin for the grid)."""
    min_lon, min_lat, max_lon, max_lat = boundary.bbox
    lon_grid, lat_grid = np.meshgrid(np.linspace(min_lon, max_lon, steps), np.linspace(min_lat, max_lat, steps))
    points = np.column_stack((lon_grid.ravel(), lat_grid.ravel()))
    inside = points[points_in_rings(points, boundary.rings)]
    if len(inside) == 0:
        inside = boundary.rings[0][:1]
    return inside[:, 1], inside[:, 0]


class NeighbourIndex:
    """Labelled points (a tagged city, say) searched within one country at a time."""

    def __init__(self, projection: Projection, points: Iterable[tuple[float, float, str | None, str]]) -> None:
        by_country: dict[str | None, list[tuple[float, float, str]]] = defaultdict(list)
        for lat, lon, country, label in points:
            by_country[country].append((lat, lon, label))
        self.indexes = {
            country: PointIndex(projection, [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts])
            for country, pts in by_country.items()
        }

    def nearby_labels(self, lat: float, lon: float, country: str | None, radius_m: float, k: int = 8) -> list[str]:
        index = self.indexes.get(country)
        return index.nearby_labels(lat, lon, radius_m, k) if index is not None else []


class Locator:
    """Answers 'which country, city and postcode area is this point in' from the data."""

    def __init__(
        self, extract: Extract, projection: Projection, countries: CountryLookup, default_country: str | None
    ) -> None:
        self.boundaries = extract.boundaries
        self.countries = countries
        self.default_country = default_country
        self.projection = projection
        self.area_countries = self.countries_of_areas()
        self.settlements: list[RawPlace] = [p for p in extract.places if p.place_type in SETTLEMENTS]
        placed = self.place([p.lat for p in self.settlements], [p.lon for p in self.settlements])
        self.settlement_index = NeighbourIndex(
            projection,
            ((p.lat, p.lon, where.country, str(i)) for i, (p, where) in enumerate(zip(self.settlements, placed, strict=True))),
        )

    def place(self, lats: Sequence[float], lons: Sequence[float]) -> list[Placement]:
        """For each point: the boundaries that contain it and its country."""
        lat_array, lon_array = np.asarray(lats, dtype=np.float64), np.asarray(lons, dtype=np.float64)
        enclosing = self.enclosing(lat_array, lon_array)
        countries = [boundary_country(inside) or self.area_country(inside) for inside in enclosing]
        unknown = [i for i, c in enumerate(countries) if c is None]
        if unknown:
            looked_up = self.countries.countries_at(lat_array[unknown], lon_array[unknown])
            for i, country in zip(unknown, looked_up, strict=True):
                countries[i] = country or self.default_country
        return [Placement(tuple(inside), c) for inside, c in zip(enclosing, countries, strict=True)]

    def area_country(self, inside: Sequence[Boundary]) -> str | None:
        """The country of the finest enclosing area below country level whose country is known."""
        areas = [b for b in inside if id(b) in self.area_countries]
        finest = max(areas, key=lambda b: b.admin_level or MUNICIPAL_LEVEL, default=None)
        return self.area_countries[id(finest)] if finest is not None else None

    def countries_of_areas(self) -> dict[int, str]:
        """Each municipality, region or settlement area lies in one country: the one most of a grid
        of points inside it looks up to. Points in the area then take that country, which
        corrects the country polygons where they are coarser than the map (measured: a street in
        Monte-Carlo, inside OSM's Monaco, that timezone polygons put in France)."""
        found: dict[int, str] = {}
        for boundary in self.boundaries:
            if boundary.country or not (boundary.admin_level or boundary.place):
                continue
            lats, lons = grid_inside(boundary)
            if country := majority(self.countries.countries_at(lats, lons)):
                found[id(boundary)] = country
        return found

    def enclosing(self, lats: np.ndarray, lons: np.ndarray) -> list[list[Boundary]]:
        """For each point, the boundaries that contain it."""
        found: list[list[Boundary]] = [[] for _ in range(len(lats))]
        points = np.column_stack((lons, lats))
        for boundary in self.boundaries:
            min_lon, min_lat, max_lon, max_lat = boundary.bbox
            candidates = np.flatnonzero((lons >= min_lon) & (lons <= max_lon) & (lats >= min_lat) & (lats <= max_lat))
            for chunk in np.array_split(candidates, max(1, len(candidates) // CHUNK)):
                if len(chunk) == 0:
                    continue
                inside = points_in_rings(points[chunk], boundary.rings)
                for i in chunk[inside]:
                    found[int(i)].append(boundary)
        return found

    def nearest_settlement(self, lat: float, lon: float, country: str | None) -> str | None:
        """The nearest city, town, village or hamlet of the same country within its reach."""
        point = self.projection.project(np.array([lat]), np.array([lon]))[0]
        reach = max(SETTLEMENT_RADIUS_M.values())
        for label in self.settlement_index.nearby_labels(lat, lon, country, reach, k=4):
            settlement = self.settlements[int(label)]
            there = self.projection.project(np.array([settlement.lat]), np.array([settlement.lon]))[0]
            if math.dist(point, there) <= SETTLEMENT_RADIUS_M[settlement.place_type]:
                return settlement.name
        return None
