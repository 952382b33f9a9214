"""The routing import against the engines' own tools (issue 56): the default choice (OSRM's car
and truck fastest on CH, Valhalla's tiles for every vehicle) and the operator's smaller one
(`OSRM_VEHICLES=car`), each beside its references run in the same bench on the same PBF:
OSRM's own `osrm-extract` + `osrm-contract` for the profiles that choice loads, and Valhalla's
`valhalla_build_admins` + `valhalla_build_tiles` alone. On every shared extract, all of them as
one map, and the synthetic Heidelberg of `bench/scale.py` at BENCH_IMPORT_FACTORS (default 1,10).

Each run is a fresh process tree: wall time, the largest process's peak RSS (wait4) and the
tree's largest sampled sum, and the bytes on disk of what serves (every folder the route
service keeps; the references' files minus what only OSRM's preprocessing reads, and Valhalla's
loose tiles). Targets (issue 56, item 4): data ≤ 1.1x the references' serving files together,
import wall ≤ 1.2x their walls together, tree peak ≤ 1.1x the largest reference's.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.scale import CACHE, SHARED_OSM, Measured, current_dir, dir_bytes, human_bytes, measured_run, synthetic
from route_service import osrm_profiles, valhalla_tiles
from route_service.importing.importer import BUILD_ONLY_SUFFIXES
from route_service.importing.valhalla_build import tools_dir

# The operator's choices: import options and environment.
CHOICES: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": ([], {}),
    "OSRM_VEHICLES=car": ([], {"OSRM_VEHICLES": "car"}),
}
TARGET_DATA, TARGET_WALL, TARGET_PEAK = 1.1, 1.2, 1.1


@dataclass
class Built:
    measured: Measured
    serving_bytes: int
    parts: dict[str, int]  # what serves, by folder (ours) or by tool (references)


def maps() -> list[tuple[str, list[Path], int]]:
    """(name, inputs, synthetic factor; 0 for the shared extracts)."""
    extracts = sorted(SHARED_OSM.glob("*.osm.pbf"))
    factors = [int(f) for f in os.environ.get("BENCH_IMPORT_FACTORS", "1,10").split(",") if f.strip()]
    chosen = [(p.name.split(".")[0], [p], 0) for p in extracts] + [("all as one", extracts, 0)]
    return chosen + [(f"Heidelberg {f}x (synthetic)", [synthetic(f)[0]], f) for f in factors]


def ours(inputs: list[Path], options: list[str], env: dict[str, str], work: Path) -> tuple[Built, dict[str, Any]]:
    out = work / "maps"
    work.mkdir(parents=True)
    osm = [arg for path in inputs for arg in ("--osm", str(path))]
    command = [sys.executable, "-m", "route_service.importing", *osm, "--out", str(out), *options]
    measured = measured_run(command, work / "import.log", env)
    dataset = current_dir(out)
    manifest = json.loads((dataset / "manifest.json").read_text())
    parts = {part.name: dir_bytes(part) for part in dataset.iterdir() if part.is_dir()}
    return Built(measured, dir_bytes(dataset), parts), manifest


def osrm_reference(pbf: Path, profiles: list[str], work: Path) -> Built:
    """osrm-extract + osrm-contract for each profile, one after the other."""
    runs, served = [], 0
    work.mkdir(parents=True)
    for profile in profiles:
        base = work / profile / "map.osrm"
        base.parent.mkdir(parents=True)
        extract = ["-p", str(osrm_profiles.profile_file(profile)), "-t", "2", "-o", str(base), str(pbf)]
        for tool, args in (("extract", extract), ("contract", ["-t", "2", str(base)])):
            command = [sys.executable, "-m", "osrm", tool, *args]
            runs.append(measured_run(command, work / f"{profile}-{tool}.log", osrm_profiles.lua_env()))
        served += sum(f.stat().st_size for f in base.parent.iterdir() if f.suffix not in BUILD_ONLY_SUFFIXES)
    return Built(together(runs), served, {"osrm": served})


def valhalla_reference(pbf: Path, work: Path) -> Built:
    """valhalla_build_admins + valhalla_build_tiles with Valhalla's own configuration."""
    work.mkdir(parents=True)
    settings = valhalla_tiles.config(work)
    tiles = work / "tiles"
    tiles.mkdir()
    settings["mjolnir"].update({"tile_dir": str(tiles), "tile_extract": "", "admin": str(work / "admins.sqlite"),
                                "concurrency": 2})  # fmt: skip
    config = work / "valhalla.json"
    config.write_bytes(orjson.dumps(settings))
    runs = [
        measured_run([str(tools_dir() / tool), "-c", str(config), str(pbf)], work / f"{tool}.log")
        for tool in ("valhalla_build_admins", "valhalla_build_tiles")
    ]
    served = dir_bytes(tiles)
    return Built(together(runs), served, {"valhalla": served})


def together(runs: list[Measured]) -> Measured:
    """Steps run one after the other: their walls add up, their peaks do not."""
    return Measured(sum(r.seconds for r in runs), max(r.max_rss for r in runs), max(r.tree_rss for r in runs))


def merged_pbf(inputs: list[Path], work: Path) -> Path:
    if len(inputs) == 1:
        return inputs[0]
    from route_service.importing.importer import merge_inputs

    target = work / "merged.osm.pbf"
    merge_inputs(inputs, target)
    return target


def rows_for(name: str, inputs: list[Path], choice: str, work: Path) -> list[str]:
    options, env = CHOICES[choice]
    built, manifest = ours(inputs, options, env, work / "ours")
    pbf = merged_pbf(inputs, work)
    osrm = osrm_reference(pbf, sorted(manifest["profiles"]), work / "osrm")
    valhalla = valhalla_reference(pbf, work / "valhalla")
    references = [osrm, valhalla]
    data = built.serving_bytes / sum(r.serving_bytes for r in references)
    wall = built.measured.seconds / sum(r.measured.seconds for r in references)
    peak = built.measured.tree_rss / max(r.measured.tree_rss for r in references)
    size = sum(p.stat().st_size for p in inputs)

    def row(what: str, b: Built, ratios: str) -> str:
        parts = ", ".join(f"{k} {human_bytes(v)}" for k, v in sorted(b.parts.items()))
        return (f"| {name} | {what} | {b.measured.seconds:.1f} | {human_bytes(b.measured.max_rss)} / "
                f"{human_bytes(b.measured.tree_rss)} | {human_bytes(b.serving_bytes)} ({b.serving_bytes / size:.1f}x PBF): "
                f"{parts} | {ratios} |")  # fmt: skip

    verdicts = (f"data **{data:.2f}x** (≤ {TARGET_DATA}), wall **{wall:.2f}x** (≤ {TARGET_WALL}), "
                f"peak **{peak:.2f}x** (≤ {TARGET_PEAK})")  # fmt: skip
    return [
        row(f"ours, {choice} ({', '.join(sorted(manifest['profiles']))})", built, verdicts),
        row("reference: osrm-extract + osrm-contract", osrm, ""),
        row("reference: valhalla_build_admins + valhalla_build_tiles", valhalla, ""),
    ]


def run() -> str:
    CACHE.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, inputs, _factor in maps():
        for choice in CHOICES:
            with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
                print(f"   {name}: {choice} ...", flush=True)
                rows += rows_for(name, inputs, choice, Path(tmp))
    return "\n".join([
        "## Routing import against the engines' own tools (issue 56)",
        "",
        f"Factors {os.environ.get('BENCH_IMPORT_FACTORS', '1,10')} (when, at which commit and under which load: the "
        "line above). Each map imported by `python -m route_service.importing` with each choice, then the references "
        "on the same PBF (the inputs merged as the importer merges them), one step after the other: OSRM's own "
        "osrm-extract + osrm-contract for the profiles the choice loads, and valhalla_build_admins + "
        "valhalla_build_tiles. Ratios: ours against the references together (data, wall) and against the "
        "largest reference's tree peak. Targets (issue 56, item 4): data ≤ 1.1x, wall ≤ 1.2x, peak ≤ 1.1x.",
        "",
        "| map | import | wall s | peak RSS: largest process / tree | serving data | against the references |",
        "|---|---|---|---|---|---|",
        *rows,
    ])
