"""Where the map has data: a grid of cells near any road point, to clip isochrones with.

An isochrone's area reaches the snapping radius (1 km for a car) beyond the roads it reaches,
since a point that far from a reached road routes from it. Past the loaded data, over the sea or
beyond the extract's edge, that padding claims land the map knows nothing of (issue 32). The
mask keeps the cells within about one cell of a road geometry point (any road, reached or not):
MASK_CELL_DEG (about 220 m north-south), coarser on a very large map so the grid stays at most
MAX_MASK_CELLS. Fields and forests between roads stay inside; the open sea and the world past
the extract do not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import binary_dilation, binary_erosion, binary_fill_holes

MASK_CELL_DEG = 0.002
MAX_MASK_CELLS = 16_000_000  # 16 MB of booleans: a country's box at a coarser cell
# A point within this many cells of a cell without data lies at the data's edge (about 450 m).
EDGE_CELLS = 2


@dataclass(frozen=True)
class DataMask:
    min_lat: float
    min_lon: float
    cell_deg: float
    cells: np.ndarray  # bool, [row (lat), column (lon)]

    @classmethod
    def of_points(cls, lat: np.ndarray, lon: np.ndarray) -> DataMask:
        """The mask of road points `lat`, `lon`: each point's cell and its 8 neighbours."""
        if not len(lat):
            return cls(0.0, 0.0, MASK_CELL_DEG, np.zeros((0, 0), dtype=bool))
        span_lat, span_lon = float(lat.max() - lat.min()), float(lon.max() - lon.min())
        cell = max(MASK_CELL_DEG, math.sqrt(span_lat * span_lon / MAX_MASK_CELLS))
        min_lat, min_lon = float(lat.min()) - cell, float(lon.min()) - cell
        rows = ((lat - min_lat) / cell).astype(np.int64)
        cols = ((lon - min_lon) / cell).astype(np.int64)
        cells = np.zeros((int(rows.max()) + 2, int(cols.max()) + 2), dtype=bool)
        cells[rows, cols] = True
        return cls(min_lat, min_lon, cell, binary_dilation(cells, structure=np.ones((3, 3), dtype=bool)))

    def contains(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Whether each point lies in a cell with data."""
        rows = np.floor((np.asarray(lat) - self.min_lat) / self.cell_deg).astype(np.int64)
        cols = np.floor((np.asarray(lon) - self.min_lon) / self.cell_deg).astype(np.int64)
        inside = (rows >= 0) & (rows < self.cells.shape[0]) & (cols >= 0) & (cols < self.cells.shape[1])
        found = np.zeros(len(rows), dtype=bool)
        found[inside] = self.cells[rows[inside], cols[inside]]
        return found

    def near_edge(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Whether each point lies within EDGE_CELLS cells of the data's outer edge (the map's
        border, a coast): its cell is not in the mask, its holes filled (fields and lakes between
        roads are no edge: Heidelberg's Römerstraße ends by one), eroded that far."""
        filled = binary_fill_holes(self.cells)
        interior = binary_erosion(filled, structure=np.ones((3, 3), dtype=bool), iterations=EDGE_CELLS)
        return self.contains(lat, lon) & ~DataMask(self.min_lat, self.min_lon, self.cell_deg, interior).contains(lat, lon)
