"""Geocoder indexes built once per test session from the shared OSM extracts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from common.datasets import read_current
from common.geo import LatLon, haversine_m
from geo_service.importing.importer import ImportResult, run_import
from geo_service.index import LoadedIndex, open_index
from geo_service.model import GeocodeQuery


def build(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory, *names: str) -> ImportResult:
    out = tmp_path_factory.mktemp("geo-" + "-".join(names))
    return run_import([shared_osm / f"{name}.osm.pbf" for name in names], out, emit=lambda line: None)


def open_current(index_dir: Path) -> LoadedIndex:
    hash_ = read_current(index_dir)
    assert hash_ is not None
    return open_index(index_dir, hash_)


@pytest.fixture(scope="session")
def munich_import(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory) -> ImportResult:
    return build(shared_osm, tmp_path_factory, "munich")


@pytest.fixture(scope="session")
def munich_dir(munich_import: ImportResult) -> Path:
    """The index directory (holding current.json) of the Munich extract."""
    return munich_import.path.parent


@pytest.fixture(scope="session")
def munich(munich_dir: Path) -> Iterator[LoadedIndex]:
    loaded = open_current(munich_dir)
    yield loaded
    loaded.reader.close()


@pytest.fixture(scope="session")
def heidelberg(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadedIndex]:
    loaded = open_current(build(shared_osm, tmp_path_factory, "heidelberg").path.parent)
    yield loaded
    loaded.reader.close()


@pytest.fixture(scope="session")
def andorra_monaco_helsinki(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadedIndex]:
    """Three extracts merged into one index: Catalan, French and Finnish street names."""
    loaded = open_current(build(shared_osm, tmp_path_factory, "andorra", "monaco", "helsinki").path.parent)
    yield loaded
    loaded.reader.close()


ALL_EXTRACTS = ("andorra", "heidelberg", "helsinki", "monaco", "munich")


@pytest.fixture(scope="session")
def all_extracts(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadedIndex]:
    """Every shared extract in one index: Germany twice, Finland, Monaco with French suburbs,
    Andorra with Spanish and French edges — several countries in one map, as users load them."""
    loaded = open_current(build(shared_osm, tmp_path_factory, *ALL_EXTRACTS).path.parent)
    yield loaded
    loaded.reader.close()


def missed_near(index: LoadedIndex, cases: list[tuple[str, LatLon]], limit: int = 1,
                metres: float = 100.0) -> list[tuple[str, list[str | None]]]:  # fmt: skip
    """The texts none of whose first `limit` results lies within `metres` of its point, with
    the names answered instead."""
    missed = []
    for text, point in cases:
        results = index.matcher.geocode(GeocodeQuery(text=text, limit=limit)).results
        if not any(haversine_m(point, LatLon(r.lat, r.lon)) <= metres for r in results):
            missed.append((text, [r.name for r in results[:2]]))
    return missed
