"""PyVRP's iterated local search as a tour solver: every kind of tour, checked against the
exact optimum, and the depot layout it is given."""

from __future__ import annotations

import numpy as np
import pytest

from optimize_service.stops.exact import EXACT_MAX_STOPS, held_karp, tour_cost
from optimize_service.stops.ils import UNUSED_ARC, iterated_local_search, problem_matrix
from tests.optimize_service.test_solver import assert_valid, ends_for, random_matrix


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_finds_the_exact_optimum_of_small_instances(symmetric: bool, case: str) -> None:
    rng = np.random.default_rng(21 if symmetric else 22)
    for n in (3, 8, EXACT_MAX_STOPS + 1):
        costs = random_matrix(rng, n, symmetric=symmetric).astype(np.int64)
        start, end = ends_for(case, n, rng)
        order = iterated_local_search(costs, start, end, time_limit_s=0.3)
        assert_valid(order, n, start, end)
        _, optimum = held_karp(costs, start, end)
        assert tour_cost(costs, order, end == start) == optimum


def test_one_way_costs_are_read_in_their_direction() -> None:
    # Going 0 → 1 → 2 costs 2; any other order of an open tour from 0 costs at least 100.
    costs = np.full((3, 3), 100, dtype=np.int64)
    np.fill_diagonal(costs, 0)
    costs[0, 1] = costs[1, 2] = 1
    assert iterated_local_search(costs, 0, None, time_limit_s=0.1) == [0, 1, 2]
    assert iterated_local_search(costs.T.copy(), 2, None, time_limit_s=0.1) == [2, 1, 0]


def test_open_tour_ends_at_an_extra_depot_reached_for_free() -> None:
    costs = np.arange(16, dtype=np.int64).reshape(4, 4)
    matrix, end_depot = problem_matrix(costs, [2], [0, 1, 3], open_tour=True)
    assert end_depot == 1 and matrix.shape == (5, 5)
    assert (matrix[:, 1] == 0).all() and (np.diag(matrix) == 0).all()
    assert (matrix[1, [0, 2, 3, 4]] == UNUSED_ARC).all()
    # Locations: 0 = stop 2 (start), 2.. = stops 0, 1, 3; costs keep their direction.
    assert matrix[0, 2] == costs[2, 0] and matrix[2, 0] == costs[0, 2] and matrix[3, 4] == costs[1, 3]


def test_fixed_destination_and_round_trip_depots() -> None:
    costs = np.arange(16, dtype=np.int64).reshape(4, 4)
    matrix, end_depot = problem_matrix(costs, [1, 3], [0, 2], open_tour=False)
    assert end_depot == 1 and matrix[0, 1] == costs[1, 3] and matrix[2, 3] == costs[0, 2]
    matrix, end_depot = problem_matrix(costs, [1], [0, 2, 3], open_tour=False)
    assert end_depot == 0 and matrix.shape == (4, 4) and (np.diag(matrix) == 0).all()


@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_a_warm_start_is_kept_or_improved(case: str) -> None:
    rng = np.random.default_rng(23)
    costs = random_matrix(rng, 30, symmetric=False).astype(np.int64)
    start, end = ends_for(case, 30, rng)
    middle = [i for i in range(30) if i not in (start, end)]
    initial = [start, *middle, *([end] if end is not None and end != start else [])]
    order = iterated_local_search(costs, start, end, time_limit_s=0.2, initial=initial)
    assert_valid(order, 30, start, end)
    assert tour_cost(costs, order, end == start) <= tour_cost(costs, initial, end == start)
