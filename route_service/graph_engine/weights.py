"""One query's edge weights: a vehicle graph's cached vector with a few positions overridden.

A query opens the emergency edges near its start and destination and closes the pieces of its
avoid areas or a truck's limits: a handful of positions. Copying the whole vector for them was
work proportional to the map on every request (bench/scale.py: 10 copies of Heidelberg), so the
overrides are kept apart, sorted, and looked up for the edges a search actually reads.
"""

from __future__ import annotations

from typing import overload

import numpy as np

NO_POSITIONS = np.empty(0, dtype=np.int64)


class Weights:
    """`base` (never written) with `values` at the sorted, distinct `positions`."""

    def __init__(self, base: np.ndarray, positions: np.ndarray = NO_POSITIONS,
                 values: np.ndarray | None = None) -> None:  # fmt: skip
        self.base = base
        self.positions = np.asarray(positions, dtype=np.int64)
        self.values = np.empty(0) if values is None else np.asarray(values, dtype=np.float64)
        self._dense: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.base)

    @overload
    def __getitem__(self, where: int) -> float: ...
    @overload
    def __getitem__(self, where: np.ndarray) -> np.ndarray: ...
    def __getitem__(self, where: int | np.ndarray) -> float | np.ndarray:
        if isinstance(where, np.ndarray):
            return self.take(where)
        return float(self.take(np.array([where], dtype=np.int64))[0])

    def take(self, where: np.ndarray) -> np.ndarray:
        """The weights at the positions `where` (a new array): O(len(where) · log overrides)."""
        if self._dense is not None:  # a search made the vector already
            return np.asarray(self._dense[where], dtype=np.float64)
        found = np.asarray(self.base[where], dtype=np.float64)
        if len(self.positions) and len(found):
            slot = np.minimum(np.searchsorted(self.positions, where), len(self.positions) - 1)
            hit = self.positions[slot] == where
            found[hit] = self.values[slot[hit]]
        return found

    def dense(self) -> np.ndarray:
        """Every weight as one vector: the base itself without overrides, else one copy (kept)."""
        if not len(self.positions):
            return self.base
        if self._dense is None:
            dense = self.base.copy()
            dense[self.positions] = self.values
            self._dense = dense
        return self._dense

    def with_values(self, positions: np.ndarray, values: np.ndarray | float) -> Weights:
        """These weights with more overrides; the new ones win where both set a position."""
        positions = np.asarray(positions, dtype=np.int64)
        values = np.broadcast_to(np.asarray(values, dtype=np.float64), positions.shape)
        if not len(positions):
            return self
        merged_pos = np.concatenate([positions, self.positions])
        merged_val = np.concatenate([values, self.values])
        # np.unique keeps the first occurrence of each position: the new value
        unique, first = np.unique(merged_pos, return_index=True)
        return Weights(self.base, unique, merged_val[first])
