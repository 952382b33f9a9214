"""Stop order by PyVRP's iterated local search (no aiohttp): one vehicle, integer costs.

PyVRP solves vehicle routing with depots and clients. A tour maps onto it as:
- the start stop is the vehicle's start depot;
- a fixed destination is its end depot, a round trip ends at the start depot, and an open
  tour ends at an extra depot that every stop reaches at cost 0 (so it may finish anywhere);
- every other stop is a client that must be visited.
Only the distance matrix carries cost (our road durations); durations stay 0, so nothing
else (time windows, shift length) constrains the search.
"""

from __future__ import annotations

import numpy as np
from pyvrp import Client, Depot, Location, ProblemData, Route, Solution, VehicleType, solve
from pyvrp.stop import MaxRuntime

# Never taken: leaving the open tour's extra end depot (PyVRP needs every entry finite).
UNUSED_ARC = 1 << 40


def iterated_local_search(
    costs: np.ndarray, start: int, end: int | None, time_limit_s: float, seed: int = 0,
    initial: list[int] | None = None,
) -> list[int]:  # fmt: skip
    """Every stop once, `start` first and `end` (if any, and not a round trip) last. `initial`:
    a tour to start from (every stop once, in any order around the start and end); None: PyVRP
    builds its own from a random one."""
    n = len(costs)
    depots = [start] if end in (None, start) else [start, end]
    clients = [i for i in range(n) if i not in depots]
    matrix, end_depot = problem_matrix(costs, depots, clients, open_tour=end is None)
    data = ProblemData(
        locations=[Location(0, 0) for _ in range(len(matrix))],  # coordinates are unused
        clients=[Client(location) for location in range(len(depots) + (end is None), len(matrix))],
        depots=[Depot(location) for location in range(len(depots) + (end is None))],
        vehicle_types=[VehicleType(num_available=1, start_depot=0, end_depot=end_depot)],
        distance_matrices=[matrix],  # type: ignore[list-item]  # the stub wants ndarray[int]
        duration_matrices=[np.zeros_like(matrix)],  # type: ignore[list-item]
    )
    warm_start = None
    if initial is not None:
        position = {stop: index for index, stop in enumerate(clients)}  # PyVRP's client numbers
        warm_start = Solution(data, [Route(data, [position[i] for i in initial if i in position], 0)])
    result = solve(
        data, stop=MaxRuntime(time_limit_s), seed=seed, collect_stats=False, display=False, initial_solution=warm_start
    )
    if not result.best.is_feasible() or result.best.num_routes() != 1:
        raise RuntimeError("PyVRP found no tour through every stop")
    visits = [clients[activity.idx] for activity in result.best.routes()[0].schedule() if activity.is_client()]
    return [start, *visits, *([end] if end is not None and end != start else [])]


def problem_matrix(
    costs: np.ndarray, depots: list[int], clients: list[int], *, open_tour: bool
) -> tuple[np.ndarray, int]:
    """PyVRP's location order (depots, the open tour's extra end depot, clients) and the index
    of the end depot."""
    order = [*depots, *clients]
    if not open_tour:
        matrix, end_depot = np.array(costs[np.ix_(order, order)], dtype=np.int64), len(depots) - 1
    else:
        end_depot = len(depots)
        size = len(order) + 1
        positions = [*range(end_depot), *range(end_depot + 1, size)]
        matrix = np.full((size, size), UNUSED_ARC, dtype=np.int64)
        matrix[np.ix_(positions, positions)] = costs[np.ix_(order, order)]
        matrix[:, end_depot] = 0  # any stop may be the last one
    np.fill_diagonal(matrix, 0)  # PyVRP requires it; staying put costs nothing anyway
    return matrix, end_depot
