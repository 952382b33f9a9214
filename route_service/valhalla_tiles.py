"""Valhalla's routing tiles for one dataset: one graph for every vehicle (issue 30). No aiohttp.

OSRM needs a dataset per vehicle and route type (eight here), 94x the PBF on disk at 10x
Heidelberg; Valhalla's tiles hold every costing (car, truck, bicycle, pedestrian; fastest and
shortest; truck dimensions, excluded areas) in one graph, 3.9x the PBF (the issue's
measurement). The importer builds them with the tools `pyvalhalla` ships (`valhalla_build_tiles`,
then `valhalla_build_extract` packs them into one tar); the service memory-maps that tar, so
every worker and child process shares one copy through the page cache.

Not built: the admin areas (`valhalla_build_admins`, 550 MB of peak memory even for a city;
without them Valhalla applies its default access rules and driving side) and time zones.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import valhalla

VALHALLA_DIR = "valhalla"
TILES_TAR = "tiles.tar"
# Our avoid areas' limit is their vertex count and the map, not a perimeter: Valhalla's default
# refuses any excluded polygon longer than 10 km around.
MAX_EXCLUDE_POLYGONS_LENGTH_M = 10_000_000
MAX_ROUTE_DISTANCE_M = 40_000_000  # around the Earth


def version() -> str:
    return str(getattr(valhalla, "__version__", "unknown"))


def tools_dir() -> Path:
    return Path(valhalla.__file__).resolve().parent / "bin"


def config(dataset_dir: Path, *, threads: int = 1) -> dict[str, Any]:
    """Valhalla's configuration for the dataset's tiles (absolute paths: made when loaded,
    never stored, since a dataset is built in one folder and published under another)."""
    folder = dataset_dir / VALHALLA_DIR
    folder.mkdir(parents=True, exist_ok=True)  # get_config resolves its paths strictly
    tar = folder / TILES_TAR
    settings: dict[str, Any] = valhalla.get_config(tile_extract=str(tar) if tar.is_file() else "", tile_dir=str(folder))
    settings["mjolnir"].update({"concurrency": threads, "admin": "", "timezone": "", "traffic_extract": ""})
    limits = settings["service_limits"]
    limits["max_exclude_polygons_length"] = MAX_EXCLUDE_POLYGONS_LENGTH_M
    for costing in ("auto", "truck", "bicycle", "pedestrian"):
        # Valhalla refuses routes longer than 250 km on foot, 500 km by bicycle, 5 000 km by car
        # before it searches; our only limit is the map's.
        limits[costing]["max_distance"] = MAX_ROUTE_DISTANCE_M
    settings["loki"]["logging"] = {"type": "", "long_request": 100.0}
    settings["thor"]["logging"] = {"type": "", "long_request": 100.0}
    settings["odin"]["logging"] = {"type": ""}
    settings["mjolnir"]["logging"] = {"type": "std_out", "color": False}
    return settings


def build_tiles(pbf: Path, dataset_dir: Path, threads: int) -> dict[str, Any]:
    """The tiles of `pbf` packed into `<dataset_dir>/valhalla/tiles.tar`; the loose tiles removed.
    Raises RuntimeError naming the failed step with the tool's output tail."""
    folder = dataset_dir / VALHALLA_DIR
    tiles = folder / "tiles"
    tiles.mkdir(parents=True, exist_ok=True)
    settings = config(dataset_dir, threads=threads)
    settings["mjolnir"]["tile_dir"] = str(tiles)
    settings["mjolnir"]["tile_extract"] = str(folder / TILES_TAR)
    config_file = folder / "build-config.json"
    config_file.write_bytes(orjson.dumps(settings))
    started = time.perf_counter()
    log = folder / "import.log"
    run([str(tools_dir() / "valhalla_build_tiles"), "-c", str(config_file), str(pbf)], log, "valhalla_build_tiles")
    tiles_bytes = sum(f.stat().st_size for f in tiles.rglob("*") if f.is_file())
    extract = [sys.executable, "-m", "valhalla.valhalla_build_extract", "-c", str(config_file), "-O"]
    run(extract, log, "valhalla_build_extract")
    shutil.rmtree(tiles)
    config_file.unlink()
    return {
        "valhalla_version": version(),
        "seconds": round(time.perf_counter() - started, 2),
        "tiles_bytes": tiles_bytes,
        "tar_bytes": (folder / TILES_TAR).stat().st_size,
    }


def run(command: list[str], log: Path, step: str) -> None:
    with log.open("ab") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"{step} failed with exit code {code}:\n{tail}")
