"""The graph builder (route_service.importing.graph_build): the arrays it assembles from the ways' columns
are those of the readable networkx model (route_service.importing.graph_model), on every shared extract
and on all of them merged, and building them takes a fraction of the model's memory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from common.config import REPO_ROOT
from route_service.graph_format import read_graph
from route_service.importing.graph_build import assemble, build_graph, read_pbf
from route_service.importing.graph_model import build_networkx, export_arrays
from route_service.importing.importer import merge_inputs
from tests.conftest import CITIES, EVERY_MAP

# Piece lengths are summed in another order than the model's sum(): equal within this.
LENGTH_RTOL = 1e-12


@pytest.fixture(scope="module")
def map_pbf(shared_osm: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    def pbf(name: str) -> Path:
        if name != "all":
            return shared_osm / f"{name}.osm.pbf"
        merged = tmp_path_factory.mktemp("graph-all") / "all.osm.pbf"
        if not merged.exists():
            merge_inputs([shared_osm / f"{city}.osm.pbf" for city in CITIES], merged)
        return merged

    return pbf


def differences(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> list[str]:
    wrong = sorted(set(got) ^ set(want))
    for key in sorted(set(got) & set(want)):
        a, b = got[key], want[key]
        if a.dtype != b.dtype or a.shape != b.shape:
            wrong.append(f"{key}: {a.dtype}{a.shape} != {b.dtype}{b.shape}")
        elif not (np.allclose(a, b, rtol=LENGTH_RTOL, atol=0) if key == "edge_length" else np.array_equal(a, b)):
            wrong.append(key)
    return wrong


@pytest.mark.parametrize("name", EVERY_MAP)
def test_assembled_arrays_equal_the_networkx_models(name: str, map_pbf: Callable[[str], Path]) -> None:
    pbf = map_pbf(name)
    read = read_pbf(pbf)
    got = assemble(read.ways, read.barriers)
    want = export_arrays(build_networkx(pbf))
    assert differences(got, want) == []
    assert len(got["edge_src"]) > 1000 and (got["edge_piece"] == -1).any() == bool(read.barriers)


def test_the_written_file_holds_the_assembled_arrays(map_pbf: Callable[[str], Path], tmp_path: Path) -> None:
    stats = build_graph(map_pbf("monaco"), tmp_path / "graph")
    written = read_graph(tmp_path / "graph")
    read = read_pbf(map_pbf("monaco"))
    assert differences(written, assemble(read.ways, read.barriers)) == []
    assert (stats["nodes"], stats["edges"], stats["pieces"]) == (
        len(written["node_lat"]), len(written["edge_src"]), len(written["geom_ptr"]) - 1,
    )  # fmt: skip


def peak_rss_mb(code: str) -> float:
    """Peak resident memory of a fresh interpreter running `code`: its VmHWM (KiB), which a new
    program starts afresh, unlike ru_maxrss, which keeps the forking test process's own peak."""
    report = "; import re; print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])"
    done = subprocess.run(
        [sys.executable, "-c", code + report], cwd=REPO_ROOT, check=True, timeout=300, capture_output=True, text=True
    )
    return int(done.stdout.split()[-1]) / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB")
def test_building_heidelberg_stays_lean(shared_osm: Path, tmp_path: Path) -> None:
    """The networkx model peaks at 251 MB on Heidelberg (2.0 GB on 10 copies of it), the
    columns and numpy assembly at 85 MB (404 MB). 150 MB leaves room for library changes and
    still fails on a return to Python objects per edge."""
    code = (
        "from pathlib import Path; from route_service.importing.graph_build import build_graph; "
        f"build_graph(Path({json.dumps(str(shared_osm / 'heidelberg.osm.pbf'))}), Path({json.dumps(str(tmp_path))}))"
    )
    assert peak_rss_mb(code) < 150
