"""The prepared road graph is one file every process maps (issue 30): a mapped engine answers
as the one prepared in memory, its arrays are read-only views of the file, another process maps
the same file instead of preparing its own, and a file it cannot trust or write is prepared
again or kept in memory. Real extract: Monaco."""

from __future__ import annotations

import multiprocessing
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from route_service.graph_engine import GraphEngine, shared
from route_service.graph_engine.shared import engine_path, shared_engine
from route_service.importing.graph_build import build_graph

PAIRS = 25


@pytest.fixture(scope="module")
def built(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    graph_dir = tmp_path_factory.mktemp("graph-shared") / "graph"
    build_graph(shared_osm / "monaco.osm.pbf", graph_dir)
    return graph_dir


@pytest.fixture
def graph_dir(built: Path, tmp_path: Path) -> Path:
    """A fresh copy of the built graph: no prepared file yet."""
    return Path(shutil.copytree(built, tmp_path / "graph"))


def answers(engine: GraphEngine) -> list[tuple[float, float, int] | None]:
    """Snapped points and routes between seeded points of Monaco, as comparable tuples."""
    rng = np.random.default_rng(20261127)
    found: list[tuple[float, float, int] | None] = []
    for _ in range(PAIRS):
        lat, lon = rng.uniform(43.725, 43.745, 2), rng.uniform(7.41, 7.435, 2)
        ends = [engine.snap("car", float(a), float(o), max_distance_m=500) for a, o in zip(lat, lon, strict=True)]
        if ends[0] is None or ends[1] is None:
            found.append(None)
            continue
        path = engine.shortest_path("car", "fastest", ends[0], ends[1], radius_m=200.0)
        found.append(None if path is None else (round(path.distance_m, 3), round(path.duration_s, 3), len(path.stretches)))
    return found


def test_a_mapped_engine_answers_as_the_one_prepared_in_memory(graph_dir: Path) -> None:
    mapped = shared_engine(graph_dir)
    assert engine_path(graph_dir).is_file()
    expected = answers(GraphEngine.load(graph_dir))
    assert sum(a is not None for a in expected) >= PAIRS // 2, "too few routes to compare"
    assert answers(mapped) == expected


def test_its_arrays_are_read_only_views_of_the_file(graph_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared_engine(graph_dir)  # prepares and writes the file

    def prepare_again(_graph_dir: Path) -> GraphEngine:
        raise AssertionError("a process prepared the graph although its file exists")

    monkeypatch.setattr(GraphEngine, "load", prepare_again)
    engine = shared_engine(graph_dir)  # maps it
    arrays = [engine.road.geom_xyz, engine.road.a["geom_lat"], engine.road.vehicles["car"].indptr]
    assert not any(array.flags.writeable for array in arrays)
    tree, _owner = engine.snapper.tree("car", False, "main") or (None, None)
    assert tree is not None and not tree.data.flags.writeable, "the snapping trees are shared too"


def mapped_by_child(graph_dir: Path) -> bool:
    """In a process of its own: whether its engine comes from the file, mapped in its address space."""
    engine = shared_engine(graph_dir)
    maps = Path("/proc/self/maps").read_text()
    return not engine.road.geom_xyz.flags.writeable and str(engine_path(graph_dir)) in maps


def test_another_process_maps_the_same_file(graph_dir: Path) -> None:
    shared_engine(graph_dir)
    written = engine_path(graph_dir).stat()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(mapped_by_child, (graph_dir,))
    assert engine_path(graph_dir).stat().st_mtime_ns == written.st_mtime_ns, "not written again"


def test_an_unwritable_dataset_keeps_the_engine_in_memory(graph_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(_engine: GraphEngine, _path: Path) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(shared, "write_engine", read_only)
    engine = shared_engine(graph_dir)
    assert engine.road.geom_xyz.flags.writeable and not engine_path(graph_dir).exists()
    assert answers(engine) == answers(GraphEngine.load(graph_dir))


def test_a_damaged_file_is_prepared_again(graph_dir: Path) -> None:
    engine_path(graph_dir).write_bytes(b"RGENGINE" + b"\0" * 40)
    engine = shared_engine(graph_dir)
    assert not engine.road.geom_xyz.flags.writeable and engine_path(graph_dir).stat().st_size > 1_000_000


class Planted:
    """What a pickle naming a class outside the graph engine would build."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("ran code from the file",))


def test_a_file_naming_other_code_is_not_run(graph_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = engine_path(graph_dir)
    path.write_bytes(shared.MAGIC + shared.HEADER.pack(len(body := pickle.dumps(Planted(), protocol=5)), 0) + body)
    engine = shared_engine(graph_dir)
    assert "ran code from the file" not in capsys.readouterr().out
    assert not engine.road.geom_xyz.flags.writeable, "prepared again and mapped"


def test_a_file_from_other_code_has_another_name(graph_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared_engine(graph_dir)
    first = engine_path(graph_dir)
    monkeypatch.setattr(shared, "engine_key", lambda: "0" * 16)
    shared_engine(graph_dir)
    assert not first.exists() and engine_path(graph_dir).exists(), "the stale file is removed"


def test_a_cache_directory_holds_the_served_map_s_file_only(built: Path, tmp_path: Path) -> None:
    """The service's ROUTE_GRAPH_CACHE_DIR: the file goes there, not into the dataset (which may
    be read-only), and the next map's file replaces the last one's."""
    cache = tmp_path / "graph-cache"
    first = Path(shutil.copytree(built, tmp_path / "first" / "graph"))
    second = Path(shutil.copytree(built, tmp_path / "second" / "graph"))
    shared_engine(first, cache)
    assert engine_path(first, cache).is_file() and not engine_path(first).exists()
    engine = shared_engine(second, cache)
    assert not engine.road.geom_xyz.flags.writeable
    assert sorted(p.name for p in cache.iterdir()) == [engine_path(second, cache).name]
