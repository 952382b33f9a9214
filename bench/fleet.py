"""Quality of POST /v1/optimize/routes: our fleet plans against VROOM and PyVRP given 60 s.

    python -m bench fleet        # writes the section of bench/RESULTS.md
    BENCH_FLEET_CITIES=monaco BENCH_FLEET_SIZES=25x2,100x5 python -m bench.fleet   # a quick run

Instances: per shared city, one seeded draw of 501 places on the car roads
(bench/optimize_instances.py: snapped, mutually reachable, 15 m apart), with the route
service's car duration and distance matrices computed in this process. Place 0 is the depot
every vehicle leaves and returns to; jobs are places 1..n. Per (jobs x vehicles):
- shift 8 h for every vehicle, two capacity dimensions, each 1.15 x the jobs' total demand
  shared among the vehicles (so capacity binds), service 2-10 min, three jobs in four with one
  time window of 1-3 h opening in the first 5 h (the others any time);
- default costs (VROOM's 3600 per hour driven): the objective of every solver is the driving
  time of all routes, after serving as many jobs as possible.

Per instance:
- references, each on the same matrices, one process each, two at a time, cached under
  var/bench-cache/fleet/references by instance key: VROOM (exploration level 5, one thread,
  BENCH_FLEET_REFERENCE_SECONDS = 60 s at most) and PyVRP (the model of
  optimize_service/fleet/pyvrp.py, every job required, 60 s); the reference is the better of
  the two (fewer jobs left out, then less driving);
- ours: the service's portfolio on the same problem (`methods_for`: PyVRP and the VROOM-then-
  PyVRP chain, each in its own worker process, at the default time limit), then its answer
  body (`fleet_body`, no geometry);
- every answer, ours and the references', goes through the independent feasibility checker
  (optimize_service/fleet/check.py) on the bench's own matrices;
- once per city with 100 jobs: the whole request through the gateway (real processes, wall time),
  checked on the platform's own matrix at startTime (`platform_roads`).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.optimize_instances import (
    CITIES,
    DRAW_VERSION,
    ROUND_TRIP,
    SEED,
    extract_hash,
    instance,
    network,
    write_atomic,
)
from common.config import REPO_ROOT
from common.geo import LatLon
from optimize_service.fleet.check import Infeasible, Roads, check_feasible, request_points
from optimize_service.fleet.formatter import fleet_body
from optimize_service.fleet.model import FleetPlan
from optimize_service.fleet.parsing import parse_fleet_request
from optimize_service.fleet.planner import locate
from optimize_service.fleet.problem import FleetProblem, FleetSolution
from optimize_service.fleet.reasons import explain
from optimize_service.fleet.solver import (
    better,
    methods_for,
    solve_method,
    warm_up_fleet,
)
from route_service.model import MatrixQuery

CACHE_DIR = REPO_ROOT / "var" / "bench-cache" / "fleet"
POOL = 501  # the depot and up to 500 jobs
START = "2026-11-23T08:00:00+01:00"
SHIFT_S = 8 * 3600
GAP_GOAL_PCT = 1.0
WALL_GOAL_S = 2.0  # 100 jobs x 5 vehicles end to end
SIZES = tuple(
    tuple(int(x) for x in item.split("x"))
    for item in os.environ.get("BENCH_FLEET_SIZES", "25x2,100x5,200x10,500x20").split(",")
)
BENCH_CITIES = [c.strip() for c in os.environ.get("BENCH_FLEET_CITIES", ",".join(CITIES)).split(",")]
REFERENCE_SECONDS = float(os.environ.get("BENCH_FLEET_REFERENCE_SECONDS", "60"))
E2E_REPEATS = int(os.environ.get("BENCH_FLEET_E2E_REPEATS", "3"))
INSTANCE_VERSION = 1  # in every cache key: raise it when the instance rules above change
VROOM, PYVRP = "vroom", "pyvrp"
PROCESSES = 2
WALL_CAP = 3.0  # a CPU-timed reference gives up after this many times its seconds of wall time
NO_PLAN = 10**12  # the driving seconds of "no plan"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- places and matrices


@dataclass(frozen=True)
class Pool:
    city: str
    points: list[LatLon]
    durations: np.ndarray  # seconds, float, as the route service answers
    distances: np.ndarray  # metres


def pool_file(city: str) -> Path:
    return CACHE_DIR / "pools" / f"{city}-{extract_hash(city)}-d{DRAW_VERSION}-s{SEED}-n{POOL}.npz"


def pool(city: str) -> Pool:
    path = pool_file(city)
    if not path.exists():
        drawn = instance(city, POOL, ROUND_TRIP)
        points = [LatLon(lat, lon) for lat, lon in drawn.coordinates]
        result = network(city).provider.matrix(MatrixQuery(points, points, "car", "fastest"))
        durations = np.asarray(result.durations_s, dtype=np.float64).reshape(POOL, POOL)
        distances = np.asarray(result.distances_m, dtype=np.float64).reshape(POOL, POOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, points=np.array(drawn.coordinates), durations=durations, distances=distances)
        os.replace(tmp, path)
    with np.load(path) as data:
        points = [LatLon(float(lat), float(lon)) for lat, lon in data["points"]]
        return Pool(city, points, np.array(data["durations"]), np.array(data["distances"]))


# ---------------------------------------------------------------- instances


@dataclass(frozen=True)
class FleetInstance:
    city: str
    jobs: int
    vehicles: int
    body: dict[str, Any]  # the request, as a client sends it
    key: str

    @property
    def name(self) -> str:
        return f"{self.city} {self.jobs}x{self.vehicles}"


def at(seconds: int) -> str:
    return (datetime.fromisoformat(START) + timedelta(seconds=seconds)).isoformat()


def point_body(point: LatLon) -> dict[str, float]:
    return {"lat": point.lat, "lon": point.lon}


def fleet_instance(city: str, jobs: int, vehicles: int) -> FleetInstance:
    places = pool(city).points
    rng = random.Random(f"{SEED}-{city}-{jobs}-{vehicles}")
    items = []
    for j in range(jobs):
        item: dict[str, Any] = {
            "id": f"j{j}",
            "location": point_body(places[1 + j]),
            "serviceTime": rng.choice([120, 180, 300, 600]),
            "demand": [rng.randint(1, 10), rng.randint(1, 4)],
        }
        if rng.random() < 0.75:
            opens = rng.randrange(0, 5 * 3600)
            item["timeWindows"] = [{"start": at(opens), "end": at(opens + rng.choice([3600, 7200, 10800]))}]
        items.append(item)
    capacity = [math.ceil(1.15 * sum(i["demand"][d] for i in items) / vehicles) for d in (0, 1)]
    depot = point_body(places[0])
    fleet = [
        {
            "id": f"v{v}",
            "start": depot,
            "end": depot,
            "capacity": capacity,
            "shift": {"start": at(0), "end": at(SHIFT_S)},
        }
        for v in range(vehicles)
    ]
    body = {"startTime": START, "vehicles": fleet, "jobs": items}
    key = f"{city}-{extract_hash(city)}-d{DRAW_VERSION}-s{SEED}-f{INSTANCE_VERSION}-{jobs}x{vehicles}"
    return FleetInstance(city, jobs, vehicles, body, key)


def problem_of(inst: FleetInstance, threads: int = 2, time_limit_s: float | None = None) -> FleetProblem:
    """The problem the service would solve for this request (its matrices rounded as the
    planner rounds the route service's)."""
    request = parse_fleet_request(inst.body, datetime.now(UTC))
    if time_limit_s is not None:  # beyond the API's limit for the references
        request = replace(request, time_limit_s=time_limit_s)
    points, where = locate(request)
    places = pool(inst.city)
    index = {p: i for i, p in enumerate(places.points)}
    rows = [index[p] for p in points.points]
    cut = np.ix_(rows, rows)
    seconds = np.rint(places.durations[cut]).astype(np.int64)
    metres = np.rint(places.distances[cut]).astype(np.int64)
    return FleetProblem(request, where, {"car": seconds}, {"car": metres}, threads=threads)


def answer_of(problem: FleetProblem, solution: FleetSolution, method: str) -> dict[str, Any]:
    plan = FleetPlan(
        request=problem.request,
        locations=locate(problem.request)[0].points,
        routes=solution.routes,
        unassigned=[explain(item, problem) for item in solution.unassigned],
        solver={"method": method},
    )
    return fleet_body(plan)


def roads_of(inst: FleetInstance) -> Roads:
    """The checker's matrix: the route service's, unrounded, over the request's points."""
    places = pool(inst.city)
    index = {(p.lat, p.lon): i for i, p in enumerate(places.points)}
    points = request_points(inst.body)
    rows = [index[(p["lat"], p["lon"])] for p in points]
    return Roads(points, places.durations[np.ix_(rows, rows)], places.distances[np.ix_(rows, rows)])


@dataclass(frozen=True)
class Scored:
    """One answer: jobs left out, driving seconds, wall seconds, and whether the checker passed."""

    unassigned: int
    driving_s: int
    wall_s: float
    feasible: bool
    method: str = ""
    cpu_s: float | None = None

    @property
    def objective(self) -> tuple[int, int]:
        return (self.unassigned, self.driving_s)


def score(inst: FleetInstance, answer: dict[str, Any] | None, wall_s: float, cpu_s: float | None = None) -> Scored:
    if answer is None:  # PyVRP found no plan serving every job
        return Scored(inst.jobs, NO_PLAN, wall_s, False, "", cpu_s)
    totals = answer["totals"]
    return Scored(totals["unassigned"], totals["duration"], wall_s, passes(inst, answer), answer["solver"]["method"], cpu_s)


def passes(inst: FleetInstance, answer: dict[str, Any]) -> bool:
    """Whether the independent checker finds no rule broken (on the bench's own matrices)."""
    try:
        check_feasible(inst.body, answer, roads_of(inst))
    except Infeasible as exc:
        log(f"   {inst.name} {answer['solver']['method']}: INFEASIBLE {exc}")
        return False
    return True


# ---------------------------------------------------------------- references


def reference_file(key: str, solver: str) -> Path:
    return CACHE_DIR / "references" / f"{key}-{solver}-{REFERENCE_SECONDS:g}.json"


def vroom_reference(problem: FleetProblem) -> FleetSolution | None:
    from optimize_service.fleet.solver import solve_vroom

    return solve_vroom(problem)


class CpuTime:
    """PyVRP's stop after this process's CPU seconds (the machine is shared: 60 s of wall time
    gave a reference 10-17 s of CPU with others' work running), or WALL_CAP times as much wall."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def __call__(self, best_cost: float) -> bool:
        used = time.process_time() - self.cpu
        return used >= self.seconds or time.perf_counter() - self.wall >= WALL_CAP * self.seconds


def pyvrp_reference(problem: FleetProblem) -> FleetSolution | None:
    """PyVRP with its own default settings (not the service's, `solve_params`): the reference
    does not move when the service's search is tuned."""
    from pyvrp import SolveParams

    from optimize_service.fleet.pyvrp import solve_pyvrp

    return solve_pyvrp(problem, REFERENCE_SECONDS, stop=CpuTime(REFERENCE_SECONDS), params=SolveParams())


REFERENCES: dict[str, Callable[[FleetProblem], FleetSolution | None]] = {VROOM: vroom_reference, PYVRP: pyvrp_reference}


def compute_reference(city: str, jobs: int, vehicles: int, solver: str) -> None:
    """In a worker process: one reference, written to its cache file (the answer body)."""
    inst = fleet_instance(city, jobs, vehicles)
    problem = problem_of(inst, threads=1, time_limit_s=REFERENCE_SECONDS)
    began, cpu = time.perf_counter(), time.process_time()
    solution = REFERENCES[solver](problem)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    answer = None if solution is None else answer_of(problem, solution, solver)
    record = {"solver": solver, "seconds": REFERENCE_SECONDS, "wall_s": wall, "cpu_s": cpu, "answer": answer}
    write_atomic(reference_file(inst.key, solver), json.dumps(record).encode())


def load_reference(inst: FleetInstance, solver: str) -> Scored | None:
    """The cached reference, whatever CPU it got (shown in the table: on a machine shared with
    other work a PyVRP reference may hit its wall-time cap first, and VROOM's timeout is wall
    time only); delete the file to compute it again."""
    path = reference_file(inst.key, solver)
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    return score(inst, record["answer"], float(record["wall_s"]), float(record["cpu_s"]))


def references(insts: list[FleetInstance]) -> dict[tuple[str, str], Scored]:
    found: dict[tuple[str, str], Scored] = {}
    missing = []
    for inst in sorted(insts, key=lambda i: -i.jobs):
        for solver in (PYVRP, VROOM):
            cached = load_reference(inst, solver)
            if cached is None:
                missing.append((inst, solver))
            else:
                found[inst.key, solver] = cached
    if missing:
        log(f"   references: {len(missing)} to compute ({len(found)} cached), {PROCESSES} processes")
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=PROCESSES, mp_context=context) as pool_:
            futures = {
                pool_.submit(compute_reference, i.city, i.jobs, i.vehicles, solver): (i, solver)
                for i, solver in missing
            }
            for done, future in enumerate(as_completed(futures), 1):
                future.result()
                inst, solver = futures[future]
                scored = load_reference(inst, solver)
                assert scored is not None
                found[inst.key, solver] = scored
                log(
                    f"   reference {done}/{len(missing)}: {inst.name} {solver} {scored.objective}, "
                    f"{scored.cpu_s or 0:.0f} s of CPU in {scored.wall_s:.0f} s"
                )
    return found


# ---------------------------------------------------------------- ours


def timed_search(problem: FleetProblem, method: str, cpu_limit: bool) -> tuple[FleetSolution | None, float]:
    """One search of the portfolio in a worker process, and the CPU seconds it got. `cpu_limit`:
    PyVRP stops after its time in CPU seconds of this process (as on an idle machine, a core
    each) instead of wall seconds (VROOM's limit is wall time either way)."""
    began = time.process_time()
    found = solve_method(problem, method, stop_after=CpuTime if cpu_limit else None)
    return found, time.process_time() - began


def ours(inst: FleetInstance, searches: ProcessPoolExecutor, cpu_limit: bool) -> Scored:
    """As the planner solves with two processes in its lane (`fleet.planner.solve_in`): each
    search of the portfolio in its own process at once, on one thread each, the better kept;
    `cpu_s` is the kept search's."""
    problem = problem_of(inst)
    methods = methods_for(problem.request)
    alone = replace(problem, threads=1) if len(methods) > 1 else problem
    began = time.perf_counter()
    futures = [searches.submit(timed_search, alone, m, cpu_limit) for m in methods]
    found = [future.result() for future in futures]
    wall = time.perf_counter() - began
    solution = better([item for item, _ in found])
    cpu = next(seconds for item, seconds in found if item is solution)
    return score(inst, answer_of(problem, solution, solution.method), wall, cpu)


def search_processes() -> ProcessPoolExecutor:
    """Two solver processes, warmed up as the service's are."""
    searches = ProcessPoolExecutor(max_workers=PROCESSES, mp_context=multiprocessing.get_context("spawn"))
    for future in [searches.submit(warm_up_fleet) for _ in range(PROCESSES)]:
        future.result()
    return searches


def gap_pct(mine: Scored, best: Scored) -> float:
    if mine.unassigned != best.unassigned:
        return math.inf if mine.unassigned > best.unassigned else -math.inf
    return 100.0 * (mine.driving_s - best.driving_s) / best.driving_s


# ---------------------------------------------------------------- end to end


def end_to_end(city: str, repeats: int) -> list[float]:
    """Wall seconds of the 100 x 5 request through the gateway (real processes)."""
    from bench.optimize import city_stack

    with tempfile.TemporaryDirectory() as data, city_stack(city, Path(data)) as client:
        return fleet_walls(client, fleet_instance(city, 100, 5), repeats)


def end_to_end_merged(repeats: int) -> dict[str, list[float] | str]:
    """Every city's 100 x 5 request on one platform serving all five extracts as one map."""
    from bench.optimize import SMALL_SIZE, merged_stack

    walls: dict[str, list[float] | str] = {}
    with tempfile.TemporaryDirectory() as data:
        warm = instance(BENCH_CITIES[0], SMALL_SIZE, ROUND_TRIP)
        with merged_stack(Path(data), warm) as client:
            for city in BENCH_CITIES:
                try:
                    walls[city] = fleet_walls(client, fleet_instance(city, 100, 5), repeats)
                except AssertionError as exc:
                    walls[city] = (str(exc).splitlines() or ["failed"])[0][:200]
    return walls


def fleet_walls(client: Any, inst: FleetInstance, repeats: int, searched: list[float] | None = None) -> list[float]:
    """Seconds of each answer through the gateway; `searched` gets each answer's solver.timeLimit."""
    from bench.optimize import http

    url, headers = client.stack.base_url + "/v1/optimize/routes", {"Authorization": f"Bearer {client.token}"}
    http(url, inst.body, headers)  # the first fleet request warms VROOM's process
    roads = platform_roads(client, inst.body)
    walls = []
    for _ in range(repeats):
        answer = http(url, inst.body, headers)
        assert answer.status == 200, (answer.status, answer.body)
        check_feasible(inst.body, answer.body, roads)
        walls.append(answer.wall_s)
        if searched is not None:
            searched.append(float(answer.body["solver"]["timeLimit"]))
    return walls


def platform_roads(client: Any, body: dict[str, Any]) -> Roads:
    """The checker's matrix for answers through the gateway: the platform's own (car) at the
    request's startTime, as the planner asks for it (without departureTime another provider
    answers, and the pool's matrix differs too: on Monaco a leg 161 s shorter)."""
    from bench.optimize import http

    points = request_points(body)
    # The planner's matrix leaves at startTime (rules by time, issue 33): so does the checker's.
    query = {"sources": points, "annotations": ["duration", "distance"], "departureTime": body["startTime"]}
    answer = http(client.stack.base_url + "/v1/matrix", query, {"Authorization": f"Bearer {client.token}"})
    assert answer.status == 200, (answer.status, answer.body)
    durations, distances = (np.array(answer.body[key], dtype=np.float64) for key in ("durations", "distances"))
    return Roads(points, durations, distances)


def end_to_end_tries(city: str, repeats: int, tries: int = 2) -> list[float] | str:
    """The walls, or why the stack did not start (on a loaded machine a service's warm-up
    search may fail: the stack is started again once)."""
    from launcher.stack import StartupError

    reason = ""
    for _ in range(tries):
        try:
            return end_to_end(city, repeats)
        except (StartupError, AssertionError, OSError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            log(f"   {city}: {reason}")
    return reason


# ---------------------------------------------------------------- the section


def cell(result: Scored | None) -> str:
    """Driving seconds (jobs left out); `none` where PyVRP served not every job."""
    if result is None or result.driving_s >= NO_PLAN:
        return "none"
    return f"{result.driving_s} ({result.unassigned})"


def checked(result: Scored | None) -> str:
    if result is None or result.driving_s >= NO_PLAN:
        return "-"
    return "✓" if result.feasible else "✗"


def cpu(result: Scored | None) -> str:
    if result is None or result.cpu_s is None:
        return "-"
    return f"{result.cpu_s:.1f}" if result.cpu_s < 10 else f"{result.cpu_s:.0f}"


def row(inst: FleetInstance, mine: Scored, idle: Scored, refs: dict[str, Scored | None]) -> str:
    vroom, pyvrp = refs[VROOM], refs[PYVRP]
    best = best_reference(refs)
    return (
        f"| {inst.city} | {inst.jobs} x {inst.vehicles} | {cell(mine)} | {mine.method} | {gap_pct(mine, best):+.2f} | "
        f"{mine.wall_s:.2f} | {cpu(mine)} | {cell(idle)} | {gap_pct(idle, best):+.2f} | {cell(vroom)} | {cell(pyvrp)} | "
        f"{cpu(vroom)} / {cpu(pyvrp)} | {checked(mine)} {checked(idle)} {checked(vroom)} {checked(pyvrp)} |"
    )


def best_reference(refs: dict[str, Scored | None]) -> Scored:
    return min((r for r in refs.values() if r is not None and r.feasible), key=lambda r: r.objective)


def run() -> str:
    insts = [fleet_instance(city, jobs, vehicles) for city in BENCH_CITIES for jobs, vehicles in SIZES]
    refs = references(insts)
    rows: list[str] = []
    gaps: dict[tuple[int, int], list[tuple[float, float]]] = {}
    searches = search_processes()
    for inst in insts:
        mine, idle = ours(inst, searches, cpu_limit=False), ours(inst, searches, cpu_limit=True)
        inst_refs = {solver: refs.get((inst.key, solver)) for solver in (VROOM, PYVRP)}
        best = best_reference(inst_refs)
        rows.append(row(inst, mine, idle, inst_refs))
        log(rows[-1])
        gaps.setdefault((inst.jobs, inst.vehicles), []).append((gap_pct(mine, best), gap_pct(idle, best)))
    searches.shutdown()
    walls = {city: end_to_end_tries(city, E2E_REPEATS) for city in BENCH_CITIES} if E2E_REPEATS else {}
    merged = end_to_end_merged(E2E_REPEATS) if E2E_REPEATS else {}
    return section(rows, gaps, walls, len(insts), merged)


def wall_row(city: str, walls: list[float] | str) -> str:
    if isinstance(walls, str):
        return f"| {city} | not measured: {walls} | | |"
    return (
        f"| {city} | {statistics.median(walls):.2f} | {max(walls):.2f} | {'✓' if max(walls) <= WALL_GOAL_S else '✗'} |"
    )


def summary_row(jobs: int, vehicles: int, found: list[tuple[float, float]]) -> str:
    wall, idle = [g for g, _ in found], [g for _, g in found]
    return (
        f"| {jobs} x {vehicles} | {len(found)} | {statistics.median(wall):+.2f} | {max(wall):+.2f} | "
        f"{statistics.median(idle):+.2f} | {max(idle):+.2f} | {'✓' if max(idle) <= GAP_GOAL_PCT else '✗'} |"
    )


def section(
    rows: list[str],
    gaps: dict[tuple[int, int], list[tuple[float, float]]],
    walls: dict[str, list[float] | str],
    count: int,
    merged: dict[str, list[float] | str] | None = None,
) -> str:
    summary = [summary_row(jobs, vehicles, found) for (jobs, vehicles), found in gaps.items()]
    e2e = [wall_row(city, w) for city, w in walls.items()]
    e2e_merged = [wall_row(city, w) for city, w in (merged or {}).items()]
    return "\n".join(
        [
            "## Fleet routing quality (POST /v1/optimize/routes)",
            "",
            f"Command: `python -m bench fleet` (BENCH_FLEET_CITIES={','.join(BENCH_CITIES)}, BENCH_FLEET_SIZES="
            f"{','.join(f'{j}x{v}' for j, v in SIZES)}, BENCH_FLEET_REFERENCE_SECONDS={REFERENCE_SECONDS:g}). "
            f"{count} seeded instances on each city's car road matrices (depot and jobs drawn as in "
            "`bench/optimize_instances.py`, 8 h shifts, two binding capacity dimensions, three jobs in four with a "
            "1-3 h window, service 2-10 min). Objective: jobs left out, then driving seconds of all routes (VROOM's "
            "cost at its default 3600 per hour). References: VROOM exploration level 5 (one thread, at most "
            f"{REFERENCE_SECONDS:g} s of wall time, its only limit) and PyVRP ({REFERENCE_SECONDS:g} s of CPU, "
            f"at most {WALL_CAP:g} x as much wall time, every job required); the gap is against the better one. "
            "Ours: the service's portfolio (PyVRP, and VROOM for a quarter of the limit then PyVRP with another seed from its plan) in two worker processes at its default time limit, twice: as the service "
            "runs it (limits in wall time, on this machine shared with other work) and with PyVRP's limit counted "
            "in CPU seconds of its process (what a core of its own gives; the goal's column). The CPU columns say "
            "what each search got. Every answer, ours and the references', went through the independent "
            "feasibility checker (`optimize_service/fleet/check.py`): ✓ passed, - no plan. Cells: driving seconds "
            "(jobs left out).",
            "",
            "| jobs x vehicles | instances | gap median, wall limit (%) | gap max, wall limit (%) | "
            "gap median, CPU limit (%) | gap max, CPU limit (%) | max ≤ 1 % (CPU limit) |",
            "|---|---|---|---|---|---|---|",
            *summary,
            "",
            "| city | jobs x vehicles | ours | method | gap (%) | ours wall (s) | ours CPU (s) | ours, CPU limit | "
            "gap, CPU limit (%) | VROOM L5 | PyVRP | reference CPU (s) VROOM / PyVRP | checker: ours, CPU limit, "
            "VROOM, PyVRP |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"End to end, 100 jobs x 5 vehicles through the gateway (auth, route and optimize services as real "
            f"processes, matrix, solve, five geometries), {E2E_REPEATS} repeats after one warm-up; goal "
            f"{WALL_GOAL_S:g} s:",
            "",
            "| city | wall median (s) | wall max (s) | max ≤ goal |",
            "|---|---|---|---|",
            *e2e,
            "",
            'The same requests on one platform serving all five extracts loaded as one map (`bench/maps.py` "all"), '
            "each answer checked against the city's own matrices:",
            "",
            "| city | wall median (s) | wall max (s) | max ≤ goal |",
            "|---|---|---|---|",
            *(e2e_merged or ["| - | not measured | | |"]),
        ]
    )


if __name__ == "__main__":
    print(run())
