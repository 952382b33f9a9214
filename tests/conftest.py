"""Fixtures shared by every test: a real Redis server, a PostgreSQL server (for the accounts)
and the shared OSM extracts."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from common.config import REPO_ROOT
from common.vocabulary import VEHICLES
from launcher.redis_server import free_port, redis_url, start_redis
from route_service.importing.importer import DEFAULT_ALGORITHM, ImportResult, Progress, import_maps
from tests.imports_ahead import ImportsAhead, shared_root
from tests.imports_ahead import wanted as imports_ahead_wanted
from tests.postgres_server import PostgresServer, PostgresUnavailable
from tests.route_service.osm_samples import write_cut_off_map

SHARED_OSM = REPO_ROOT.parent / "shared" / "osm"
# Under CI=true a skip is a failure, unless the data lacks the case (tests/ci_skips.py).
pytest_plugins = ["tests.ci_skips"]


def pytest_configure(config: pytest.Config) -> None:
    # Apps built in-process read INTERNAL_TOKEN from the environment: one exported in the shell
    # would make them refuse every test client. Each Stack makes its own (launcher.stack).
    os.environ.pop("INTERNAL_TOKEN", None)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free loopback port, requiring a password as every Redis of the
    platform does; yields its URL, the password in it."""
    port, password = free_port(), secrets.token_urlsafe(16)
    process = start_redis(port, tmp_path_factory.mktemp("redis"), password=password, persist=False)
    try:
        yield redis_url(port, password)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server on a free loopback port; the tests using it skip, saying why, where it
    cannot be started (a failure under CI=true: tests/ci_skips.py)."""
    server = PostgresServer()
    try:
        server.start()
    except PostgresUnavailable as exc:
        server.stop()
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def shared_osm() -> Path:
    if not SHARED_OSM.is_dir():
        pytest.fail(f"the shared OSM extracts are missing: expected {SHARED_OSM}")
    return SHARED_OSM


# Every shared extract, and "all" of them imported together as one map: data-dependent
# features are tested on each (the importer's car-fastest profile and Valhalla's tiles).
CITIES = ("heidelberg", "munich", "helsinki", "monaco", "andorra")
EVERY_MAP = (*CITIES, "all")
# A synthetic map that holds the cases the diagnostics explain (tests.route_service.osm_samples).
CUT_OFF_MAP = "cut-off"


@pytest.fixture(scope="session")
def city_maps(
    tmp_path_factory: pytest.TempPathFactory, shared_osm: Path, imports_ahead: ImportsAhead
) -> Callable[[str], ImportResult]:
    """`city_maps(name)`: the dataset of one shared extract (or "all", or CUT_OFF_MAP) serving every vehicle,
    OSRM's car-fastest only (the others from Valhalla), imported on first use (or
    ahead, `tests.imports_ahead`) and kept for the session."""
    made: dict[str, ImportResult] = {}

    def maps(name: str) -> ImportResult:
        if name not in made:
            out = imports_ahead.out(f"city-maps-{name}")
            made[name] = imports_ahead.result(f"city-maps-{name}", lambda: import_city_map(name, shared_osm, out))
        return made[name]

    return maps


def import_city_map(name: str, shared_osm: Path, out: Path) -> ImportResult:
    """What `city_maps(name)` holds, imported into `out` (the made map's OSM file beside it)."""
    inputs = [shared_osm / f"{c}.osm.pbf" for c in (CITIES if name == "all" else (name,))]
    if name == CUT_OFF_MAP:
        (out / "osm").mkdir(exist_ok=True)
        inputs = [write_cut_off_map(out / "osm")]
    return import_maps(inputs, out / "maps", profiles=["car-fastest"], vehicles=",".join(VEHICLES),
                       algorithm=made_map_algorithm(name), progress=Progress(emit=lambda _line: None))  # fmt: skip


# The maps `city_maps` serves, in the order the suite first asks for them (the optimizer's tests
# take Heidelberg, the route service's every map in EVERY_MAP's order, then the made one).
CITY_MAPS_AHEAD = (*EVERY_MAP, CUT_OFF_MAP)


@pytest.fixture(scope="session", autouse=True)
def imports_ahead(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ImportsAhead]:
    """With TEST_IMPORTS_AHEAD=1, the session's slow imports start at once in the background,
    each only when a collected test uses its fixture (`tests.imports_ahead`)."""
    ahead = ImportsAhead(shared_root(tmp_path_factory.getbasetemp()))
    if imports_ahead_wanted():
        used = {name for item in request.session.items for name in getattr(item, "fixturenames", ())}
        start_imports_ahead(ahead, used, request, tmp_path_factory)
    yield ahead
    ahead.close()


def start_imports_ahead(
    ahead: ImportsAhead, used: set[str], request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tests.geo_service.conftest import SESSION_INDEXES, import_index
    from tests.geo_service.test_copies import COPIES, import_copies
    from tests.integration.conftest import import_platform_data
    from tests.route_service.conftest import import_every_profile

    shared_osm: Path = request.getfixturevalue("shared_osm")

    def start_index(fixture: str) -> None:
        if fixture in used:
            ahead.start(fixture, import_index, shared_osm, ahead.out(fixture), SESSION_INDEXES[fixture])

    # The geocoder's tests come first, then the end-to-end ones, then the route service's. Each
    # geocoder index took 5-36 s in its first test's set-up (Munich, the merged three, Heidelberg,
    # every extract: 4.6, 14.2, 8.7, 35.7 s; tests/geo_service alone, load 4 on 2 cores).
    start_index("munich_import")
    start_index("andorra_monaco_helsinki_import")
    start_index("heidelberg_import")
    if "monaco_copies_indexes" in used:  # test_copies comes between test_autocomplete and test_countries
        ahead.start("geo-copies", import_copies, shared_osm, ahead.out("geo-copies"), (1, COPIES))
    start_index("all_extracts_import")
    if "full_platform" in used:
        ahead.start("full-platform", import_platform_data, shared_osm, ahead.out("full-platform"))
    if "city_maps" in used:
        for name in CITY_MAPS_AHEAD:
            ahead.start(f"city-maps-{name}", import_city_map, name, shared_osm, ahead.out(f"city-maps-{name}"))
    if "heidelberg_maps" in used:
        ahead.start("heidelberg-every-profile", import_every_profile, shared_osm / "heidelberg.osm.pbf",
                    ahead.out("heidelberg-every-profile"))  # fmt: skip


def made_map_algorithm(name: str) -> str:
    """The made map's one car network is a uniform grid of equal streets, which has no hierarchy
    for CH to use: osrm-contract took 66 s on it (32 s with every fifth street a larger road),
    MLD 0.2 s. The diagnostics it is made for do not depend on the algorithm."""
    return "mld" if name == CUT_OFF_MAP else DEFAULT_ALGORITHM
