"""Two searches per request: a lane runs them at once and keeps the shorter tour."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from common.pools import RestartingPool
from optimize_service.scheduler import Lane, parallel_searches
from optimize_service.stops import planner
from optimize_service.stops.exact import EXACT_MAX_STOPS
from optimize_service.stops.planner import solve_in
from optimize_service.stops.solver import Search, Tour, TourProblem, searches


def fake_solve(calls: list[Search | None]) -> Any:
    """A solver whose tour length tells which search made it: the second search is shorter."""

    def solve(problem: TourProblem, search: Search | None = None) -> Tour:
        calls.append(search)
        n = len(problem.durations_s)
        rank = searches(n).index(search) if search is not None else 0
        return Tour(list(range(n)), 100.0 - rank, f"search {rank}", optimal=False)

    return solve


def problem(stops: int) -> TourProblem:
    return TourProblem(np.ones((stops, stops)), 0, None)


def lane(pool: ThreadPoolExecutor, processes: int) -> Lane:
    return Lane("large", RestartingPool("large", lambda: pool), processes, queue_size=None, queue_seconds=60)


async def run(lane: Lane, problem: TourProblem) -> Tour:
    return await solve_in(lane, lane.admit(1.0), problem)


@pytest.mark.parametrize("stops", [50, 500])
async def test_two_searches_run_and_the_shorter_tour_wins(monkeypatch: pytest.MonkeyPatch, stops: int) -> None:
    calls: list[Search | None] = []
    monkeypatch.setattr(planner, "solve", fake_solve(calls))
    with ThreadPoolExecutor(max_workers=2) as pool:
        tour = await run(lane(pool, 2), problem(stops))
    assert sorted(map(repr, calls)) == sorted(map(repr, searches(stops)))
    assert tour.method == "search 1" and tour.duration_s == 99.0


async def test_one_worker_runs_the_best_single_search(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Search | None] = []
    monkeypatch.setattr(planner, "solve", fake_solve(calls))
    with ThreadPoolExecutor(max_workers=1) as pool:
        tour = await run(lane(pool, 1), problem(50))
    assert calls == [None] and tour.method == "search 0"


async def test_an_exact_tour_is_solved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Search | None] = []
    monkeypatch.setattr(planner, "solve", fake_solve(calls))
    with ThreadPoolExecutor(max_workers=2) as pool:
        await run(lane(pool, 2), problem(EXACT_MAX_STOPS))
    assert calls == [None]


@pytest.mark.parametrize(("processes", "expected"), [(0, 1), (1, 1), (2, 2), (4, 2)])
def test_parallel_searches_never_exceed_the_workers(processes: int, expected: int) -> None:
    assert parallel_searches(processes) == expected
