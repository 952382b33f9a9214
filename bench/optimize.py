"""Benchmark of POST /v1/optimize/stops on Heidelberg: the whole request through the gateway,
and the solvers compared on the same road matrices.

The auth service, route service, optimize service and gateway run as real processes
(`launcher.stack.Stack`, free loopback ports, Heidelberg imported with the car-fastest
profile); a user of tier `unlimited` has a token. For 10, 25, 50, 100, 200 and 500 seeded
random stops in the dense box (a stop with no road within 1000 m is redrawn), it measures the
wall time of the request (median of several) and the tour's duration, then fetches the same
matrix from the route service and computes the reference: the best tour OR-Tools' guided
local search finds in 30 s (from both the default and the Christofides first solution),
Held-Karp at 10 stops, and VROOM on the same matrix.

`run()` returns a Markdown section; `python -m bench.optimize` prints it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import vroom

from common.config import DEFAULT_PORTS, REPO_ROOT
from launcher.redis_server import free_port
from launcher.stack import Stack
from optimize_service.exact import held_karp, tour_cost
from optimize_service.solver import (
    COST_SCALE,
    OR_TOOLS,
    PATH_CHEAPEST_ARC,
    PYVRP,
    Search,
    default_time_limit,
    guided_local_search,
    run_search,
    searches,
)
from route_service.importer import Progress, import_maps

PBF = REPO_ROOT.parent / "shared" / "osm" / "heidelberg.osm.pbf"
DENSE_BOX = (49.37, 49.43, 8.62, 8.75)  # lat min, lat max, lon min, lon max
SIZES = (10, 25, 50, 100, 200, 500)
GOALS_S = {100: 1.0, 500: 5.0}
REPEATS = {10: 5, 25: 5, 50: 5, 100: 5, 200: 3, 500: 3}
SEED = 20250601
USER, PASSWORD = "bench-optimize@example.com", "bench password 1"
Json = Any


REFERENCE_S = 30.0  # the goal: within 1 % of what GLS finds in 30 s


# ---------------------------------------------------------------- HTTP


def http(url: str, body: Json, headers: dict[str, str] | None = None, timeout: float = 120) -> tuple[int, Json]:
    request = urllib.request.Request(  # noqa: S310 - loopback
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 - loopback
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def user_token(stack: Stack) -> str:
    command = [sys.executable, "-m", "auth_service.console", "add-user", USER, "--password", PASSWORD, "--tier", "unlimited"]
    subprocess.run(command, cwd=REPO_ROOT, env=stack.env(), capture_output=True, check=True, timeout=60)
    status, answer = http(stack.base_url + "/v1/authenticate", {"user": USER, "password": PASSWORD})
    assert status == 200, answer
    return str(answer["token"])


@contextmanager
def platform(data_dir: Path) -> Iterator[Stack]:
    import_maps([PBF], data_dir / "maps", profiles=["car-fastest"], progress=Progress(emit=lambda _line: None))
    stack = Stack(
        data_dir=data_dir,
        ports={name: free_port() for name in DEFAULT_PORTS},
        redis_port=free_port(),
        services=["auth_service", "route_service", "optimize_service"],
        extra_env={"LOG_LEVEL": "WARNING"},
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


# ---------------------------------------------------------------- one size


@dataclass
class Measured:
    stops: list[Json]
    wall_s: list[float]
    tour_s: float  # on the matrix, what the service minimized
    method: str
    durations_s: np.ndarray


def random_stop(rng: np.random.Generator, name: str) -> Json:
    lat0, lat1, lon0, lon1 = DENSE_BOX
    return {"name": name, "coordinate": {"lat": float(rng.uniform(lat0, lat1)), "lon": float(rng.uniform(lon0, lon1))}}


def routable_stops(stack: Stack, count: int) -> list[Json]:
    """Seeded stops; one the route service cannot snap (forest, fields) is redrawn."""
    rng = np.random.default_rng(SEED + count)
    stops = [random_stop(rng, f"stop {i}") for i in range(count)]
    while True:
        points = [s["coordinate"] for s in stops]
        status, answer = http(
            stack.url("route_service") + "/internal/matrix",
            {"sources": points, "destinations": points[:1]},
            {"X-Internal-Errors": "full"},  # errors with their parameters, as services see them
        )
        if status == 200:
            return stops
        parameter = answer["violations"][0]["parameter"]  # "sources[i]"
        index = int(parameter.split("[")[1].rstrip("]"))
        stops[index] = random_stop(rng, f"stop {index}")


def measure(stack: Stack, token: str, count: int) -> Measured:
    stops = routable_stops(stack, count)
    headers = {"Authorization": f"Bearer {token}"}
    walls: list[float] = []
    answer: Json = {}
    for _ in range(REPEATS[count]):
        started = time.perf_counter()
        status, answer = http(stack.base_url + "/v1/optimize/stops", stops, headers)
        walls.append(time.perf_counter() - started)
        assert status == 200, answer
    points = [s["coordinate"] for s in stops]
    status, matrix = http(stack.url("route_service") + "/internal/matrix", {"sources": points, "destinations": points})
    assert status == 200, matrix
    solver = answer["solver"]
    return Measured(stops, walls, solver["matrixDuration"], solver["method"], np.array(matrix["durations"], dtype=float))


# ---------------------------------------------------------------- solvers on the same matrix


def costs_of(durations_s: np.ndarray) -> np.ndarray:
    return np.rint(durations_s * COST_SCALE).astype(np.int64)


def timed(solve: Callable[[], list[int]], costs: np.ndarray) -> tuple[float, float]:
    """(tour seconds on the matrix, solver wall seconds) of an open tour from stop 0."""
    started = time.perf_counter()
    order = solve()
    elapsed = time.perf_counter() - started
    return tour_cost(costs, order, False) / COST_SCALE, elapsed


def vroom_order(costs: np.ndarray, level: int) -> list[int]:
    problem = vroom.Input()
    problem.set_durations_matrix(profile="car", matrix_input=costs.astype(np.uint32))
    problem.add_vehicle(vroom.Vehicle(0, start=0, profile="car"))
    problem.add_job([vroom.Job(i, location=i) for i in range(1, len(costs))])
    routes = problem.solve(exploration_level=level, nb_threads=2).routes
    return [0, *(int(i) for i in routes[routes["type"] == "job"]["location_index"])]


def search_name(search: Search) -> str:
    if search.engine == PYVRP:
        return "PyVRP iterated local search"
    start = "Christofides" if search.first_solution != PATH_CHEAPEST_ARC else "cheapest-arc"
    return f"OR-Tools GLS, {start} start{', operator bandit' if search.bandit else ''}"


def compare_solvers(durations_s: np.ndarray) -> dict[str, tuple[float, float]]:
    costs = costs_of(durations_s)
    n, limit = len(costs), default_time_limit(len(costs))
    results = {
        f"{search_name(s)} (service search {i + 1})": timed(partial(run_search, costs, 0, None, limit, s), costs)
        for i, s in enumerate(searches(n))
    }
    # What the service answers with two workers: both searches at once, the shorter tour.
    service = [v for k, v in results.items() if "service search" in k]
    results["service: shorter of its searches (run at once)"] = (min(t for t, _ in service), max(s for _, s in service))
    results["VROOM, exploration 0"] = timed(lambda: vroom_order(costs, 0), costs)
    if n <= 200:  # level 5 takes 10+ s at 200 stops here
        results["VROOM, exploration 5"] = timed(lambda: vroom_order(costs, 5), costs)
    results["reference: GLS, default start"] = timed(
        lambda: guided_local_search(costs, 0, None, REFERENCE_S, Search(OR_TOOLS, PATH_CHEAPEST_ARC)), costs
    )
    results["reference: GLS, Christofides start"] = timed(
        lambda: guided_local_search(costs, 0, None, REFERENCE_S, Search()), costs
    )
    if n <= 12:
        results["Held-Karp (exact)"] = timed(lambda: held_karp(costs, 0, None)[0], costs)
    return results


# ---------------------------------------------------------------- report


def gap(value: float, best: float) -> str:
    return f"{100 * (value - best) / best:+.2f} %"


def run() -> str:
    rows, comparisons = [], []
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as tmp, platform(Path(tmp)) as stack:
        token = user_token(stack)
        http(stack.base_url + "/v1/optimize/stops", routable_stops(stack, 10), {"Authorization": f"Bearer {token}"})
        for count in SIZES:
            measured = measure(stack, token, count)
            results = compare_solvers(measured.durations_s)
            best = min(v[0] for k, v in results.items() if k.startswith(("reference", "Held")))
            rows.append(end_to_end_row(count, measured, best))
            comparisons.extend(comparison_rows(count, results, best))
            print(f"   {count} stops: {rows[-1]}", flush=True)
    return "\n".join(report(rows, comparisons))


def end_to_end_row(count: int, measured: Measured, best: float) -> str:
    median = statistics.median(measured.wall_s)
    goal = GOALS_S.get(count)
    verdict = "" if goal is None else (f" (goal ≤ {goal:g} s: {'met' if median <= goal else 'missed'})")
    return (
        f"| {count} | {median:.2f}{verdict} | {max(measured.wall_s):.2f} | {measured.method} | "
        f"{default_time_limit(count) if count > 12 else 0:g} | {measured.tour_s / 60:.1f} | {best / 60:.1f} | "
        f"{gap(measured.tour_s, best)} |"
    )


def comparison_rows(count: int, results: dict[str, tuple[float, float]], best: float) -> list[str]:
    return [f"| {count} | {name} | {tour / 60:.1f} | {gap(tour, best)} | {seconds:.2f} |" for name, (tour, seconds) in results.items()]


def report(rows: list[str], comparisons: list[str]) -> list[str]:
    return [
        "## Stop-order optimization (POST /v1/optimize/stops)",
        "",
        "Heidelberg, car fastest, open tours from the first stop; seeded random stops in the dense box "
        "lat 49.37 to 49.43, lon 8.62 to 8.75. Auth, route and optimize services and the gateway run as "
        "real processes; each request goes through the gateway with a token (tier unlimited). "
        "Wall time: the whole request (matrix, solver, tour geometry), median and maximum of 5 runs "
        "(3 for 200 and 500 stops). Tour: total driving time on the route service's matrix. "
        "Reference: the best of OR-Tools' guided local search for 30 s from the default and from "
        "the Christofides first solution, and Held-Karp (exact) at 10 stops; gap = service tour "
        "against it. The service runs two searches at once (one per worker) and keeps the shorter tour.",
        "",
        "| stops | wall median (s) | wall max (s) | method | search limit (s) | tour (min) | reference (min) | gap |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Solvers on the same matrices (solver time only, in this process):",
        "",
        "| stops | solver | tour (min) | gap | seconds |",
        "|---|---|---|---|---|",
        *comparisons,
    ]


if __name__ == "__main__":
    print(run())
