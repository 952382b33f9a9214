"""Which road networks an osrm-extract counts as "tiny", read from the extract's own files.

OSRM marks every strongly connected component of fewer than `--small-component-size` nodes
(1000 by default) as tiny: a point on a tiny component is routed only to points of that same
component, or from the nearest large component within the snapping radius. On one city that
keeps points off closed sites and one-way traps. On a map of several extracts it cut a whole
city off: central Helsinki's main network (~700 edge-based nodes) is tiny beside Heidelberg's,
so on all five shared extracts merged 1342 of 10 000 Helsinki matrix cells had no route, while
Helsinki alone (no large component at all) routed every one (measured 2026-11-26).

So the importer asks, after each extract, whether every input's main network (its largest
component inside the input's extent) came out tiny, and extracts again with smaller sizes in
turn (`SMALL_COMPONENT_SIZES`) until none does. Lowering the size only as far as needed
matters: at 50 on all five merged, a Heidelberg fragment of ~345 edge-based nodes counted as
large, and the 2 of 100 Heidelberg stops snapped onto it lost every route (394 cells); at 400
both cities routed as on their own maps.

The files are tar archives of flat arrays (OSRM's storage format, osrm-bindings 26.10, pinned):
`.ebg_nodes` one record per edge-based node (geometry id, component id with the tiny flag in
its top bit, annotation id), `.geometry` each geometry's first node, `.nbg_nodes` each node's
fixed-point coordinate. No aiohttp here.
"""

from __future__ import annotations

import math
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.geo import Bounds

# osrm-extract's --small-component-size, tried in this order after OSRM's default of 1000.
SMALL_COMPONENT_SIZES = (1000, 700, 500, 350, 250, 175, 125, 90, 64, 50)
_HIGH_BIT = np.uint32(1 << 31)
_LOW_BITS = np.uint32((1 << 31) - 1)
COORDINATE_PRECISION = 1e6  # OSRM's fixed-point coordinates
# An input's header box wider than this is no extent (some tools write a world quadrant).
MAX_HEADER_SPAN_DEG = 90.0


@dataclass(frozen=True)
class Components:
    """Per edge-based node of an extract: its component, whether OSRM counts it tiny, and where."""

    component: np.ndarray  # uint32
    tiny: np.ndarray  # bool
    lat: np.ndarray
    lon: np.ndarray


def _member(archive: tarfile.TarFile, name: str, dtype: type[np.generic]) -> np.ndarray:
    """A member as an array mapped from the file, not read: on a country's extract the three
    files hold ~1.4 GB, of which the lookups below touch a small part (OSRM's tar members are
    stored uncompressed)."""
    info = archive.getmember(name)
    itemsize = np.dtype(dtype).itemsize
    if not info.isfile() or info.size % itemsize:
        raise ValueError(f"{name} of {archive.name!r} is not an array of {np.dtype(dtype)}")
    if info.size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(str(archive.name), dtype=dtype, mode="r", offset=info.offset_data, shape=(info.size // itemsize,))


def read_components(base: Path) -> Components:
    """The components of the extract at `base` (`…/map.osrm`); ValueError or KeyError when its
    files do not hold what this version of OSRM writes."""
    with tarfile.open(f"{base}.ebg_nodes") as archive:
        count = int(_member(archive, "/common/ebg_node_data/nodes.meta", np.uint64)[0])
        records = _member(archive, "/common/ebg_node_data/nodes", np.uint32)[: 3 * count].reshape(count, 3)
    with tarfile.open(f"{base}.geometry") as archive:
        first_of_geometry = _member(archive, "/common/segment_data/index", np.uint32)
        geometry_nodes = _member(archive, "/common/segment_data/nodes", np.uint32)
    with tarfile.open(f"{base}.nbg_nodes") as archive:
        coordinates = _member(archive, "/common/nbn_data/coordinates", np.int32).reshape(-1, 2)
    node = geometry_nodes[first_of_geometry[records[:, 0] & _LOW_BITS]]
    return Components(
        component=records[:, 1] & _LOW_BITS,
        tiny=(records[:, 1] & _HIGH_BIT) != 0,
        lat=coordinates[node, 1] / COORDINATE_PRECISION,
        lon=coordinates[node, 0] / COORDINATE_PRECISION,
    )


def tiny_main_networks(components: Components, extents: Sequence[Bounds | None]) -> list[int]:
    """The positions of the extents whose main network (the component with the most edge-based
    nodes inside the extent) OSRM counts as tiny; an extent without roads or unknown is skipped."""
    tiny: list[int] = []
    for position, extent in enumerate(extents):
        if extent is None:
            continue
        inside = (
            (components.lat >= extent.min_lat)
            & (components.lat <= extent.max_lat)
            & (components.lon >= extent.min_lon)
            & (components.lon <= extent.max_lon)
        )
        if not inside.any():
            continue
        ids, counts = np.unique(components.component[inside], return_counts=True)
        main = ids[np.argmax(counts)]
        if components.tiny[inside][components.component[inside] == main][0]:
            tiny.append(position)
    return tiny


WHOLE_MAP = Bounds(min_lon=-180.0, min_lat=-90.0, max_lon=180.0, max_lat=90.0)


def input_extents(inputs: Sequence[Path]) -> list[Bounds | None]:
    """Where each input lies. One input is the whole map (its main network is the map's largest,
    nothing to read); several: each one's `input_extent`."""
    if len(inputs) == 1:
        return [WHOLE_MAP]
    return [input_extent(path) for path in inputs]


def input_extent(path: Path) -> Bounds | None:
    """Where an input lies: its header's box, else its nodes' extent (one pass over them, in
    constant memory)."""
    import osmium

    header = osmium.io.Reader(str(path), osmium.osm.osm_entity_bits.NOTHING)
    try:
        box = header.header().box()
    finally:
        header.close()
    if box.valid():
        south, north = box.bottom_left.lat, box.top_right.lat
        west, east = box.bottom_left.lon, box.top_right.lon
        if north - south <= MAX_HEADER_SPAN_DEG and east - west <= MAX_HEADER_SPAN_DEG:
            return Bounds(min_lon=west, min_lat=south, max_lon=east, max_lat=north)
    south, west, north, east = math.inf, math.inf, -math.inf, -math.inf
    for entity in osmium.FileProcessor(str(path), osmium.osm.NODE):
        if isinstance(entity, osmium.osm.Node) and entity.location.valid():
            lat, lon = entity.location.lat, entity.location.lon
            south, north, west, east = min(south, lat), max(north, lat), min(west, lon), max(east, lon)
    if south > north:
        return None
    return Bounds(min_lon=west, min_lat=south, max_lon=east, max_lat=north)
