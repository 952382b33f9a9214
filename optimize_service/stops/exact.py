"""Exact shortest tours for small stop sets: Held-Karp dynamic programming with numpy.

O(2^k * k²) for k stops between the fixed ends: 11 free stops take ~2 k subsets and a few
tens of milliseconds, so every request with at most EXACT_MAX_STOPS stops is solved
optimally, whatever the asymmetry of the matrix.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

EXACT_MAX_STOPS = 12


def held_karp(costs: np.ndarray, start: int, end: int | None) -> tuple[list[int], float]:
    """The cheapest order visiting every node once, beginning at `start` and ending at `end`
    (None: anywhere; == start: back at the start). Returns (order without the return, cost)."""
    n = len(costs)
    free = [i for i in range(n) if i != start and i != end]
    tail = [] if end is None or end == start else [end]
    if not free:
        order = [start, *tail]
        return order, tour_cost(costs, order, end == start)
    best, parent = subset_table(costs.astype(np.float64), start, free)
    full = (1 << len(free)) - 1
    closing = np.zeros(len(free)) if end is None else costs[free, end].astype(np.float64)
    last = int(np.argmin(best[full] + closing))
    order = [start, *[free[j] for j in backtrack(parent, full, last)], *tail]
    return order, tour_cost(costs, order, end == start)


def subset_table(costs: np.ndarray, start: int, free: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """best[mask, j]: cheapest path from `start` through the free nodes in `mask`, ending at
    free node j; parent[mask, j]: the free node before j on that path (-1: the start)."""
    k = len(free)
    inner = costs[np.ix_(free, free)]
    best = np.full((1 << k, k), np.inf)
    parent = np.full((1 << k, k), -1, dtype=np.int64)
    bits = 1 << np.arange(k)
    best[bits, np.arange(k)] = costs[start, free]
    for mask in range(1, 1 << k):
        row = best[mask]
        if not np.isfinite(row).any():
            continue
        # Extend every path ending in `mask` by one node j outside it (masks only grow, so
        # each row is final when it is read).
        candidates = row[:, None] + inner
        via = np.argmin(candidates, axis=0)
        cost = candidates[via, np.arange(k)]
        outside = np.flatnonzero((mask & bits) == 0)
        targets = mask | bits[outside]
        better = cost[outside] < best[targets, outside]
        best[targets[better], outside[better]] = cost[outside][better]
        parent[targets[better], outside[better]] = via[outside][better]
    return best, parent


def backtrack(parent: np.ndarray, mask: int, last: int) -> list[int]:
    path = [last]
    while True:
        previous = int(parent[mask, last])
        mask &= ~(1 << last)
        if previous < 0:
            return path[::-1]
        path.append(previous)
        last = previous


def tour_cost(costs: np.ndarray, order: list[int], round_trip: bool) -> float:
    stops = [*order, order[0]] if round_trip and len(order) > 1 else order
    return float(sum(costs[a, b] for a, b in pairwise(stops)))
