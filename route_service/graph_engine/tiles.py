"""The junctions grouped by map tiles (about 1 km square), and each vehicle's edges by the tile
of their source: a query's search region is a set of tiles, so its nodes and edges are slices
of these arrays, gathered without sorting or testing the rest of the map (`region`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

TILE_LAT_DEG = 0.01  # 1.1 km
TILE_LON_DEG = 0.015  # 1.1 km at 48° N, 0.6 km at 67° N: only the count of tiles per region changes


@dataclass(frozen=True)
class NodeTiles:
    node_tile: np.ndarray  # node -> its tile
    node_rank: np.ndarray  # node -> its place among its tile's nodes
    nodes: np.ndarray  # node ids ordered by tile, then id
    ptr: np.ndarray  # tile t's nodes are nodes[ptr[t]:ptr[t + 1]]
    center: np.ndarray  # (tiles, 3) mean position of each tile's nodes (xyz metres)
    radius: np.ndarray  # the farthest node of the tile from its centre
    tree: cKDTree  # of the centres
    max_radius: float


def node_tiles(lat: np.ndarray, lon: np.ndarray, xyz: np.ndarray) -> NodeTiles:
    keys = np.floor(lat / TILE_LAT_DEG).astype(np.int64) * 100_000 + np.floor(lon / TILE_LON_DEG).astype(np.int64)
    _, tile = np.unique(keys, return_inverse=True)
    order = np.argsort(tile, kind="stable")
    counts = np.bincount(tile)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    rank = np.empty(len(tile), dtype=np.int64)
    rank[order] = np.arange(len(tile)) - ptr[tile[order]]
    center = np.zeros((len(counts), 3))
    np.add.at(center, tile, xyz)
    center /= np.maximum(counts, 1)[:, None]
    radius = np.zeros(len(counts))
    np.maximum.at(radius, tile, np.linalg.norm(xyz - center[tile], axis=1))
    return NodeTiles(tile.astype(np.int64), rank, order.astype(np.int64), ptr, center, radius,
                     cKDTree(center), float(radius.max(initial=0.0)))  # fmt: skip


@dataclass(frozen=True)
class EdgeTiles:
    """One vehicle graph's edge positions ordered by the tile of their source node, then source id."""

    positions: np.ndarray
    ptr: np.ndarray  # tile t's edges are positions[ptr[t]:ptr[t + 1]]
    source: np.ndarray  # edge position -> its source node


def edge_tiles(tiles: NodeTiles, indptr: np.ndarray) -> EdgeTiles:
    source = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    edge_tile = tiles.node_tile[source]
    order = np.argsort(edge_tile, kind="stable")  # CSR positions ascend with the source id
    ptr = np.concatenate([[0], np.cumsum(np.bincount(edge_tile, minlength=len(tiles.ptr) - 1))])
    return EdgeTiles(order.astype(np.int64), ptr, source.astype(np.int64))


def gather(values: np.ndarray, ptr: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """values[ptr[t]:ptr[t + 1]] for each chosen t, concatenated; and each slice's length."""
    first = ptr[chosen]
    count = ptr[chosen + 1] - first
    offset = np.repeat(first - (np.cumsum(count) - count), count)
    return values[offset + np.arange(int(count.sum()))], count
