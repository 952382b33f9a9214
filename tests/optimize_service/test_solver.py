"""The solver: Held-Karp against brute force, OR-Tools against Held-Karp, every kind of tour."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from optimize_service.stops import solver
from optimize_service.stops.exact import EXACT_MAX_STOPS, held_karp, tour_cost
from optimize_service.stops.solver import (
    CHEAPEST_ARC_MAX_STOPS,
    CHRISTOFIDES,
    LOCAL_CHEAPEST_INSERTION,
    MAX_RESTARTS,
    MIXED_ENGINES_MAX_STOPS,
    OR_TOOLS,
    PATH_CHEAPEST_ARC,
    PYVRP,
    RESTART_SECONDS,
    SAME_START_MAX_STOPS,
    VROOM_METHOD,
    VROOM_THEN_OR_TOOLS,
    Search,
    TourProblem,
    default_time_limit,
    first_tour,
    guided_local_search,
    restarts,
    search_parameters,
    searches,
    solve,
)
from optimize_service.stops.vroom_search import vroom_order


def random_matrix(rng: np.random.Generator, n: int, *, symmetric: bool) -> np.ndarray:
    """Road-like: distances between random points, stretched by a random detour factor that
    differs per direction when asymmetric (one-way streets)."""
    points = rng.uniform(0, 10_000, (n, 2))
    straight = np.linalg.norm(points[:, None] - points[None], axis=-1)
    detour = rng.uniform(1.0, 1.6, (n, n))
    if symmetric:
        detour = (detour + detour.T) / 2
    costs = np.rint(straight * detour)
    np.fill_diagonal(costs, 0)
    return costs


def brute_force(costs: np.ndarray, start: int, end: int | None) -> float:
    middle = [i for i in range(len(costs)) if i not in (start, end)]
    tail = [] if end is None or end == start else [end]
    return min(tour_cost(costs, [start, *p, *tail], end == start) for p in itertools.permutations(middle))


def ends_for(case: str, n: int, rng: np.random.Generator) -> tuple[int, int | None]:
    start = int(rng.integers(n))
    if case == "open":
        return start, None
    if case == "round trip":
        return start, start
    return start, int(rng.choice([i for i in range(n) if i != start]))


def assert_valid(order: list[int], n: int, start: int, end: int | None) -> None:
    assert sorted(order) == list(range(n))
    assert order[0] == start
    if end is not None and end != start:
        assert order[-1] == end


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_held_karp_matches_brute_force(symmetric: bool, case: str) -> None:
    rng = np.random.default_rng(hash((symmetric, case)) % 2**32)
    for _ in range(25):
        n = int(rng.integers(3, 9))
        costs = random_matrix(rng, n, symmetric=symmetric)
        start, end = ends_for(case, n, rng)
        order, cost = held_karp(costs, start, end)
        assert_valid(order, n, start, end)
        assert cost == brute_force(costs, start, end)
        assert tour_cost(costs, order, end == start) == cost


def test_held_karp_uses_the_direction_of_one_way_costs() -> None:
    # 0→1→2→3 is cheap one way round, expensive the other: an exact solver must see it.
    costs = np.full((4, 4), 100.0)
    np.fill_diagonal(costs, 0)
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 0)):
        costs[a, b] = 1
    assert held_karp(costs, 0, 0) == ([0, 1, 2, 3], 4.0)
    assert held_karp(costs, 0, None) == ([0, 1, 2, 3], 3.0)
    assert held_karp(costs, 0, 3) == ([0, 1, 2, 3], 3.0)


def test_tiny_tours() -> None:
    assert held_karp(np.zeros((1, 1)), 0, None) == ([0], 0.0)
    assert held_karp(np.zeros((1, 1)), 0, 0) == ([0], 0.0)
    costs = np.array([[0.0, 5.0], [7.0, 0.0]])
    assert held_karp(costs, 1, None) == ([1, 0], 7.0)
    assert held_karp(costs, 0, 0) == ([0, 1], 12.0)
    assert solve(TourProblem(costs / 10, 1, 1)).order == [1, 0]


@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_solve_is_exact_up_to_the_threshold(case: str) -> None:
    rng = np.random.default_rng(7)
    for n in (3, 6, 9, EXACT_MAX_STOPS):
        durations = random_matrix(rng, n, symmetric=False) / 10
        start, end = ends_for(case, n, rng)
        tour = solve(TourProblem(durations, start, end))
        assert tour.optimal and tour.method == "held-karp"
        assert_valid(tour.order, n, start, end)
        if n <= 9:
            assert tour.duration_s == pytest.approx(brute_force(durations, start, end), abs=0.05)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_guided_local_search_finds_the_exact_optimum_of_small_instances(symmetric: bool, case: str) -> None:
    rng = np.random.default_rng(11 if symmetric else 12)
    for n in (8, EXACT_MAX_STOPS + 1):
        costs = random_matrix(rng, n, symmetric=symmetric).astype(np.int64)
        start, end = ends_for(case, n, rng)
        order = guided_local_search(costs, start, end, time_limit_s=0.3)
        assert_valid(order, n, start, end)
        _, optimum = held_karp(costs, start, end)
        assert tour_cost(costs, order, end == start) <= optimum * 1.01


def test_larger_sets_get_a_timed_search_pyvrp_unless_told() -> None:
    rng = np.random.default_rng(3)
    durations = random_matrix(rng, 40, symmetric=False) / 10
    for search, method in ((None, "pyvrp-ils"), (Search(OR_TOOLS), "or-tools-gls")):
        tour = solve(TourProblem(durations, 5, None, time_limit_s=0.2), search)
        assert tour.method == method and not tour.optimal and tour.time_limit_s == 0.2
        assert_valid(tour.order, 40, 5, None)
        assert tour.duration_s == pytest.approx(tour_cost(durations, tour.order, False), abs=0.5)
    assert default_time_limit(100) < default_time_limit(300) <= 3.0


def test_searches_by_size() -> None:
    # Small sets: PyVRP from its own random start (best alone), and beside it VROOM then
    # OR-Tools' bandit search from the cheapest arc (PyVRP's weak cases are their good ones).
    mixed = [Search(PYVRP, None), Search(VROOM_THEN_OR_TOOLS, PATH_CHEAPEST_ARC, bandit=True)]
    assert searches(13) == searches(MIXED_ENGINES_MAX_STOPS) == mixed
    # Then two PyVRP seeds from the random start: its results vary most with the seed.
    seeds = [Search(PYVRP, None), Search(PYVRP, None, seed=1)]
    assert searches(MIXED_ENGINES_MAX_STOPS + 1) == searches(CHEAPEST_ARC_MAX_STOPS) == seeds
    # Larger sets: PyVRP from OR-Tools' insertion tour (from its own start it falls 1-12 %
    # behind at 200-1000 stops in seconds), with a second seed, and above SAME_START_MAX_STOPS
    # from Christofides' tour for the second.
    insertion = [Search(PYVRP, LOCAL_CHEAPEST_INSERTION), Search(PYVRP, LOCAL_CHEAPEST_INSERTION, seed=1)]
    assert searches(CHEAPEST_ARC_MAX_STOPS + 1) == searches(SAME_START_MAX_STOPS) == insertion
    large = [Search(PYVRP, LOCAL_CHEAPEST_INSERTION), Search(PYVRP, CHRISTOFIDES, seed=1)]
    assert searches(SAME_START_MAX_STOPS + 1) == searches(1000) == large
    for stops in (13, 100, 200, 1000):
        assert len(set(searches(stops))) == 2, "two different searches for the two cores"


@pytest.mark.parametrize("strategy", [LOCAL_CHEAPEST_INSERTION, CHRISTOFIDES])
@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_first_tours_are_tours_of_every_kind(strategy: int, case: str) -> None:
    rng = np.random.default_rng(17)
    costs = random_matrix(rng, 60, symmetric=False).astype(np.int64)
    start, end = ends_for(case, 60, rng)
    assert_valid(first_tour(costs, start, end, strategy), 60, start, end)


def test_a_large_set_starts_pyvrp_from_the_first_tour(monkeypatch: pytest.MonkeyPatch) -> None:
    # The warm start is what makes PyVRP good above 150 stops: it must get the first tour.
    given: list[list[int] | None] = []
    real = solver.iterated_local_search

    def recording(
        costs: np.ndarray, start: int, end: int | None, time_limit_s: float, seed: int = 0,
        initial: list[int] | None = None,
    ) -> list[int]:  # fmt: skip
        given.append(initial)
        return real(costs, start, end, time_limit_s, seed=seed, initial=initial)

    monkeypatch.setattr(solver, "iterated_local_search", recording)
    durations = random_matrix(np.random.default_rng(8), 40, symmetric=False) / 10
    costs = np.rint(durations * 10).astype(np.int64)
    for search in searches(SAME_START_MAX_STOPS + 1):
        tour = solve(TourProblem(durations, 3, None, time_limit_s=0.2), search)
        assert tour.method == "pyvrp-ils"
        assert_valid(tour.order, 40, 3, None)
        assert search.first_solution is not None
        assert given[-1] == first_tour(costs, 3, None, search.first_solution)
    solve(TourProblem(durations, 3, None, time_limit_s=0.1), searches(CHEAPEST_ARC_MAX_STOPS)[0])
    assert given[-1] is None


def test_search_parameters_honour_the_search() -> None:
    params = search_parameters(0.25, Search(OR_TOOLS, PATH_CHEAPEST_ARC, bandit=True, penalty_weight=0.3))
    assert params.first_solution_strategy == PATH_CHEAPEST_ARC
    assert params.use_multi_armed_bandit_concatenate_operators
    assert params.guided_local_search_lambda_coefficient == pytest.approx(0.3)
    assert params.time_limit.ToMilliseconds() == 250
    plain = search_parameters(1.0, Search())
    assert plain.first_solution_strategy == CHRISTOFIDES and not plain.use_multi_armed_bandit_concatenate_operators


def test_solve_runs_the_given_search(monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[Search] = []
    real = solver.run_search

    def recording(costs: np.ndarray, start: int, end: int | None, time_limit_s: float, search: Search) -> list[int]:
        used.append(search)
        return real(costs, start, end, time_limit_s, search)

    monkeypatch.setattr(solver, "run_search", recording)
    durations = random_matrix(np.random.default_rng(5), 30, symmetric=False) / 10
    chosen = Search(OR_TOOLS, PATH_CHEAPEST_ARC, bandit=True)
    solve(TourProblem(durations, 0, None, time_limit_s=0.1), chosen)
    solve(TourProblem(durations, 0, None, time_limit_s=0.1))
    assert used == [chosen, searches(30)[0]]


def test_default_time_limits_stay_below_the_request_goals_and_grow_with_the_stops() -> None:
    """Whether a whole request meets its goal is measured, not asserted here (`python -m bench
    optimize_wall`); here: the search alone stays under the goal (1, 2, 5, 10 s at 100, 200,
    500, 1000 stops), has a floor for small sets, and never shrinks as stops are added."""
    goal = {100: 1.0, 200: 2.0, 500: 5.0, 1000: 10.0}
    for stops in goal:
        assert default_time_limit(stops) < goal[stops]
    assert default_time_limit(25) == default_time_limit(62) == 0.5
    limits = [default_time_limit(n) for n in range(1, 1201)]
    assert limits == sorted(limits), "more stops never get less time"
    assert default_time_limit(1200) == default_time_limit(1000)


@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_vroom_then_or_tools_gives_the_shorter_tour_of_the_two(case: str) -> None:
    rng = np.random.default_rng(23)
    durations = random_matrix(rng, 40, symmetric=False) / 10
    start, end = ends_for(case, 40, rng)
    search = searches(40)[1]
    assert search.engine == VROOM_THEN_OR_TOOLS
    tour = solve(TourProblem(durations, start, end, time_limit_s=0.3), search)
    assert_valid(tour.order, 40, start, end)
    assert tour.method in (VROOM_METHOD, "or-tools-gls") and not tour.optimal
    costs = np.rint(durations * 10).astype(np.int64)
    gls = guided_local_search(costs, start, end, 0.18, Search(OR_TOOLS, PATH_CHEAPEST_ARC, bandit=True))
    vroom = vroom_order(costs, start, end, 0.12)
    best = min(tour_cost(durations, order, end == start) for order in (gls, vroom))
    assert tour.duration_s <= best * 1.02, "at least as good as either alone (searches vary a little)"


def test_vroom_alone_orders_every_kind_of_tour() -> None:
    rng = np.random.default_rng(5)
    costs = random_matrix(rng, 30, symmetric=False).astype(np.int64)
    for case in ("open", "fixed destination", "round trip"):
        start, end = ends_for(case, 30, rng)
        assert_valid(vroom_order(costs, start, end, 0.1), 30, start, end)


def test_restarts_share_the_limit_in_measured_steps() -> None:
    assert restarts(0.05) == restarts(RESTART_SECONDS - 0.01) == 1, "a short search is one search"
    assert restarts(default_time_limit(100)) == 4
    assert restarts(60.0) == MAX_RESTARTS
    steps = [restarts(t / 100) for t in range(1, 3001)]
    assert steps == sorted(steps), "more time never means fewer restarts"


@pytest.mark.parametrize("case", ["open", "fixed destination", "round trip"])
def test_a_random_start_search_restarts_and_keeps_the_shortest_tour(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    # Every restart searches for real (so the limit is used as in service), but only the middle
    # one's tour is answered; the others answer the stops in index order, far longer.
    calls: list[tuple[int, float]] = []
    answered: list[list[int]] = []
    real = solver.iterated_local_search

    def recording(
        costs: np.ndarray, start: int, end: int | None, time_limit_s: float, seed: int = 0,
        initial: list[int] | None = None,
    ) -> list[int]:  # fmt: skip
        assert initial is None
        calls.append((seed, time_limit_s))
        searched = real(costs, start, end, time_limit_s, seed=seed)
        inner = [i for i in range(len(costs)) if i not in (start, end)]
        naive = [start, *inner, *([end] if end is not None and end != start else [])]
        answered.append(searched if len(calls) == 2 else naive)
        return answered[-1]

    monkeypatch.setattr(solver, "iterated_local_search", recording)
    rng = np.random.default_rng(29)
    durations = random_matrix(rng, 60, symmetric=False) / 10
    start, end = ends_for(case, 60, rng)
    limit = 3 * RESTART_SECONDS
    for search in searches(CHEAPEST_ARC_MAX_STOPS):
        calls.clear()
        answered.clear()
        tour = solve(TourProblem(durations, start, end, time_limit_s=limit), search)
        assert [seed for seed, _ in calls] == [search.seed, search.seed + 2, search.seed + 4]
        assert sum(share for _, share in calls) <= limit + 0.05, "the restarts share one limit"
        assert_valid(tour.order, 60, start, end)
        assert tour.order == answered[1], "the shortest tour, not the first or the last"
        assert tour.duration_s == pytest.approx(tour_cost(durations, answered[1], end == start), abs=0.5)
