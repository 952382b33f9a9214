"""Route service fixtures: Heidelberg imported once per test session (all 8 profiles + Valhalla).

The import takes about 30 s on 2 cores (MLD); every OSRM test shares it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from route_service.importing.importer import ImportResult, Progress, import_maps
from route_service.osrm_profiles import PROFILE_NAMES
from route_service.providers.osrm_provider import OsrmProvider
from tests.imports_ahead import ImportsAhead
from tests.route_service.osm_samples import TinyMap, write_tiny_map

IMPORT_SECONDS: dict[str, float] = {}


@pytest.fixture(scope="session")
def heidelberg_pbf(shared_osm: Path) -> Path:
    return shared_osm / "heidelberg.osm.pbf"


@pytest.fixture(scope="session")
def heidelberg_maps(
    tmp_path_factory: pytest.TempPathFactory, heidelberg_pbf: Path, imports_ahead: ImportsAhead
) -> ImportResult:
    out = imports_ahead.out("heidelberg-every-profile")
    result = imports_ahead.result("heidelberg-every-profile", lambda: import_every_profile(heidelberg_pbf, out))
    IMPORT_SECONDS["heidelberg"] = result.seconds
    return result


def import_every_profile(pbf: Path, out: Path) -> ImportResult:
    # Every OSRM profile (OSRM_VEHICLES may name every vehicle): the tests here check OSRM's bicycle
    # and pedestrian routes too, not only the default import's car and truck.
    return import_maps([pbf], out, profiles=list(PROFILE_NAMES), progress=Progress(emit=lambda _line: None))


@pytest.fixture(scope="session")
def osrm_hd(heidelberg_maps: ImportResult) -> OsrmProvider:
    provider = OsrmProvider.load(heidelberg_maps.path, heidelberg_maps.record)
    provider.preload()
    return provider


@pytest.fixture(scope="session")
def tiny_map(tmp_path_factory: pytest.TempPathFactory) -> TinyMap:
    return write_tiny_map(tmp_path_factory.mktemp("tiny"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for name, seconds in IMPORT_SECONDS.items():
        terminalreporter.write_line(f"route_service: {name} imported in {seconds:.1f} s")
