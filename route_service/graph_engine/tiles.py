"""The junctions grouped by map tiles (about 1 km square), and each vehicle's edges by the tile
of their source: a query's search region is a set of tiles, so its nodes and edges are slices
of these arrays, gathered without sorting or testing the rest of the map (`region`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from common.geo import EARTH_RADIUS_M

TILE_LAT_DEG = 0.01  # 1.1 km
TILE_LON_DEG = 0.015  # 1.1 km at 48° N, 0.6 km at 67° N: only the count of tiles per region changes


def to_xyz(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Earth-centred coordinates in metres: chord distance equals straight-line distance."""
    phi, lam = np.radians(lat), np.radians(lon)
    cos_phi = np.cos(phi)
    return np.column_stack([cos_phi * np.cos(lam), cos_phi * np.sin(lam), np.sin(phi)]) * EARTH_RADIUS_M


@dataclass(frozen=True)
class NodeTiles:
    node_tile: np.ndarray  # node -> its tile
    node_ord: np.ndarray  # node -> its place in `nodes`
    nodes: np.ndarray  # node ids ordered by tile, then id; tile ids follow rows of latitude
    ptr: np.ndarray  # tile t's nodes are nodes[ptr[t]:ptr[t + 1]]
    center: np.ndarray  # (tiles, 3) mean position of each tile's nodes (xyz metres)
    radius: np.ndarray  # the farthest node of the tile from its centre
    tree: cKDTree  # of the centres
    max_radius: float


def node_tiles(lat: np.ndarray, lon: np.ndarray) -> NodeTiles:
    """Node ids are int32 here (as in the CSR graphs): 12 bytes a node, with the int32 tile."""
    xyz = to_xyz(lat, lon)
    keys = np.floor(lat / TILE_LAT_DEG).astype(np.int64) * 100_000 + np.floor(lon / TILE_LON_DEG).astype(np.int64)
    _, tile = np.unique(keys, return_inverse=True)
    order = np.argsort(tile, kind="stable")
    counts = np.bincount(tile)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    node_ord = np.empty(len(tile), dtype=np.int32)
    node_ord[order] = np.arange(len(tile))
    center = np.zeros((len(counts), 3))
    np.add.at(center, tile, xyz)
    center /= np.maximum(counts, 1)[:, None]
    radius = np.zeros(len(counts))
    np.maximum.at(radius, tile, np.linalg.norm(xyz - center[tile], axis=1))
    return NodeTiles(tile.astype(np.int32), node_ord, order.astype(np.int32), ptr, center, radius,
                     cKDTree(center), float(radius.max(initial=0.0)))  # fmt: skip


@dataclass(frozen=True)
class EdgeTiles:
    """One vehicle graph's edges ordered by the tile of their source node, then source id: the
    edge positions and where their ends stand in `NodeTiles.nodes` (int32: 12 bytes an edge)."""

    positions: np.ndarray
    ptr: np.ndarray  # tile t's edges are positions[ptr[t]:ptr[t + 1]]
    src_ord: np.ndarray
    dst_ord: np.ndarray


def edge_tiles(tiles: NodeTiles, indptr: np.ndarray, dst: np.ndarray) -> EdgeTiles:
    source = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    edge_tile = tiles.node_tile[source]
    order = np.argsort(edge_tile, kind="stable")  # CSR positions ascend with the source id
    ptr = np.concatenate([[0], np.cumsum(np.bincount(edge_tile, minlength=len(tiles.ptr) - 1))])
    return EdgeTiles(order.astype(np.int32), ptr, tiles.node_ord[source[order]].astype(np.int32),
                     tiles.node_ord[dst[order]].astype(np.int32))  # fmt: skip


@dataclass(frozen=True)
class Runs:
    """Chosen tiles as runs of consecutive ids (a row of latitude each, mostly): their nodes are
    nodes[start[i]:end[i]] and get local ids from local[i] on; edges[i] their edges' range."""

    start: np.ndarray
    end: np.ndarray
    local: np.ndarray
    edge_start: np.ndarray
    edge_end: np.ndarray

    def locals(self, ords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The local ids of nodes by their place in `nodes`, and which of them are chosen."""
        slot = np.maximum(np.searchsorted(self.start, ords, side="right") - 1, 0)
        inside = (ords >= self.start[slot]) & (ords < self.end[slot])
        return ords - self.start[slot] + self.local[slot], inside


def runs_of(tiles: NodeTiles, edges: EdgeTiles, chosen: np.ndarray) -> Runs:
    """`chosen`: sorted distinct tile ids."""
    cut = np.flatnonzero(np.diff(chosen) != 1) + 1
    first, last = chosen[np.concatenate([[0], cut])], chosen[np.concatenate([cut - 1, [len(chosen) - 1]])]
    start, end = tiles.ptr[first], tiles.ptr[last + 1]
    return Runs(start, end, np.cumsum(end - start) - (end - start), edges.ptr[first], edges.ptr[last + 1])


def concat_runs(values: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    return np.concatenate([values[a:b] for a, b in zip(start.tolist(), end.tolist(), strict=True)])


def sorted_lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The value of each `wanted` key among the sorted `keys`; inf for the keys not among them."""
    if not len(keys):
        return np.full(len(wanted), np.inf)
    index = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[index] == wanted, values[index], np.inf)


def spans(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Every index of the ranges start[i]:end[i], in order: no array as long as what they index."""
    count = np.asarray(end, dtype=np.int64) - np.asarray(start, dtype=np.int64)
    if not len(count):
        return np.empty(0, dtype=np.int64)
    first = np.repeat(np.asarray(start, dtype=np.int64) - (np.cumsum(count) - count), count)
    return first + np.arange(int(count.sum()))
