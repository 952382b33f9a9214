"""Valhalla's tiles built for one dataset with the tools `pyvalhalla` ships: `valhalla_build_tiles`,
then the speed limits by time as predicted speeds (route_service.importing.speed_profiles,
`valhalla_add_predicted_traffic`), then `valhalla_build_extract` packs them into one tar
(route_service.valhalla_tiles says where and with what configuration the service reads them).

Not built: the admin areas (`valhalla_build_admins`, 550 MB of peak memory even for a city;
without them Valhalla applies its default access rules and driving side) and time zones.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import valhalla

from route_service.importing import speed_profiles
from route_service.valhalla_tiles import TILES_TAR, VALHALLA_DIR, config, version


def tools_dir() -> Path:
    return Path(valhalla.__file__).resolve().parent / "bin"


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
    profiles = add_speed_profiles(pbf, settings, config_file, folder, log)
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
        **profiles,
    }


def add_speed_profiles(
    pbf: Path, settings: dict[str, Any], config_file: Path, folder: Path, log: Path
) -> dict[str, Any]:
    """The loose tiles given the weekly profiles of the ways with speed limits by time (none: the
    tool is not run). The rules are evaluated over the year from today, local time."""
    started = time.perf_counter()
    reading = {**settings, "mjolnir": {**settings["mjolnir"], "tile_extract": ""}}  # the loose tiles: no tar yet
    traffic = folder / "traffic"
    shutil.rmtree(traffic, ignore_errors=True)
    written = speed_profiles.write_csv(valhalla.Actor(reading), pbf, traffic, datetime.now().replace(microsecond=0))
    if written.edges:
        tool = [str(tools_dir() / "valhalla_add_predicted_traffic"), "-c", str(config_file), str(traffic)]
        run(tool, log, "valhalla_add_predicted_traffic")
    shutil.rmtree(traffic, ignore_errors=True)
    return {**written.summary(), "profiles_seconds": round(time.perf_counter() - started, 2)}


def run(command: list[str], log: Path, step: str) -> None:
    with log.open("ab") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"{step} failed with exit code {code}:\n{tail}")
