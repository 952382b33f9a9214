"""The importer on tiny synthetic maps (fast), and what the Heidelberg import produced."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest

from common.datasets import CURRENT, Progress
from common.errors import NoRouteFound
from route_service import osrm_profiles
from route_service.dataset import MANIFEST
from route_service.importing.importer import (
    BUILD_ONLY_SUFFIXES,
    WIDE_PROFILES,
    ImportResult,
    MapImporter,
    import_maps,
    import_order,
    parse_counts,
)
from route_service.importing.osrm_components import (
    SMALL_COMPONENT_SIZES,
    input_extent,
    read_components,
    tiny_main_networks,
)
from route_service.model import MatrixQuery, RouteQuery
from route_service.providers.osrm_provider import OsrmProvider
from tests.route_service.osm_samples import TinyMap, write_tiny_map

QUIET = Progress(emit=lambda _line: None)


def test_every_profile_is_a_thin_wrapper_of_a_stock_profile() -> None:
    stock = osrm_profiles.wheel_profiles_dir()
    for name in osrm_profiles.PROFILE_NAMES:
        text = osrm_profiles.profile_file(name).read_text()
        assert "require('rs_wrap')" in text and len(text.splitlines()) <= 5
        base = "foot" if name.startswith("pedestrian") else name.split("-")[0].replace("truck", "car")
        assert f"Wrap.profile('{base}'" in text and (stock / f"{base}.lua").is_file()
    # Our names must never shadow the stock profiles that the wrappers require.
    assert not {"car.lua", "bicycle.lua", "foot.lua"} & {p.name for p in osrm_profiles.lua_files()}


def test_import_then_rerun_is_a_noop(tmp_path: Path, tiny_map: TinyMap) -> None:
    out = tmp_path / "maps"
    first = import_maps([tiny_map.pbf], out, profiles=["car-fastest"], progress=QUIET)
    assert not first.reused
    manifest_file = first.path / MANIFEST
    mtime = manifest_file.stat().st_mtime_ns
    lines: list[str] = []
    second = import_maps([tiny_map.pbf], out, profiles=["car-fastest"], progress=Progress(emit=lines.append))
    assert second.reused and second.hash == first.hash
    assert manifest_file.stat().st_mtime_ns == mtime
    assert [line for line in lines if "extract" in line] == []
    assert json.loads((out / CURRENT).read_text()) == {"hash": first.hash}
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_manifest_describes_the_dataset(tmp_path: Path, tiny_map: TinyMap) -> None:
    result = import_maps([tiny_map.pbf], tmp_path, profiles=["car-fastest", "pedestrian-shortest"], progress=QUIET)
    m = result.record
    assert m["complete"] and m["hash"] == result.hash and m["algorithm"] == "auto"
    assert set(m["profiles"]) == {"car-fastest", "pedestrian-shortest"}
    assert m["inputs"][0]["name"] == "tiny.osm.pbf" and len(m["inputs"][0]["sha256"]) == 64
    assert m["osm_nodes"] == 10 and m["osm_ways"] == 2
    for stats in m["profiles"].values():
        assert stats["nodes"] > 0 and stats["edges"] > 0 and stats["bytes"] > 0
        assert (result.path / "osrm").is_dir()
    assert m["disk_bytes"] >= sum(s["bytes"] for s in m["profiles"].values())
    assert "OpenStreetMap contributors" in m["attribution"]


def test_the_dataset_keeps_no_copy_of_its_input(tmp_path: Path, tiny_map: TinyMap) -> None:
    """The merged input is read by every build step and by nothing that serves (issue 30's
    data on disk)."""
    result = import_maps([tiny_map.pbf], tmp_path, profiles=["car-fastest"], progress=QUIET)
    assert not list(result.path.rglob("*.osm.pbf"))


def test_other_profiles_or_algorithm_make_another_dataset(tmp_path: Path, tiny_map: TinyMap) -> None:
    a = import_maps([tiny_map.pbf], tmp_path, profiles=["car-fastest"], progress=QUIET)
    b = import_maps([tiny_map.pbf], tmp_path, profiles=["car-fastest"], algorithm="mld", progress=QUIET)
    assert a.hash != b.hash
    assert json.loads((tmp_path / CURRENT).read_text())["hash"] == b.hash
    assert (a.path / "osrm" / "car-fastest" / "map.osrm.hsgr").is_file()  # the matrices' CH graph
    assert not (b.path / "osrm" / "car-fastest" / "map.osrm.hsgr").exists()


def test_by_default_car_and_truck_are_contracted_and_the_others_partitioned(tmp_path: Path, tiny_map: TinyMap) -> None:
    """Contracting a bicycle or pedestrian graph took 23-61 s in Heidelberg, a car one 2-4 s; a
    fastest car or truck keeps no MLD files (22 % of its data), its routes and matrices both on
    CH; a shortest one keeps MLD for its routes (CH's durations differ there, importer.KEEPS_MLD)."""
    profiles = ["truck-fastest", "truck-shortest", "pedestrian-fastest"]
    result = import_maps([tiny_map.pbf], tmp_path, profiles=profiles, progress=QUIET)
    files = {p: {f.name.removeprefix("map.osrm.") for f in (result.path / "osrm" / p).iterdir()} for p in profiles}
    assert [("hsgr" in files[p], "mldgr" in files[p]) for p in profiles] == [(True, False), (True, True), (False, True)]
    provider = OsrmProvider.load(result.path, result.record)
    assert [provider.route_algorithm(p) for p in profiles] == ["CH", "MLD", "MLD"]
    assert [provider.matrix_algorithm(p) for p in profiles] == ["CH", "CH", "MLD"]
    assert [provider.most_alternatives(p) for p in profiles] == [1, 2, 2]
    assert provider.info().one_alternative == {("truck", "fastest")}, "only loaded profiles are listed"
    assert provider.route(RouteQuery(*tiny_map.west, vehicle="pedestrian")).routes


@pytest.mark.parametrize("algorithm", ["auto", "mld+ch", "mld", "ch"])
def test_every_algorithm_answers_routes_and_matrices_alike(tmp_path: Path, tiny_map: TinyMap, algorithm: str) -> None:
    """... from the files the build leaves: those only OSRM's preprocessing reads are removed."""
    result = import_maps([tiny_map.pbf], tmp_path, profiles=["car-fastest"], algorithm=algorithm, progress=QUIET)
    left = {path.suffix for path in (result.path / "osrm" / "car-fastest").iterdir()}
    assert left.isdisjoint(BUILD_ONLY_SUFFIXES) and ".ebg" in BUILD_ONLY_SUFFIXES, left
    assert result.record["profiles"]["car-fastest"]["build_only_bytes_removed"] > 0
    provider = OsrmProvider.load(result.path, result.record)
    route = provider.route(RouteQuery(*tiny_map.west))
    table = provider.matrix(MatrixQuery([tiny_map.west[0]], [tiny_map.west[1]]))
    assert table.durations_s[0][0] == pytest.approx(route.routes[0].duration_s, abs=0.2)
    assert table.distances_m[0][0] == pytest.approx(route.routes[0].distance_m, abs=1.0)


def test_several_inputs_are_merged(tmp_path: Path, tiny_map: TinyMap) -> None:
    other = write_tiny_map(tmp_path, "other.osm.pbf", lon_offset=0.5)
    result = import_maps([tiny_map.pbf, other.pbf], tmp_path / "maps", profiles=["car-fastest"], progress=QUIET)
    assert result.record["osm_nodes"] == 20 and len(result.record["inputs"]) == 2
    provider = OsrmProvider.load(result.path, result.record)
    west = provider.route(RouteQuery(*tiny_map.west))
    east = provider.route(RouteQuery(*other.east))
    assert west.routes[0].distance_m == pytest.approx(444, rel=0.05)
    assert east.routes[0].distance_m == pytest.approx(444, rel=0.05)


def test_unconnected_streets_give_no_route(tmp_path: Path, tiny_map: TinyMap) -> None:
    result = import_maps([tiny_map.pbf], tmp_path, profiles=["car-fastest"], progress=QUIET)
    provider = OsrmProvider.load(result.path, result.record)
    with pytest.raises(NoRouteFound) as caught:
        provider.route(RouteQuery(tiny_map.west[0], tiny_map.east[0]))
    assert caught.value.status == 400


def test_bad_arguments_are_refused(tmp_path: Path, tiny_map: TinyMap) -> None:
    with pytest.raises(ValueError, match="unknown profiles"):
        import_maps([tiny_map.pbf], tmp_path, profiles=["car-slowest"], progress=QUIET)
    with pytest.raises(FileNotFoundError, match=r"no such OSM file: .*nothing\.osm\.pbf"):
        import_maps([tmp_path / "nothing.osm.pbf"], tmp_path, progress=QUIET)


def test_cli_prints_progress_summary_and_attribution(
    tmp_path: Path, tiny_map: TinyMap, capsys: pytest.CaptureFixture[str]
) -> None:
    code = MapImporter().main(["--osm", str(tiny_map.pbf), "--out", str(tmp_path), "--profiles", "bicycle-fastest"])
    out = capsys.readouterr().out
    assert code == 0
    assert "extract bicycle-fastest" in out and "dataset " in out and "disk:" in out
    assert "OpenStreetMap contributors" in out and "ODbL" in out
    assert MapImporter().main(["--osm", str(tmp_path / "missing.pbf"), "--out", str(tmp_path)]) == 1


def test_log_counts_are_parsed() -> None:
    text = "Raw input contains 221009 nodes, 31619 ways, and 460 relations\nProcessed 62004 nodes\n-- Processed 66708 edges"
    assert parse_counts(text) == {"osm_nodes": 221009, "osm_ways": 31619, "nodes": 62004, "edges": 66708}


def test_heidelberg_import_has_all_profiles_valhallas_tiles_and_no_graph(heidelberg_maps: ImportResult) -> None:
    m = heidelberg_maps.record
    assert list(m["profiles"]) == list(osrm_profiles.PROFILE_NAMES)
    assert m["valhalla"] and m["coverage"]["road_nodes"] > 0
    assert "graph" not in m and not (heidelberg_maps.path / "graph").exists(), "our road graph is no longer built"
    stats = m["profiles"]
    # The truck profile closes ways (weight, size, hgv=no) that cars use.
    assert stats["truck-fastest"]["edges"] < stats["car-fastest"]["edges"]
    # Footways and cycleways: the pedestrian and bicycle graphs are far larger.
    assert stats["pedestrian-fastest"]["edges"] > 2 * stats["car-fastest"]["edges"]


def test_a_map_without_a_large_component_is_extracted_again(tmp_path: Path, shared_osm: Path) -> None:
    """Central Helsinki has no car component of OSRM's 1000 nodes: extracted again with smaller
    sizes until its main network counts as large (without it every snapped point searched the
    whole radius for one, 0.32 ms a point), but not down to the smallest size."""
    result = import_maps([shared_osm / "helsinki.osm.pbf"], tmp_path, profiles=["car-fastest"], progress=QUIET)
    base = result.path / "osrm" / "car-fastest" / "map.osrm"
    log = (base.parent / "import.log").read_text()
    size = result.record["profiles"]["car-fastest"]["small_component_size"]
    assert SMALL_COMPONENT_SIZES[-1] < size < SMALL_COMPONENT_SIZES[0]
    assert log.count("osrm extract") >= 2 and f"--small-component-size {size}" in log
    extent = input_extent(shared_osm / "helsinki.osm.pbf")
    assert tiny_main_networks(read_components(base), [extent]) == []


def test_a_large_map_keeps_osrms_component_size(heidelberg_maps: ImportResult) -> None:
    for profile, stats in heidelberg_maps.record["profiles"].items():
        assert stats["small_component_size"] == SMALL_COMPONENT_SIZES[0], profile
        assert "--small-component-size" not in (heidelberg_maps.path / "osrm" / profile / "import.log").read_text()


def test_wide_profiles_alternate_with_narrow_ones() -> None:
    order = import_order(osrm_profiles.PROFILE_NAMES)
    assert sorted(order) == sorted(osrm_profiles.PROFILE_NAMES)
    wide = [p.startswith(WIDE_PROFILES) for p in order]
    assert wide == [False, True] * 4


class TimedProgress(Progress):
    """Progress that also keeps when each extract ran (its printed tenths are too coarse)."""

    def __init__(self) -> None:
        super().__init__(emit=lambda _line: None)
        self.extracts: list[tuple[float, float]] = []

    def run[T](self, step: str, action: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return super().run(step, action)
        finally:
            if step.startswith("extract "):
                self.extracts.append((started, time.perf_counter()))


def test_two_wide_extracts_never_run_at_once(tmp_path: Path, tiny_map: TinyMap) -> None:
    """osrm-extract of a bicycle or pedestrian profile is the import's memory peak (2.0-2.1 GB
    on 30 copies of Heidelberg): two at once took the import to 4.2 GB."""
    wide = [p for p in osrm_profiles.PROFILE_NAMES if p.startswith(WIDE_PROFILES)]
    progress = TimedProgress()
    import_maps([tiny_map.pbf], tmp_path, profiles=wide, jobs=2, progress=progress)
    spans = sorted(progress.extracts)
    assert len(spans) >= len(wide)
    assert all(later[0] >= earlier[1] for earlier, later in pairwise(spans)), spans


def test_osrm_extract_runs_on_one_thread_whatever_the_steps_threads(tmp_path: Path, tiny_map: TinyMap) -> None:
    """With more threads osrm-extract drops edges, differently each run (osrm-backend#7713):
    3 of 11 pedestrian-shortest imports of Heidelberg answered routes 2-4.6x too long."""
    result = import_maps([tiny_map.pbf], tmp_path, profiles=["car-fastest"], jobs=1)
    log = (result.path / "osrm" / "car-fastest" / "import.log").read_text()
    extract_log = log.split("osrm contract")[0]
    assert re.search(r"\] Threads: 1\b", extract_log), extract_log[-2000:]
