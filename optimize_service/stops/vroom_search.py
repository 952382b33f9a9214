"""Stop order by VROOM (pyvroom, exploration level 5; no aiohttp): one vehicle, integer costs.

Imported by the solver processes when a search uses it, not by the service: pyvroom loads
pandas. VROOM's moves (2-opt, or-opt, reversals) reach tours that PyVRP's and OR-Tools' searches
miss on some small open tours (Andorra 50 stops: +2.7 % for both, 0.0 % for VROOM).
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

EXPLORATION_LEVEL = 5


def vroom_order(costs: np.ndarray, start: int, end: int | None, time_limit_s: float) -> list[int]:
    """Every stop once, `start` first and `end` (if any, and not a round trip) last. VROOM's
    first tour is not interruptible, so a tiny limit may be overrun by a few milliseconds."""
    import vroom

    problem = vroom.Input()
    problem.set_durations_matrix(profile="car", matrix_input=np.asarray(costs, dtype=np.uint32))
    problem.add_vehicle(vroom.Vehicle(0, start=start, end=end, profile="car"))
    problem.add_job([vroom.Job(i, location=i) for i in range(len(costs)) if i not in (start, end)])
    solution = problem.solve(
        exploration_level=EXPLORATION_LEVEL, nb_threads=1, timeout=timedelta(seconds=time_limit_s)
    )
    routes = solution.routes
    visits = [int(i) for i in routes[routes["type"] == "job"]["location_index"]]
    return [start, *visits, *([end] if end is not None and end != start else [])]
