"""The road graph file (`graph/graph.npz`): what `graph_build` writes and `graph_engine` reads.

Flat numpy arrays, no networkx and no pickles:

    format_version                 [FORMAT_VERSION]
    node_lat, node_lon             per graph node
    edge_src, edge_dst, edge_piece, edge_reverse, edge_length, indptr
                                   directed edges sorted by source node (CSR); piece -1 is a
                                   zero-length connector around a passable barrier
    mode_<vehicle>, speed_<vehicle>  per edge: access mode (`MODE_*`) and km/h, for each of
                                   `common.vocabulary.VEHICLES`
    geom_ptr, geom_lat, geom_lon, geom_cum
                                   piece geometry: points of piece p are geom_ptr[p]:geom_ptr[p+1],
                                   geom_cum the metres along the piece
    piece_name, piece_highway, names, highways
                                   per piece an index into the string tables
    limited_pieces, piece_limits   the pieces with a physical or legal limit (sorted) and, per
                                   row, height m, width m, length m, weight t, axle load t
                                   (inf: none), checked against a truck per request
    underground_pieces             the pieces below the ground (tunnels, negative layers; sorted):
                                   snapping prefers a surface road near a point to them
    timed_pieces, timed_way, timed_tags
                                   the pieces of ways with rules by time (`<key>:conditional`,
                                   sorted), per piece an index into timed_tags: each such way's
                                   tags as JSON with its id as "@id" (route_service.time_rules)

Lengths are metres on the sphere of `common.geo.EARTH_RADIUS_M`, the one the engine snaps on.

Access mode per directed edge and vehicle: usable normally, usable only by an emergency
vehicle (closed to general traffic, or against a one-way street), or never.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

GRAPH_FILE = "graph.npz"
FORMAT_VERSION = 4

MODE_NO = 0
MODE_YES = 1
MODE_EMERGENCY_ACCESS = 2  # way closed to general traffic (access=no/private, bus-only, pedestrian zone)
MODE_EMERGENCY_ONEWAY = 3  # against the direction of a one-way street
REASONS = {MODE_EMERGENCY_ACCESS: "access_restricted", MODE_EMERGENCY_ONEWAY: "oneway_against_direction"}


def write_graph(out_dir: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `out_dir/graph.npz`; a reader never sees a half-written file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (GRAPH_FILE + ".tmp.npz")
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(out_dir / GRAPH_FILE)


def read_graph(graph_dir: Path) -> dict[str, np.ndarray]:
    with np.load(graph_dir / GRAPH_FILE, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}
