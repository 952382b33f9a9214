"""Valhalla's tiles built for one dataset with the tools `pyvalhalla` ships: `valhalla_build_tiles`,
then the speed limits by time as predicted speeds (route_service.importing.speed_profiles,
`valhalla_add_predicted_traffic`), then `valhalla_build_extract` packs them into one tar
(route_service.valhalla_tiles says where and with what configuration the service reads them).

Before the build, `emergency_ways` rewrites the PBF so that Valhalla keeps the ways an emergency
route may use inside its radius and lists them for `providers.valhalla_emergency`.

Not built: the admin areas (`valhalla_build_admins`, 550 MB of peak memory even for a city;
without them Valhalla applies its default access rules and driving side). Time zones are
(route_service.importing.valhalla_timed): without them no rule by time ever applies.
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
import osmium
import valhalla

from route_service.importing import speed_profiles, valhalla_timed
from route_service.valhalla_tiles import TILES_TAR, VALHALLA_DIR, WAYS_FILE, config, version


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
    kept = emergency_ways(pbf, folder)
    try:
        run([str(tools_dir() / "valhalla_build_tiles"), "-c", str(config_file), str(kept)], log, "valhalla_build_tiles")
    finally:
        kept.unlink()
    profiles = add_speed_profiles(pbf, settings, config_file, folder, log)
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
        **profiles,
        **timed,
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


# Ways a vehicle can drive (road classes, pedestrian zones, busways).
DRIVABLE = frozenset(
    {"motorway", "motorway_link", "trunk", "trunk_link", "primary", "primary_link", "secondary", "secondary_link",
     "tertiary", "tertiary_link", "unclassified", "residential", "living_street", "service", "road", "track",
     "pedestrian", "busway", "bus_guideway"}
)  # fmt: skip
# Closed to general traffic: Valhalla gives the vehicle no access (graph.lua's `access` table).
CLOSED = frozenset({"no", "agricultural", "forestry", "psv", "bus", "taxi", "emergency", "discouraged", "military"})
# Open to some traffic only: Valhalla keeps the way open as destination-only (graph.lua's `private`
# table), entered where a route starts or ends but not driven through on the first pass.
DESTINATION_ONLY = frozenset({"private", "destination", "customers", "delivery", "permit", "residents"})
CLOSED_HIGHWAYS = frozenset({"pedestrian", "busway", "bus_guideway"})
CAR_KEYS = ("motorcar", "motor_vehicle", "vehicle")
TRUCK_KEYS = ("hgv", "motor_vehicle", "vehicle")
# Keys that open a way to some mode of Valhalla's (graph.lua): with one, the way stays in its graph.
MODE_KEYS = (*CAR_KEYS, "hgv", "bus", "psv", "taxi", "foot", "bicycle", "moped", "mofa", "motorcycle")


def most_specific(tags: osmium.osm.TagList, keys: tuple[str, ...]) -> str | None:
    """The value of the first of `keys`, then `access`, that the way has."""
    return next((tags[key] for key in (*keys, "access") if key in tags), None)


def closed_to(tags: osmium.osm.TagList, keys: tuple[str, ...]) -> bool:
    """Closed by the most specific of `keys` (then `access`), or a closed highway class (a
    pedestrian zone) that no key opens."""
    value = most_specific(tags, keys)
    return value in CLOSED if value is not None else tags.get("highway") in CLOSED_HIGHWAYS


def kept_by_valhalla(tags: osmium.osm.TagList) -> bool:
    """Pedestrian zones (foot), busways (bus), ways a key opens to some mode, or tagged `emergency`."""
    opened = any(tags.get(key, "no") not in CLOSED for key in MODE_KEYS)
    return tags.get("highway") in CLOSED_HIGHWAYS or "emergency" in tags or opened


def emergency_ways(pbf: Path, folder: Path) -> Path:
    """A copy of `pbf` for Valhalla's build, and `<folder>/emergency_ways.json`: the drivable ways
    closed to cars or open to them as destination-only (`car`), and those closed to trucks only
    (`truck`). Valhalla drops a way no mode may use (graph.lua: access=no gives no access bit at
    all, so `ignore_access` could not open it); `emergency=yes` keeps it with the emergency bit
    alone, which no normal costing reads (graph.lua sets its use to emergency_access). Never on a
    destination-only way: with `emergency=yes` graph.lua closes `access=private` to every mode.
    Heidelberg: 0.8 s; 2,467 ways listed for cars (418 tagged emergency=yes), 91 for trucks only."""
    car: list[int] = []
    truck: list[int] = []
    kept = folder / "emergency-input.osm.pbf"
    with osmium.SimpleWriter(str(kept), overwrite=True) as writer:
        # Only ways with a highway tag reach Python; the rest go to the writer in C++ (1.9 s -> 0.4 s).
        ways = osmium.FileProcessor(str(pbf)).with_filter(osmium.filter.EntityFilter(osmium.osm.WAY))
        for obj in ways.with_filter(osmium.filter.KeyFilter("highway")).handler_for_filtered(writer):
            tags = obj.tags
            if not isinstance(obj, osmium.osm.Way) or tags.get("highway") not in DRIVABLE:
                writer.add(obj)
                continue
            if closed_to(tags, CAR_KEYS):
                car.append(obj.id)
                if not kept_by_valhalla(tags):
                    writer.add(obj.replace(tags={**dict(tags), "emergency": "yes"}))
                    continue
            elif any(tags.get(key) in DESTINATION_ONLY for key in (*CAR_KEYS, "access")):
                car.append(obj.id)
            elif closed_to(tags, TRUCK_KEYS):
                truck.append(obj.id)
            writer.add(obj)
    (folder / WAYS_FILE).write_bytes(orjson.dumps({"car": car, "truck": truck}))
    return kept


def run(command: list[str], log: Path, step: str) -> None:
    with log.open("ab") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"{step} failed with exit code {code}:\n{tail}")
