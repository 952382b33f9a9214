"""Valhalla's tiles built for one dataset with the tools `pyvalhalla` ships: `valhalla_build_tiles`,
then `valhalla_build_extract` packs them into one tar (route_service.valhalla_tiles says where
and with what configuration the service reads them).

Not built: the admin areas (`valhalla_build_admins`, 550 MB of peak memory even for a city;
without them Valhalla applies its default access rules and driving side). Time zones are
(route_service.importing.valhalla_timed): without them no rule by time ever applies.
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

from route_service.importing import valhalla_timed
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
    started = time.perf_counter()
    timed = valhalla_timed.build(pbf, folder)
    settings["mjolnir"]["timezone"] = str(folder / valhalla_timed.TIMEZONES)
    config_file = folder / "build-config.json"
    config_file.write_bytes(orjson.dumps(settings))
    log = folder / "import.log"
    run([str(tools_dir() / "valhalla_build_tiles"), "-c", str(config_file), str(pbf)], log, "valhalla_build_tiles")
    tiles_bytes = sum(f.stat().st_size for f in tiles.rglob("*") if f.is_file())
    extract = [sys.executable, "-m", "valhalla.valhalla_build_extract", "-c", str(config_file), "-O"]
    run(extract, log, "valhalla_build_extract")
    shutil.rmtree(tiles)
    config_file.unlink()
    (folder / valhalla_timed.TIMEZONES).unlink()  # in the tiles now: each node's zone
    return {
        "valhalla_version": version(),
        "seconds": round(time.perf_counter() - started, 2),
        "tiles_bytes": tiles_bytes,
        "tar_bytes": (folder / TILES_TAR).stat().st_size,
        **timed,
    }


def run(command: list[str], log: Path, step: str) -> None:
    with log.open("ab") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"{step} failed with exit code {code}:\n{tail}")
