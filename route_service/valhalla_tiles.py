"""Valhalla's routing tiles for one dataset: one graph for every vehicle (issue 30). No aiohttp.

OSRM needs a dataset per vehicle and route type (eight here), 94x the PBF on disk at 10x
Heidelberg; Valhalla's tiles hold every costing (car, truck, bicycle, pedestrian; fastest and
shortest; truck dimensions, excluded areas) in one graph, 3.9x the PBF (the issue's
measurement). The importer builds them (route_service.importing.valhalla_build); the service
memory-maps their tar, so every worker and child process shares one copy through the page
cache. This module is what both read: where the tiles lie, and Valhalla's configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import valhalla

from common.areas import MAX_VERTICES

VALHALLA_DIR = "valhalla"
TILES_TAR = "tiles.tar"
# The drivable ways closed to general traffic, by OSM way id (importing.valhalla_build.emergency_ways).
WAYS_FILE = "emergency_ways.json"
COSTINGS = ("auto", "truck", "bicycle", "pedestrian")  # VEHICLE_TABLE's valhalla_costing
# Our avoid areas' limits are their positions and area (common.areas), not a perimeter:
# Valhalla's default refuses excluded polygons longer than 10 km around or of over 100 positions.
MAX_EXCLUDE_POLYGONS_LENGTH_M = 10_000_000
MAX_EXCLUDE_POLYGONS_VERTICES = MAX_VERTICES
MAX_ROUTE_DISTANCE_M = 40_000_000  # around the Earth
# Matrices: the API's largest (route_service.parsing.MAX_MATRIX_SIDE squared; stock 2 500 pairs).
MAX_MATRIX_PAIRS = 1000 * 1000
# One Dijkstra a source (or target), split over threads (providers.valhalla_matrix, measured there).
MATRIX_ALGORITHM = "timedistancematrix"


def version() -> str:
    return str(getattr(valhalla, "__version__", "unknown"))


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
    limits["max_exclude_polygons_vertices"] = MAX_EXCLUDE_POLYGONS_VERTICES
    for costing in COSTINGS:
        # Valhalla refuses routes longer than 250 km on foot, 500 km by bicycle, 5 000 km by car,
        # and matrices wider than 400 km, before it searches; our only limit is the map's.
        limits[costing].update(max_distance=MAX_ROUTE_DISTANCE_M, max_matrix_distance=MAX_ROUTE_DISTANCE_M,
                               max_matrix_location_pairs=MAX_MATRIX_PAIRS)  # fmt: skip
    # A matrix whose points lie farther apart than this loses its `date_time`, silently (stock:
    # 0, every matrix). Time rules apply to every matrix, so the bound is the widest matrix
    # Valhalla takes at all (its costings' max_matrix_distance, the map's): what a matrix
    # may cost stays bounded by that and max_matrix_location_pairs, not by dropping the time.
    limits["max_timedep_distance_matrix"] = max(limits[costing]["max_matrix_distance"] for costing in COSTINGS)
    settings["thor"]["source_to_target_algorithm"] = MATRIX_ALGORITHM
    settings["loki"]["logging"] = {"type": "", "long_request": 100.0}
    settings["thor"]["logging"] = {"type": "", "long_request": 100.0}
    settings["odin"]["logging"] = {"type": ""}
    settings["mjolnir"]["logging"] = {"type": "std_out", "color": False}
    return settings
