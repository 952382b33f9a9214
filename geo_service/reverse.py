"""Coordinates → the nearest addresses."""

from __future__ import annotations

import math

from common.geo import METRES_PER_DEGREE, LatLon, haversine_m
from geo_service.model import GeocodeAnswer, GeocodeResult, Note, ReverseQuery
from geo_service.ranking import address_result
from geo_service.records import Address
from geo_service.store import IndexReader

REVERSE_RADII_M = (60.0, 250.0, 1000.0, 5000.0)


def reverse(reader: IndexReader, query: ReverseQuery, coverage: str) -> GeocodeAnswer:
    """Nearest addresses first, searching ever larger boxes until enough are found. An address
    mapped twice (a node and its building, or two entrances) is answered once, at its nearest.
    `coverage`: what the map covers, said when nothing is near."""
    rows: list[Address] = []
    for radius in REVERSE_RADII_M:
        d_lat = radius / METRES_PER_DEGREE
        d_lon = d_lat / max(0.01, math.cos(math.radians(query.lat)))
        rows = reader.addresses_near(query.lat, query.lon, d_lat, d_lon, limit=2000)
        if len({address_identity(r) for r in rows}) >= query.limit:
            break
    here = LatLon(query.lat, query.lon)
    measured = sorted(((haversine_m(here, LatLon(r.lat, r.lon)), r) for r in rows), key=lambda p: p[0])
    results: list[GeocodeResult] = []
    seen: set[tuple[str | None, ...]] = set()
    for distance, row in measured:
        if (identity := address_identity(row)) in seen:
            continue
        seen.add(identity)
        result = address_result(row, 1.0 / (1.0 + distance / 100.0))
        results.append(GeocodeResult(**{**result.__dict__, "distance_m": distance}))
        if len(results) == query.limit:
            break
    if results:
        return GeocodeAnswer(results)
    return GeocodeAnswer([], (Note("NO_MATCH", f"no address within {REVERSE_RADII_M[-1] / 1000:g} km of the point{coverage}"),))


def address_identity(row: Address) -> tuple[str | None, ...]:
    """What makes two address rows the same address for a reader of the answer."""
    return (row.street, row.house_number, row.postcode, row.city, row.country)
