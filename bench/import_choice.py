"""What an import builds, by the operator's choice (issue 30): every OSRM profile on MLD and CH,
as before issue 30; OSRM for every route type of car and truck (OSRM_VEHICLES, the second
step's default); for their fastest routes only; and the default, those on CH alone — each with
Valhalla's tiles for every vehicle and the road graph — on every shared extract, all of them as one map, and the
synthetic Heidelberg of `bench/scale.py` at the factors of `BENCH_IMPORT_FACTORS` (default
`1,10`). Two alternatives to the default against issue 30's targets: one step at a time, and
car alone. From 30x on only the default, at 2 steps and at 1 at a time, is imported.

The imports of a map run one after the other in the same run, each a fresh
`python -m route_service.importing` process tree: wall time, the largest process's peak RSS
(wait4) and the tree's largest sampled sum, and the routing data on disk by part, against the
PBF's size. "Build-only" is what the importer removed after OSRM's preprocessing (files no
engine opens): before this change it stayed on disk.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.scale import CACHE, SHARED_OSM, Measured, current_dir, dir_bytes, human_bytes, measured_run, synthetic
from route_service.osrm_profiles import PROFILE_NAMES

CHOICES = {
    "every OSRM profile, MLD+CH (before)": ["--profiles", ",".join(PROFILE_NAMES), "--algorithm", "mld+ch"],
    "car, truck: both route types, MLD+CH": [
        "--profiles", "car-fastest,car-shortest,truck-fastest,truck-shortest", "--algorithm", "mld+ch"
    ],
    "car, truck fastest, MLD+CH": ["--profiles", "car-fastest,truck-fastest", "--algorithm", "mld+ch"],
    "default (car, truck fastest, CH)": [],
    # the alternatives to the default against issue 30's import targets: one step at a time (the
    # tree's peak is one process's), and car alone (an operator's ROUTING_VEHICLES=car)
    "default, one step at a time (--jobs 1)": ["--jobs", "1"],
    "car only (--vehicles car)": ["--vehicles", "car"],
}  # fmt: skip
# From this synthetic factor on only these are imported (the earlier choices' 30x import is
# 20-40 minutes; bench/RESULTS.md's scale section has the default there).
LARGE_FROM = 30
LARGE_CHOICES = ("default (car, truck fastest, CH)", "default, one step at a time (--jobs 1)")


@dataclass
class Built:
    measured: Measured
    manifest: dict[str, Any]
    parts: dict[str, int]  # osrm, valhalla, graph: bytes on disk
    build_only: int  # bytes the importer removed after OSRM's preprocessing


def maps() -> list[tuple[str, list[Path], int]]:
    """(name, inputs, synthetic factor; 0 for the shared extracts)."""
    extracts = sorted(SHARED_OSM.glob("*.osm.pbf"))
    factors = [int(f) for f in os.environ.get("BENCH_IMPORT_FACTORS", "1,10").split(",") if f.strip()]
    chosen = [(p.name.split(".")[0], [p], 0) for p in extracts] + [("all as one", extracts, 0)]
    return chosen + [(f"Heidelberg {f}x (synthetic)", [synthetic(f)[0]], f) for f in factors]


def build(inputs: list[Path], options: list[str], work: Path) -> Built:
    out = work / "maps"
    osm = [arg for path in inputs for arg in ("--osm", str(path))]
    command = [sys.executable, "-m", "route_service.importing.importer", *osm, "--out", str(out), *options]
    measured = measured_run(command, work / "import.log")
    dataset = current_dir(out)
    manifest = json.loads((dataset / "manifest.json").read_text())
    parts = {part: dir_bytes(dataset / part) for part in ("osrm", "valhalla", "graph")}
    removed = sum(int(stats.get("build_only_bytes_removed", 0)) for stats in manifest["profiles"].values())
    return Built(measured, manifest, parts, removed)


def row(name: str, pbf: int, choice: str, built: Built) -> str:
    total = sum(built.parts.values())
    parts = " / ".join(human_bytes(built.parts[p]) for p in ("osrm", "valhalla", "graph"))
    return (
        f"| {name} | {choice} | {len(built.manifest['profiles'])} | {built.measured.seconds:.1f} "
        f"| {human_bytes(built.measured.max_rss)} / {human_bytes(built.measured.tree_rss)} "
        f"| {parts} | {human_bytes(total)} = **{total / pbf:.1f}x** | {human_bytes(built.build_only)} |"
    )


def run() -> str:
    CACHE.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, inputs, factor in maps():
        pbf = sum(p.stat().st_size for p in inputs)
        for choice, options in CHOICES.items():
            if factor >= LARGE_FROM and choice not in LARGE_CHOICES:
                continue
            with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
                print(f"   {name}: {choice} ...", flush=True)
                rows.append(row(name, pbf, choice, build(inputs, options, Path(tmp))))
    return "\n".join([
        "## Routing import by the operator's choice (issue 30)",
        "",
        f"Factors {os.environ.get('BENCH_IMPORT_FACTORS', '1,10')} (when, at which commit and under which load: the "
        "line above). Each map imported by `python -m route_service.importing` (2 steps at a time unless the choice says) "
        "with each choice in a row: every OSRM profile, as every import did before issue 30; car and truck with "
        "both route types in OSRM (issue 30's second step); their fastest routes only (shortest ones from "
        "Valhalla); the default, those on CH alone (a second alternative from Valhalla); the default one step "
        "at a time; car alone. From "
        f"{LARGE_FROM}x on, the default only, at 2 steps and at 1 at a time. All keep Valhalla's tiles and the "
        "road graph. Targets (issue 30, at 10x and 30x, "
        "`bench/scale.py`): routing data ≤ 6x the PBF, import wall ≤ 1/3 of before, tree peak ≤ 1.5 GB at 30x.",
        "",
        "| map | choice | OSRM profiles | wall s | peak RSS: largest process / tree | data: OSRM / Valhalla / graph "
        "| routing data vs PBF | build-only files removed |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
    ])
