"""Stop order: exact for small sets, two heuristic searches at once for the rest (no aiohttp).

Runs in worker processes (see app.py): the solvers hold the GIL for their whole search, which
would stall the service's event loop. Everything here is plain data in, plain data out.

Why these searches (measured on the bench's road matrices, docs/decisions.md):
- PyVRP's iterated local search (`ils.py`) is the best single search at 100 stops: in 0.7 s
  it matched (median +0.0 % on 7 matrices) what OR-Tools' guided local search finds in 30 s.
  It has bad instances, so another search runs beside it, one per core, and the shorter tour
  wins: up to 75 stops VROOM then OR-Tools, up to 150 PyVRP with another seed. From a random
  start PyVRP settles within tenths of a second, so each of these searches restarts it with
  new seeds while its time lasts (`restarted_search`).
- From its own random start PyVRP falls behind as the set grows (+4 to +12 % at 1000 stops
  in 6 s); started from OR-Tools' insertion tour (60 ms) it is the best search there is at
  200-1000 stops (1-3 % below a 20 s OR-Tools or PyVRP search). Above 150 stops both cores
  run it, from two different first tours.
- Both search until their time limit, so the limit grows with the number of stops
  (`default_time_limit`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from ortools.constraint_solver import pywrapcp, routing_enums_pb2

from optimize_service.stops.exact import EXACT_MAX_STOPS, held_karp, tour_cost
from optimize_service.stops.ils import iterated_local_search
from optimize_service.time_limits import interpolated_seconds

# Durations are solved in tenths of a second: OR-Tools needs integers, OSRM gives 0.1 s.
COST_SCALE = 10
CHRISTOFIDES = routing_enums_pb2.FirstSolutionStrategy.CHRISTOFIDES
PATH_CHEAPEST_ARC = routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
# Up to this many stops PyVRP starts from its own random tour; above, from OR-Tools' first
# tours. Measured at 100 stops (random start +0.43 % worst, the insertion start +1.18 %) and at
# 200-1000 (random start +1.0 to +12 %, the insertion start +0.6 % worst): 150 is between.
CHEAPEST_ARC_MAX_STOPS = 150
# Up to this many stops VROOM and OR-Tools' bandit search run beside PyVRP; above, a second PyVRP with
# another seed. PyVRP's tour after a second varies a lot with its seed (Heidelberg 100 open:
# +0.00, +9.4, +3.3 % for seeds 0-2), so two seeds cover each other: on 12 instances each (4
# cities x 3 shapes, against the 60 s references) the worst gap at 100 stops was +1.60 % with
# OR-Tools beside and +0.72 to +1.56 % (mean +1.15 %) with a second seed, over 1 % 2 times
# against 0.5 on average; at 50 stops both were alike (worst +2.68 % against +0.77 to +2.68 %),
# and OR-Tools finds what PyVRP misses there. 75 is between.
MIXED_ENGINES_MAX_STOPS = 75
# Up to this many stops both PyVRP searches start from the insertion tour (seeds 0 and 1): worst
# +0.66 to +1.23 % at 200 stops against +1.53 % with Christofides' tour for the second; at 500
# and 1000 stops Christofides' start is the better partner (mean -0.93 % against -0.67 % at
# 1000, over 1 % on 1 instance against 1-2). 300 is between.
SAME_START_MAX_STOPS = 300
LOCAL_CHEAPEST_INSERTION = routing_enums_pb2.FirstSolutionStrategy.LOCAL_CHEAPEST_INSERTION
# A first tour takes 60 ms at 1000 stops (insertion); the limit only guards against a stall.
FIRST_TOUR_LIMIT_S = 5.0
# PyVRP from its own random start settles within a few tenths of a second up to 150 stops, and
# what it settles on depends on the seed: restarting it with new seeds beats searching on.
# Measured (2026-11-26, scratch runs on the bench's draws, 5 cities x 3 shapes x seeds 11-15,
# against the best of every run and the 60 s references), k searches of limit/k s on each core:
# - 100 stops (0.8 s): over 1 % on 9 of 75 instances with k = 1, 7 with 2, 3 with 3, 4 with 4,
#   2 with 6 (mean gap +0.41, +0.23, +0.16, +0.15, +0.16 %);
# - 150 stops (1.25 s, 45 instances): 7 with k = 1, 6 with 3, 5 with 5 (+0.48, +0.43, +0.37 %);
# - 50 stops (0.5 s, VROOM then OR-Tools on the other core): 1 with k = 1 and 2, 0 with 4
#   (+0.04, +0.03, +0.01 %);
# - from OR-Tools' first tour (above 150 stops) restarts cost: at 200 stops +0.21 % with k = 1,
#   +0.30 with 2, +0.47 with 4. So only random-start searches restart.
# 0.2 s a restart is inside the range that did best at every size (0.125-0.27 s).
RESTART_SECONDS = 0.2
MAX_RESTARTS = 6  # the most measured


PYVRP = "pyvrp"
OR_TOOLS = "or-tools"
# VROOM for VROOM_SHARE of the time, then OR-Tools for the rest; the shorter tour of the two.
VROOM_THEN_OR_TOOLS = "vroom+or-tools"
VROOM_METHOD = "vroom"
METHODS = {PYVRP: "pyvrp-ils", OR_TOOLS: "or-tools-gls"}
# On 12 instances of 50 stops (4 cities x 3 shapes), PyVRP beside VROOM (40 % of the limit)
# then OR-Tools' bandit search (60 %) was at most +0.00 % above the 60 s references, against
# +2.68 % with OR-Tools alone beside it; at 25 stops all were exact either way. At 100 stops
# a second PyVRP seed did better (worst +1.40 % against +1.60 %), see MIXED_ENGINES_MAX_STOPS.
VROOM_SHARE = 0.4


@dataclass(frozen=True)
class Search:
    """One search: PyVRP's iterated local search, a configuration of OR-Tools' guided local
    search (`bandit` and `penalty_weight` are OR-Tools' only), or VROOM then that OR-Tools
    search (VROOM_THEN_OR_TOOLS)."""

    engine: str = OR_TOOLS
    # OR-Tools' first solution strategy. PyVRP: None starts from its own random tour, a
    # strategy from OR-Tools' first tour by it.
    first_solution: int | None = CHRISTOFIDES
    # OR-Tools picks its local search operators by a multi-armed bandit instead of in turn:
    # it stops wasting time on operators that never improve a one-vehicle tour.
    bandit: bool = False
    # Weight of GLS's penalties (OR-Tools' default 0.1); 0.2 escaped local optima faster at
    # 100 stops with the bandit (mean gap 1.5 % against 1.9 %).
    penalty_weight: float = 0.1
    seed: int = 0  # PyVRP's


def searches(stops: int) -> list[Search]:
    """The searches to run at once, best alone first (the one used with a single process);
    the thresholds above say what was measured."""
    if stops <= MIXED_ENGINES_MAX_STOPS:
        return [Search(PYVRP, None), Search(VROOM_THEN_OR_TOOLS, PATH_CHEAPEST_ARC, bandit=True)]
    if stops <= CHEAPEST_ARC_MAX_STOPS:
        return [Search(PYVRP, None), Search(PYVRP, None, seed=1)]
    if stops <= SAME_START_MAX_STOPS:
        return [Search(PYVRP, LOCAL_CHEAPEST_INSERTION), Search(PYVRP, LOCAL_CHEAPEST_INSERTION, seed=1)]
    return [Search(PYVRP, LOCAL_CHEAPEST_INSERTION), Search(PYVRP, CHRISTOFIDES, seed=1)]


@dataclass(frozen=True)
class TourProblem:
    durations_s: np.ndarray  # n x n, row: from, column: to; finite
    start: int
    end: int | None  # None: open tour; == start: round trip
    time_limit_s: float | None = None  # None: default_time_limit(n)


@dataclass(frozen=True)
class Tour:
    order: list[int]  # every stop once, the start first (a round trip's return is implied)
    duration_s: float  # on the matrix, including a round trip's return
    method: str  # "trivial" | "held-karp" | "pyvrp-ils" | "or-tools-gls"
    optimal: bool
    time_limit_s: float | None = None


# (stops, seconds of search): see default_time_limit.
TIME_LIMIT_POINTS = ((62, 0.5), (100, 0.8), (200, 1.7), (500, 4.2), (1000, 8.0))


def default_time_limit(stops: int) -> float:
    """Seconds of search, interpolated between TIME_LIMIT_POINTS: at least 0.5 s (25 stops reached
    the 30 s result only after 0.2 s), then as much as the request's wall-time goal leaves (1 s at
    100 stops, 2 s at 200, 5 s at 500, 10 s at 1000, bench/optimize.py). On the idle machine the
    rest of a request (matrix, geometry, the hops) took 0.03-0.05 s at 100 stops, 0.09 s at 200,
    0.26-0.30 s at 500 and 0.74-0.84 s at 1000 around searches of 0.8, 1.6, 3.5 and 6 s (every
    city's round trips, `python -m bench optimize`), so these limits end a request at about 90 %
    of its goal. More search was the one lever that helped: on the whole table (87 instances, the
    60 s references) tours over 1 % went from 9 to 4 against 0.8/1.6/3.5/6 s, and PyVRP's
    perturbation and neighbourhood sizes did worse than its defaults at 500 stops (scratch runs)."""
    return interpolated_seconds(TIME_LIMIT_POINTS, stops)


# An exact problem's solver time (Held-Karp: 30-80 ms at 12 stops).
EXACT_ESTIMATE_S = 0.1
# A search takes its time limit plus a set-up growing with the matrix: PyVRP measured 0.72 s
# beyond the limit at 1000 stops, 0.06 s at 300, nothing visible at 20 (Heidelberg matrices).
SETUP_S_PER_STOP_SQUARED = 0.75e-6


def estimate_s(stops: int, time_limit_s: float | None) -> float:
    """Seconds a lane's processes are busy with one problem of this size: what the scheduler
    admits it by, and what its price counts."""
    if stops <= EXACT_MAX_STOPS:
        return EXACT_ESTIMATE_S
    limit = time_limit_s if time_limit_s is not None else default_time_limit(stops)
    return limit + SETUP_S_PER_STOP_SQUARED * stops * stops


def needs_search(problem: TourProblem) -> bool:
    """False when the tour is exact (trivial or Held-Karp): one run is enough then."""
    return len(problem.durations_s) > EXACT_MAX_STOPS


def shortest(tours: list[Tour]) -> Tour:
    return min(tours, key=lambda t: t.duration_s)


def solve(problem: TourProblem, search: Search | None = None) -> Tour:
    """`search`: None for the best single search for the problem's size."""
    n = len(problem.durations_s)
    costs = np.rint(np.asarray(problem.durations_s, dtype=np.float64) * COST_SCALE).astype(np.int64)
    if n <= 2:
        order = [problem.start, *[i for i in range(n) if i != problem.start]]
        return tour(problem, costs, order, "trivial", optimal=True)
    if n <= EXACT_MAX_STOPS:
        order, _ = held_karp(costs, problem.start, problem.end)
        return tour(problem, costs, order, "held-karp", optimal=True)
    limit = problem.time_limit_s if problem.time_limit_s is not None else default_time_limit(n)
    search = search or searches(n)[0]
    if search.engine == VROOM_THEN_OR_TOOLS:
        return vroom_then_or_tools(problem, costs, limit, search)
    order = run_search(costs, problem.start, problem.end, limit, search)
    return tour(problem, costs, order, METHODS[search.engine], optimal=False, time_limit_s=limit)


def vroom_then_or_tools(problem: TourProblem, costs: np.ndarray, limit: float, search: Search) -> Tour:
    """VROOM's tour and OR-Tools' (each for its share of the limit), the shorter one."""
    from optimize_service.stops.vroom_search import vroom_order

    began = time.perf_counter()
    found = tour(problem, costs, vroom_order(costs, problem.start, problem.end, limit * VROOM_SHARE), VROOM_METHOD,
                 optimal=False, time_limit_s=limit)  # fmt: skip
    left = max(0.01, limit - (time.perf_counter() - began))
    gls = Search(OR_TOOLS, search.first_solution, search.bandit, search.penalty_weight)
    order = guided_local_search(costs, problem.start, problem.end, left, gls)
    return shortest([found, tour(problem, costs, order, METHODS[OR_TOOLS], optimal=False, time_limit_s=limit)])


def run_search(costs: np.ndarray, start: int, end: int | None, time_limit_s: float, search: Search) -> list[int]:
    if search.engine != PYVRP:
        return guided_local_search(costs, start, end, time_limit_s, search)
    if search.first_solution is None:
        return restarted_search(costs, start, end, time_limit_s, search.seed)
    began = time.perf_counter()  # the first tour's time is part of the limit
    initial = first_tour(costs, start, end, search.first_solution)
    left = max(0.01, time_limit_s - (time.perf_counter() - began))
    return iterated_local_search(costs, start, end, left, seed=search.seed, initial=initial)


def restarts(time_limit_s: float) -> int:
    """How many PyVRP searches from random starts share the limit (see RESTART_SECONDS)."""
    return max(1, min(MAX_RESTARTS, int(time_limit_s / RESTART_SECONDS)))


def restarted_search(costs: np.ndarray, start: int, end: int | None, time_limit_s: float, seed: int) -> list[int]:
    """The shortest of `restarts(time_limit_s)` PyVRP searches from random starts, one after
    another; seeds `seed`, `seed + 2`, ... so the two searches of a request (seeds 0 and 1) never
    repeat each other's."""
    began = time.perf_counter()
    runs = restarts(time_limit_s)
    found: list[list[int]] = []
    for run in range(runs):
        left = time_limit_s - (time.perf_counter() - began)
        found.append(iterated_local_search(costs, start, end, max(0.01, left / (runs - run)), seed=seed + 2 * run))
    return min(found, key=lambda order: tour_cost(costs, order, end == start))


def tour(
    problem: TourProblem, costs: np.ndarray, order: list[int], method: str, *, optimal: bool,
    time_limit_s: float | None = None,
) -> Tour:  # fmt: skip
    duration = tour_cost(costs, order, problem.end == problem.start) / COST_SCALE
    return Tour(order, duration, method, optimal, time_limit_s)


def guided_local_search(
    costs: np.ndarray, start: int, end: int | None, time_limit_s: float, search: Search = Search()
) -> list[int]:
    return or_tools_tour(costs, start, end, search_parameters(time_limit_s, search))


def first_tour(costs: np.ndarray, start: int, end: int | None, strategy: int) -> list[int]:
    """OR-Tools' first solution by `strategy`, without its local search (60 ms at 1000 stops)."""
    params = search_parameters(FIRST_TOUR_LIMIT_S, Search(OR_TOOLS, strategy))
    params.solution_limit = 1
    return or_tools_tour(costs, start, end, params)


def or_tools_tour(costs: np.ndarray, start: int, end: int | None, params: Any) -> list[int]:
    """OR-Tools routing with one vehicle. The nodes are relabelled so that the start is node 0
    (OR-Tools' CHRISTOFIDES fails on some instances otherwise; measured). An open tour ends at
    an extra node that every stop reaches at no cost, so the search may finish anywhere."""
    n = len(costs)
    labels = [start, *[i for i in range(n) if i not in (start, end)]]
    if end is not None and end != start:
        labels.append(end)
    relabelled = costs[np.ix_(labels, labels)]
    if end is None:
        matrix = np.zeros((n + 1, n + 1), dtype=np.int64)
        matrix[:n, :n] = relabelled
        last = n
    else:
        matrix, last = relabelled, (0 if end == start else n - 1)
    order = solve_path(matrix, last, params)
    if order is None:  # never seen after relabelling; the default start is the safety net
        fallback = type(params)()
        fallback.CopyFrom(params)
        fallback.first_solution_strategy = PATH_CHEAPEST_ARC
        order = solve_path(matrix, last, fallback)
    if order is None:
        raise RuntimeError("OR-Tools found no tour")
    return [labels[node] for node in order if node < n]


def solve_path(matrix: np.ndarray, last: int, params: Any) -> list[int] | None:
    """Nodes from 0 to `last` (0: back to the start) in OR-Tools' order; None if it found none."""
    manager = pywrapcp.RoutingIndexManager(len(matrix), 1, [0], [last])
    routing = pywrapcp.RoutingModel(manager)
    # A matrix callback stays in C++: a Python callback costs ~10x the search speed.
    transit = routing.RegisterTransitMatrix(matrix.tolist())
    routing.SetArcCostEvaluatorOfAllVehicles(transit)
    solution = routing.SolveWithParameters(params)
    if solution is None:
        return None
    order: list[int] = []
    index = routing.Start(0)
    while not routing.IsEnd(index):
        order.append(manager.IndexToNode(index))
        index = solution.Value(routing.NextVar(index))
    if last != 0:
        order.append(last)
    return order


def search_parameters(time_limit_s: float, search: Search) -> Any:
    params = pywrapcp.DefaultRoutingSearchParameters()
    params.first_solution_strategy = search.first_solution
    params.local_search_metaheuristic = routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    params.use_multi_armed_bandit_concatenate_operators = search.bandit
    params.guided_local_search_lambda_coefficient = search.penalty_weight
    params.time_limit.FromMilliseconds(max(1, math.ceil(time_limit_s * 1000)))
    return params


def warm_up() -> None:
    """Imports and exercises both solvers once, so a worker's first request pays no start-up."""
    problem = TourProblem(np.ones((EXACT_MAX_STOPS + 1, EXACT_MAX_STOPS + 1)), 0, None, time_limit_s=0.05)
    for search in searches(EXACT_MAX_STOPS + 1):
        solve(problem, search)
