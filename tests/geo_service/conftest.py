"""Geocoder indexes built once per test session from the shared OSM extracts (imported ahead,
in the background, under TEST_IMPORTS_AHEAD=1: `tests.imports_ahead`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from common.datasets import read_current
from common.geo import LatLon, haversine_m
from geo_service.importing.importer import ImportResult, run_import
from geo_service.index import LoadedIndex, open_index
from geo_service.model import GeocodeQuery
from tests.imports_ahead import ImportsAhead

ALL_EXTRACTS = ("andorra", "heidelberg", "helsinki", "monaco", "munich")
# Each session index's import fixture and the shared extracts merged into it, in the order the
# suite first uses them (test_app, test_autocomplete twice, test_countries): the order they are
# started ahead in (`tests.conftest.start_imports_ahead`).
SESSION_INDEXES: dict[str, tuple[str, ...]] = {
    "munich_import": ("munich",),
    "andorra_monaco_helsinki_import": ("andorra", "monaco", "helsinki"),
    "heidelberg_import": ("heidelberg",),
    "all_extracts_import": ALL_EXTRACTS,
}


def import_index(shared_osm: Path, out: Path, names: tuple[str, ...]) -> ImportResult:
    """The named shared extracts merged into one index in `out` (made current)."""
    return run_import([shared_osm / f"{name}.osm.pbf" for name in names], out, emit=lambda line: None)


def session_index(request: pytest.FixtureRequest) -> ImportResult:
    """The import of the requesting fixture's index (SESSION_INDEXES): started ahead under the
    fixture's name, else imported now."""
    fixture = request.fixturename
    assert fixture is not None  # None only for a test's own request
    names = SESSION_INDEXES[fixture]
    shared_osm: Path = request.getfixturevalue("shared_osm")
    ahead: ImportsAhead = request.getfixturevalue("imports_ahead")
    out = ahead.out(fixture)
    return ahead.result(fixture, lambda: import_index(shared_osm, out, names))


def serve(index_dir: Path) -> Iterator[LoadedIndex]:
    """The current index in `index_dir`, open for the session's tests, closed after them."""
    loaded = open_current(index_dir)
    yield loaded
    loaded.reader.close()


def open_current(index_dir: Path) -> LoadedIndex:
    hash_ = read_current(index_dir)
    assert hash_ is not None
    return open_index(index_dir, hash_)


@pytest.fixture(scope="session")
def munich_import(request: pytest.FixtureRequest) -> ImportResult:
    return session_index(request)


@pytest.fixture(scope="session")
def munich_dir(munich_import: ImportResult) -> Path:
    """The index directory (holding current.json) of the Munich extract."""
    return munich_import.path.parent


@pytest.fixture(scope="session")
def munich(munich_dir: Path) -> Iterator[LoadedIndex]:
    yield from serve(munich_dir)


@pytest.fixture(scope="session")
def heidelberg_import(request: pytest.FixtureRequest) -> ImportResult:
    return session_index(request)


@pytest.fixture(scope="session")
def heidelberg(heidelberg_import: ImportResult) -> Iterator[LoadedIndex]:
    yield from serve(heidelberg_import.path.parent)


@pytest.fixture(scope="session")
def andorra_monaco_helsinki_import(request: pytest.FixtureRequest) -> ImportResult:
    return session_index(request)


@pytest.fixture(scope="session")
def andorra_monaco_helsinki(andorra_monaco_helsinki_import: ImportResult) -> Iterator[LoadedIndex]:
    """Three extracts merged into one index: Catalan, French and Finnish street names."""
    yield from serve(andorra_monaco_helsinki_import.path.parent)


@pytest.fixture(scope="session")
def all_extracts_import(request: pytest.FixtureRequest) -> ImportResult:
    return session_index(request)


@pytest.fixture(scope="session")
def all_extracts(all_extracts_import: ImportResult) -> Iterator[LoadedIndex]:
    """Every shared extract in one index: Germany twice, Finland, Monaco with French suburbs,
    Andorra with Spanish and French edges — several countries in one map, as users load them."""
    yield from serve(all_extracts_import.path.parent)


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
