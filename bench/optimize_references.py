"""Reference tours for the stop-order bench: VROOM, OR-Tools and PyVRP, each on the instance's
matrix, cached on disk (no HTTP).

- `vroom`: pyvroom at exploration level 5 (its most thorough), one thread, stopped after the
  same seconds as the others: unlimited it took 10 s at 200 stops and 150 s at 500 (Heidelberg;
  ~20 min at 1000 by the cube law these follow). Its first tour cannot be interrupted: at 1000
  stops it runs ~80 s whatever the limit.
- `ortools`: OR-Tools' guided local search from a Christofides tour for the given seconds
  (optimize_service.stops.solver.guided_local_search, the plain configuration).
- `pyvrp`: PyVRP's own `solve` for the given seconds, with its default parameters; the tour
  maps onto depots as in optimize_service/stops/ils.py, but the search is PyVRP's unchanged, so the
  reference does not move when the service's search is tuned.

A result is a JSON file `references/<instance-key>-<solver>-<seconds>.json`, written
once; `references()` runs the missing ones in two processes (one per core), each reading its
instance from the instance cache, so a rerun costs nothing. The limits are wall-clock (that is
what the solvers offer), so a result records the CPU seconds its process got: one stopped by its limit
that got less than `MIN_CPU_SHARE` of its wall time shared the machine (a test run, a build)
and had less search than it was given; it counts as missing and is computed again.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

import numpy as np
import vroom
from pyvrp import Client, Depot, Location, ProblemData, VehicleType
from pyvrp import solve as pyvrp_solve
from pyvrp.stop import MaxRuntime

from bench.optimize_instances import CACHE_DIR, Instance, load_instance, write_atomic
from optimize_service.stops.ils import problem_matrix
from optimize_service.stops.solver import CHRISTOFIDES, COST_SCALE, OR_TOOLS, Search, guided_local_search

VROOM, ORTOOLS, PYVRP = "vroom", "ortools", "pyvrp"
SOLVERS = (VROOM, ORTOOLS, PYVRP)
VROOM_LEVEL = 5
PROCESSES = 2  # one per core: the searches are single-threaded
MIN_CPU_SHARE = 0.9


@dataclass(frozen=True)
class Result:
    solver: str
    duration_s: float  # the tour on the instance's matrix, a round trip's return included
    wall_s: float
    order: list[int]
    cpu_s: float | None = None  # None: written before CPU time was recorded


# ---------------------------------------------------------------- tours on a matrix


def costs_of(durations: np.ndarray) -> np.ndarray:
    """The integer matrix every solver gets: tenths of a second, as the service solves."""
    return np.rint(durations * COST_SCALE).astype(np.int64)


def tour_duration(instance: Instance, order: list[int]) -> float:
    """Seconds of the tour on the instance's matrix, after checking it is a valid tour."""
    n, end = instance.size, instance.end
    assert sorted(order) == list(range(n)), "not every stop exactly once"
    assert order[0] == instance.start, "does not begin at the start"
    assert end is None or end == instance.start or order[-1] == end, "does not finish at the destination"
    legs = list(pairwise(order))
    if end == instance.start:
        legs.append((order[-1], order[0]))
    return float(sum(instance.durations[a, b] for a, b in legs))


def vroom_order(instance: Instance, seconds: float) -> list[int]:
    costs = costs_of(instance.durations)
    problem = vroom.Input()
    problem.set_durations_matrix(profile="car", matrix_input=costs.astype(np.uint32))
    problem.add_vehicle(vroom.Vehicle(0, start=instance.start, end=instance.end, profile="car"))
    ends = {instance.start, instance.end}
    problem.add_job([vroom.Job(i, location=i) for i in range(instance.size) if i not in ends])
    limit = timedelta(seconds=seconds)  # its first tour is not interruptible: it may run over
    routes = problem.solve(exploration_level=VROOM_LEVEL, nb_threads=1, timeout=limit).routes
    visits = [int(i) for i in routes[routes["type"] == "job"]["location_index"]]
    last = [] if instance.end in (None, instance.start) else [instance.end]
    return [instance.start, *visits, *last]


def ortools_order(instance: Instance, seconds: float) -> list[int]:
    search = Search(OR_TOOLS, CHRISTOFIDES, bandit=False, penalty_weight=0.1)
    return guided_local_search(costs_of(instance.durations), instance.start, instance.end, seconds, search)


def pyvrp_order(instance: Instance, seconds: float) -> list[int]:
    start, end = instance.start, instance.end
    depots = [start] if end in (None, start) else [start, end]
    clients = [i for i in range(instance.size) if i not in depots]
    matrix, end_depot = problem_matrix(costs_of(instance.durations), depots, clients, open_tour=end is None)
    first_client = len(matrix) - len(clients)
    data = ProblemData(
        locations=[Location(0, 0) for _ in range(len(matrix))],  # coordinates are unused
        clients=[Client(location) for location in range(first_client, len(matrix))],
        depots=[Depot(location) for location in range(first_client)],
        vehicle_types=[VehicleType(num_available=1, start_depot=0, end_depot=end_depot)],
        distance_matrices=[matrix],  # type: ignore[list-item]  # the stub wants ndarray[int]
        duration_matrices=[np.zeros_like(matrix)],  # type: ignore[list-item]
    )
    result = pyvrp_solve(data, stop=MaxRuntime(seconds), seed=0, collect_stats=False, display=False)
    if not result.best.is_feasible() or result.best.num_routes() != 1:
        raise RuntimeError("PyVRP found no tour through every stop")
    route = result.best.routes()[0]
    visits = [clients[activity.idx] for activity in route.schedule() if activity.is_client()]
    return [start, *visits, *([end] if end is not None and end != start else [])]


ORDERS: dict[str, Callable[[Instance, float], list[int]]] = {
    VROOM: vroom_order,
    ORTOOLS: ortools_order,
    PYVRP: pyvrp_order,
}


# ---------------------------------------------------------------- the cache and the worker processes


def result_file(key: str, solver: str, seconds: float) -> Path:
    return CACHE_DIR / "references" / f"{key}-{solver}-{seconds:g}.json"


def load_result(key: str, solver: str, seconds: float) -> Result | None:
    path = result_file(key, solver, seconds)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    wall, cpu = float(data["wall_s"]), data.get("cpu_s")
    # Only a search stopped by its limit loses by sharing the machine; one that finished by
    # itself (VROOM on small sets) was only slower.
    stopped_by_limit = wall >= 0.95 * float(data.get("seconds", seconds))
    if cpu is not None and stopped_by_limit and float(cpu) < MIN_CPU_SHARE * wall:
        return None  # it shared the machine: searched less than it was given
    order = [int(i) for i in data["order"]]
    return Result(solver, float(data["duration_s"]), wall, order, None if cpu is None else float(cpu))


def compute(key: str, solver: str, seconds: float) -> Result:
    """In a worker process: the instance comes from its cache file (cheaper than pickling it)."""
    instance = load_instance(key)
    if instance is None:
        raise FileNotFoundError(f"instance {key} is not in the cache")
    started, cpu_started = time.perf_counter(), time.process_time()
    order = ORDERS[solver](instance, seconds)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    result = Result(solver, tour_duration(instance, order), wall, order, cpu)
    record = {
        "solver": solver, "seconds": seconds, "duration_s": result.duration_s, "wall_s": wall, "cpu_s": cpu, "order": order,
    }  # fmt: skip
    write_atomic(result_file(key, solver, seconds), json.dumps(record).encode())
    return result


def references(
    instances: Iterable[Instance], seconds: float, progress: Callable[[str], None] = print
) -> dict[tuple[str, str], Result]:
    """Every solver's result per instance key, the missing ones computed PROCESSES at a time,
    the longest jobs (largest instances) first so that both processes finish together."""
    keys = sorted({(i.size, i.key) for i in instances}, reverse=True)
    found: dict[tuple[str, str], Result] = {}
    missing: list[tuple[str, str]] = []
    for _size, key in keys:
        for solver in SOLVERS:
            cached = load_result(key, solver, seconds)
            if cached is None:
                missing.append((key, solver))
            else:
                found[key, solver] = cached
    if missing:
        progress(f"   references: {len(missing)} to compute ({len(found)} cached), {PROCESSES} processes")
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=PROCESSES, mp_context=context) as pool:
            futures = {pool.submit(compute, key, solver, seconds): (key, solver) for key, solver in missing}
            for done, future in enumerate(as_completed(futures), 1):
                found[futures[future]] = future.result()
                progress(f"   reference {done}/{len(missing)}: {futures[future][0]} {futures[future][1]}")
    return found
