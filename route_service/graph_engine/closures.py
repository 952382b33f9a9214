"""The pieces of road one request may not use (no aiohttp here): those entering an avoid
area, and those whose physical or legal limits a truck's size or weight exceeds.

Both are per-request costs on top of the prepared graph: the search (`search.close_pieces`)
makes the listed pieces' edges infinite in a copy of the weights.
"""

from __future__ import annotations

import numpy as np
import shapely

from common.areas import AvoidArea
from common.vehicles import VEHICLE_TABLE
from route_service.graph_engine.prepare import RoadGraph
from route_service.model import Restrictions, TruckDimensions

NO_PIECES = np.empty(0, dtype=np.int64)


def closed_pieces(road: RoadGraph, restrictions: Restrictions, vehicle: str) -> np.ndarray | None:
    """Every piece the request may not use; None when nothing is closed."""
    parts = []
    if restrictions.avoid is not None:
        parts.append(pieces_in_area(road, restrictions.avoid))
    if VEHICLE_TABLE[vehicle].takes_dimensions:
        parts.append(pieces_too_small(road, restrictions.truck or TruckDimensions()))
    parts = [p for p in parts if len(p)]
    if not parts:
        return None
    return np.unique(np.concatenate(parts))


def pieces_in_area(road: RoadGraph, area: AvoidArea) -> np.ndarray:
    """Pieces whose geometry touches the area: their boxes first (numpy), then GEOS on the
    candidates' lines."""
    shape = area.shape()
    shapely.prepare(shape)
    min_lon, min_lat, max_lon, max_lat = shapely.bounds(shape)
    box = road.piece_box
    candidates = np.flatnonzero(
        (box[:, 0] <= max_lon) & (box[:, 2] >= min_lon) & (box[:, 1] <= max_lat) & (box[:, 3] >= min_lat)
    )
    if not len(candidates):
        return NO_PIECES
    lines = piece_lines(road, candidates)
    return candidates[shapely.intersects(shape, lines)]


def piece_lines(road: RoadGraph, pieces: np.ndarray) -> np.ndarray:
    """The pieces' geometries as shapely LineStrings (a piece of one point repeated twice)."""
    ptr = road.a["geom_ptr"]
    starts, sizes = ptr[pieces], ptr[pieces + 1] - ptr[pieces]
    sizes_2 = np.maximum(sizes, 2)
    # index of every point of every piece, the last one repeated for a one-point piece
    offsets = np.repeat(starts, sizes_2) + np.minimum(
        np.arange(sizes_2.sum()) - np.repeat(np.cumsum(sizes_2) - sizes_2, sizes_2), np.repeat(sizes - 1, sizes_2)
    )
    coords = np.column_stack([road.a["geom_lon"][offsets], road.a["geom_lat"][offsets]])
    return shapely.linestrings(coords, indices=np.repeat(np.arange(len(pieces)), sizes_2))


def pieces_too_small(road: RoadGraph, truck: TruckDimensions) -> np.ndarray:
    """Pieces whose maxheight, maxwidth, maxlength, maxweight or maxaxleload the truck exceeds
    (the default truck's size where a dimension is not given): O(limited pieces)."""
    if not len(road.limited_pieces):
        return NO_PIECES
    exceeded = (road.piece_limits < np.array(truck.with_defaults(), dtype=np.float32)).any(axis=1)
    return road.limited_pieces[exceeded]


def exceeded_dimensions(road: RoadGraph, truck: TruckDimensions) -> list[int]:
    """Which of the truck's dimensions (indexes into TRUCK_PARAMETERS) exceed a limit somewhere
    on the map: what a failed truck route is told."""
    if not len(road.limited_pieces):
        return []
    exceeded = (road.piece_limits < np.array(truck.with_defaults(), dtype=np.float32)).any(axis=0)
    return [int(i) for i in np.flatnonzero(exceeded)]
