"""What Valhalla's routes at a time need from the import (issue 56): time zones in its tiles, and
the map's index of roads with rules by time (route_service.timed_index reads it). No aiohttp.

Time zones: Valhalla evaluates a conditional rule in the time zone of the edge's node, and with
none (tiles built without `mjolnir.timezone`) `DateTime::is_conditional_active` returns false
(src/baldr/datetime.cc: `if (!time_zone) return false;`): a night closure never closed and a
delivery window never opened. Its own `valhalla_build_timezones` downloads polygons (no network
here) and needs spatialite's command-line tools; instead the zones come from timezonefinder's
polygons (a pinned package), written into the spatialite database Valhalla reads with the
spatialite library the wheel bundles, through ctypes.

The timed index: every way with a conditional tag of time_rules.TIMED_KEYS (hundreds on a
city), its node positions and those tags, in small .npy files the service memory-maps and one
JSON of tags. Memory stays bounded by the timed ways: pyosmium's C++ filters keep the other
ways and nodes out of Python (Heidelberg: 0.2 s for its tagged nodes against 0.8 s for all).
"""

from __future__ import annotations

import ctypes
import glob
import math
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import osmium
import shapely
import valhalla
from timezonefinder import TimezoneFinder

from route_service.time_rules import CONDITIONAL_KEYS
from route_service.timed_index import COORDS, IDS, POINTERS, TAGS, TIMED_DIR

CELL_DEG = 0.1  # the grid of places sampled for their time zone (tagged nodes: where the data lies)
MARGIN_DEG = 0.5  # zone polygons are cut to the data's box widened by this
KEPT_TAGS = ("name", "ref", "highway")  # beside the conditional ones: what the answer names
TIMEZONES = "timezones.sqlite"  # beside the tiles while they are built
SQLITE_OPEN = 0x2 | 0x4  # SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE


# ---------------------------------------------------------------- the map's time zones


def occupied_cells(pbf: Path) -> set[tuple[int, int]]:
    """The CELL_DEG cells holding tagged nodes (untagged ones are dropped in C++)."""
    cells: set[tuple[int, int]] = set()
    nodes = osmium.FileProcessor(str(pbf), osmium.osm.NODE).with_filter(osmium.filter.EmptyTagFilter())
    for node in nodes:
        if isinstance(node, osmium.osm.Node) and node.location.valid():
            cells.add((math.floor(node.location.lat / CELL_DEG), math.floor(node.location.lon / CELL_DEG)))
    return cells


def zones_of(cells: set[tuple[int, int]]) -> dict[str, shapely.Geometry]:
    """Each time zone found at a cell's centre or corners, its polygons cut to the cells' box."""
    if not cells:
        return {}
    finder = TimezoneFinder()
    names: set[str] = set()
    for lat_cell, lon_cell in cells:
        for dy, dx in ((0.5, 0.5), (0, 0), (0, 1), (1, 0), (1, 1)):
            name = finder.timezone_at(lat=(lat_cell + dy) * CELL_DEG, lng=(lon_cell + dx) * CELL_DEG)
            if name and not name.startswith("Etc/"):  # the oceans' zones: no roads
                names.add(name)
    lats = [c[0] * CELL_DEG for c in cells]
    lons = [c[1] * CELL_DEG for c in cells]
    box = shapely.box(min(lons) - MARGIN_DEG, min(lats) - MARGIN_DEG, max(lons) + MARGIN_DEG, max(lats) + MARGIN_DEG)
    zones = {}
    for name in sorted(names):
        polygons = [shapely.Polygon(np.column_stack(rings[0]), [np.column_stack(h) for h in rings[1:]])
                    for rings in finder.get_geometry(tz_name=name, coords_as_pairs=False)]  # fmt: skip
        cut = shapely.intersection(shapely.make_valid(shapely.MultiPolygon(polygons)), box)
        if not cut.is_empty:
            zones[name] = cut
    return zones


def multipolygon(shape: shapely.Geometry) -> shapely.MultiPolygon:
    parts = [g for g in getattr(shape, "geoms", [shape]) if isinstance(g, shapely.Polygon | shapely.MultiPolygon)]
    return shapely.MultiPolygon([p for g in parts for p in getattr(g, "geoms", [g])])


def write_timezones(cells: set[tuple[int, int]], target: Path) -> int:
    """Valhalla's time zone database (`mjolnir.timezone`) for the cells; the number of zones."""
    zones = zones_of(cells)
    libs = Path(valhalla.__file__).resolve().parent.parent / "pyvalhalla.libs"
    sqlite = ctypes.CDLL(glob.glob(str(libs / "libsqlite3-*.so*"))[0], mode=ctypes.RTLD_GLOBAL)
    spatialite = ctypes.CDLL(glob.glob(str(libs / "libspatialite-*.so*"))[0])
    spatialite.spatialite_alloc_connection.restype = ctypes.c_void_p
    target.unlink(missing_ok=True)
    db = ctypes.c_void_p()
    if sqlite.sqlite3_open_v2(str(target).encode(), ctypes.byref(db), SQLITE_OPEN, None) != 0:
        raise RuntimeError(f"cannot create the time zone database {target.name}")
    cache = ctypes.c_void_p(spatialite.spatialite_alloc_connection())
    spatialite.spatialite_init_ex(db, cache, 0)

    def execute(sql: str) -> None:
        error = ctypes.c_char_p()
        if sqlite.sqlite3_exec(db, sql.encode(), None, None, ctypes.byref(error)) != 0:
            raise RuntimeError(f"time zone database: {error.value!r} in {sql[:80]}")

    try:
        execute("SELECT InitSpatialMetadata(1, 'WGS84')")
        execute("CREATE TABLE tz_world (PK_UID INTEGER PRIMARY KEY AUTOINCREMENT, TZID TEXT)")
        execute("SELECT AddGeometryColumn('tz_world', 'geom', 4326, 'MULTIPOLYGON', 'XY')")
        for name, shape in zones.items():
            wkt = shapely.to_wkt(multipolygon(shape), rounding_precision=6)
            # IANA names and WKT we made: no quote in either (sqlite3_exec takes no parameters)
            execute(f"INSERT INTO tz_world (TZID, geom) VALUES ('{name}', GeomFromText('{wkt}', 4326))")  # noqa: S608
        execute("SELECT CreateSpatialIndex('tz_world', 'geom')")
    finally:
        sqlite.sqlite3_close(db)
        spatialite.spatialite_cleanup_ex(cache)
    return len(zones)


# ---------------------------------------------------------------- the timed index


def write_timed_index(pbf: Path, folder: Path) -> np.ndarray:
    """The map's roads with rules by time (route_service.timed_index), in `folder`; their nodes' positions."""
    # One pass with osmium's location index (16 bytes a node): an IdFilter of the ways' nodes
    # took 2.9 GB on 10x Heidelberg, whose ids reach 3.4e11.
    ways: dict[int, tuple[list[tuple[float, float]], dict[str, str]]] = {}
    objects = osmium.FileProcessor(str(pbf), osmium.osm.NODE | osmium.osm.WAY).with_locations()
    for way in objects.with_filter(osmium.filter.KeyFilter(*CONDITIONAL_KEYS)):
        tags = dict(way.tags)
        if isinstance(way, osmium.osm.Way) and "highway" in tags:
            kept = {k: v for k, v in tags.items() if k in CONDITIONAL_KEYS or k in KEPT_TAGS}
            ways[way.id] = ([(n.lat, n.lon) for n in way.nodes if n.location.valid()], kept)
    ids = sorted(ways)
    coords = [ways[w][0] for w in ids]
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / IDS, np.array(ids, dtype=np.int64))
    np.save(folder / POINTERS, np.concatenate(([0], np.cumsum([len(c) for c in coords]))).astype(np.int64))
    flat = np.array([p for c in coords for p in c], dtype=np.float64).reshape(-1, 2)
    np.save(folder / COORDS, flat)
    (folder / TAGS).write_bytes(orjson.dumps([ways[w][1] for w in ids]))
    return flat


def build(pbf: Path, folder: Path) -> dict[str, Any]:
    """Both, before the tiles (the time zone database in `folder`/TIMEZONES): their counts."""
    timed = write_timed_index(pbf, folder / TIMED_DIR)
    cells = occupied_cells(pbf) | {
        (math.floor(lat / CELL_DEG), math.floor(lon / CELL_DEG)) for lat, lon in timed.tolist()
    }
    zones = write_timezones(cells, folder / TIMEZONES)
    return {"time_zones": zones, "timed_ways": len(np.load(folder / TIMED_DIR / IDS))}
