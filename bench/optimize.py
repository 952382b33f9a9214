"""Benchmark of stop-order optimization: our solver against three references on the same road
matrices, the whole request through the gateway, and the service under load.

    python -m bench.optimize            # prints the Markdown section; `python -m bench optimize` writes it
    BENCH_OPTIMIZE_REFERENCE_SECONDS=2 BENCH_OPTIMIZE_SIZES=25,100,200 \\
        BENCH_OPTIMIZE_CITIES=heidelberg,monaco python -m bench.optimize    # a quick run

Instances (bench/optimize_instances.py): seeded stops on the car roads of every shared extract,
25 to 1000 stops as far as the extract holds them, open tours, fixed destinations and round
trips, with OSRM matrices computed in this process. Per instance:
- references (bench/optimize_references.py): VROOM (level 5), OR-Tools guided local search and
  PyVRP, each given BENCH_OPTIMIZE_REFERENCE_SECONDS (60) on the matrix, run two at a time and
  cached on disk; the reference is the shortest of the three;
- ours in this process as the service solves: every search of `optimize_service.stops.solver.searches`
  at once, one per process, the shortest tour wins (so a changed portfolio is measured as is);
- end to end for the round trips: auth, route and optimize services and the gateway as real
  processes (`launcher.stack.Stack`, one stack per city), wall time of the whole request.
Under load, on the first city holding 1000 stops: the route service's memory around a
1000-stop request, a 20-stop request's latency while two 1000-stop requests run, and a burst
of 1000-stop requests at once (how many are refused with 503 and Retry-After).

Other knobs: BENCH_OPTIMIZE_SHAPES, BENCH_OPTIMIZE_E2E_REPEATS (3), BENCH_OPTIMIZE_FAIRNESS_TRIES
(20), BENCH_OPTIMIZE_BURST (8), BENCH_OPTIMIZE_LOAD (1; 0 skips the load measurements).
`run()` returns the Markdown section; progress goes to stderr.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.maps import map_dir
from bench.optimize_instances import (
    CACHE_DIR,
    CAPACITY_FACTOR,
    CITIES,
    ROUND_TRIP,
    SHAPES,
    SIZES,
    SNAP_M,
    SPACING_M,
    Instance,
    capacity,
    instance,
    instances,
    network,
    supported_sizes,
)
from bench.optimize_references import MIN_CPU_SHARE, SOLVERS, VROOM_LEVEL, Result, references, tour_duration
from common.config import DEFAULT_PORTS
from launcher.redis_server import free_port
from launcher.stack import Stack
from optimize_service.config import default_solver_processes
from optimize_service.stops.solver import Tour, TourProblem, needs_search, searches, shortest, solve, warm_up

GAP_GOAL_PCT = 1.0
WALL_GOALS_S = {100: 1.0, 200: 2.0, 500: 5.0, 1000: 10.0}  # none below 100 stops
FAIRNESS_GOAL_S = 1.5
MEMORY_GOAL_MIB = 150.0
NEAR_IDLE_MIB = 30.0  # "back near idle" 5 s after the large request
LOAD_SIZE, SMALL_SIZE = 1000, 20
SOLVER_NAMES = {"vroom": f"VROOM (level {VROOM_LEVEL})", "ortools": "OR-Tools GLS", "pyvrp": "PyVRP"}
Json = Any


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    cities: list[str]
    sizes: list[int]
    shapes: list[str]
    reference_s: float
    e2e_repeats: int
    fairness_tries: int
    burst: int
    load: bool
    merged: bool  # the round trips again on all five extracts loaded as one map

    @property
    def full(self) -> bool:
        return (self.cities, self.sizes, self.shapes) == (list(CITIES), list(SIZES), list(SHAPES))


def env_list(name: str, default: Sequence[str]) -> list[str]:
    raw = os.environ.get(name, "")
    return [part.strip() for part in raw.split(",") if part.strip()] or list(default)


def settings_from_env() -> Settings:
    return Settings(
        cities=env_list("BENCH_OPTIMIZE_CITIES", CITIES),
        sizes=[int(size) for size in env_list("BENCH_OPTIMIZE_SIZES", [str(s) for s in SIZES])],
        shapes=env_list("BENCH_OPTIMIZE_SHAPES", SHAPES),
        reference_s=float(os.environ.get("BENCH_OPTIMIZE_REFERENCE_SECONDS", "60")),
        e2e_repeats=int(os.environ.get("BENCH_OPTIMIZE_E2E_REPEATS", "3")),
        fairness_tries=int(os.environ.get("BENCH_OPTIMIZE_FAIRNESS_TRIES", "20")),
        burst=int(os.environ.get("BENCH_OPTIMIZE_BURST", "8")),
        load=os.environ.get("BENCH_OPTIMIZE_LOAD", "1") != "0",
        merged=os.environ.get("BENCH_OPTIMIZE_MERGED", "1") != "0",
    )


# ---------------------------------------------------------------- ours, in this process


@dataclass(frozen=True)
class Ours:
    duration_s: float
    method: str
    wall_s: float


class ServiceSolver:
    """The optimize service's solving without HTTP: its solver processes (spawned, warmed up),
    and per problem every search of the portfolio at once, one per process, the shortest tour
    (as a solver lane of optimize_service does; one search alone with a single process)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self.pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"))
        for future in [self.pool.submit(warm_up) for _ in range(processes)]:
            future.result()

    def solve(self, inst: Instance) -> Ours:
        problem = TourProblem(inst.durations, inst.start, inst.end)
        started = time.perf_counter()
        if not needs_search(problem) or self.processes < 2:
            tour: Tour = self.pool.submit(solve, problem).result()
        else:
            chosen = searches(inst.size)[: self.processes]
            tour = shortest([f.result() for f in [self.pool.submit(solve, problem, s) for s in chosen]])
        wall = time.perf_counter() - started
        return Ours(tour_duration(inst, tour.order), tour.method, wall)

    def close(self) -> None:
        self.pool.shutdown()


def solve_ours(insts: list[Instance]) -> dict[str, Ours]:
    solver = ServiceSolver(default_solver_processes())
    try:
        found = {}
        for inst in insts:
            found[inst.key] = solver.solve(inst)
            log(f"   ours {inst.key}: {found[inst.key].duration_s:.0f} s in {found[inst.key].wall_s:.2f} s")
        return found
    finally:
        solver.close()


# ---------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Json
    wall_s: float


def http(url: str, body: Json, headers: dict[str, str] | None = None, timeout: float = 120) -> Answer:
    data = json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 - loopback
            status, head, raw = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        status, head, raw = exc.code, dict(exc.headers), exc.read()
    wall = time.perf_counter() - started
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = raw.decode(errors="replace")
    return Answer(status, head, parsed, wall)


@dataclass
class Client:
    stack: Stack
    token: str

    def optimize(self, inst: Instance, query: str = "") -> Answer:
        return http(
            self.stack.base_url + "/v1/optimize/stops" + query, stops_body(inst), {"Authorization": f"Bearer {self.token}"}
        )


def stops_body(inst: Instance) -> list[Json]:
    return [
        {
            "name": f"stop {i}",
            "coordinate": {"lat": lat, "lon": lon},
            "start": i == inst.start,
            "destination": i == inst.end,
        }
        for i, (lat, lon) in enumerate(inst.coordinates)
    ]


def answered_order(inst: Instance, body: Json) -> list[int]:
    """The visiting order in request indexes; a round trip's answer repeats the start at the end."""
    order = [int(stop["index"]) for stop in body["stops"]]
    return order[:-1] if inst.end == inst.start and len(order) == inst.size + 1 else order


@contextmanager
def city_stack(city: str, data_dir: Path) -> Iterator[Client]:
    """Auth, route and optimize services and the gateway on the city's cached map."""
    network(city)  # imports the map into the cache (a no-op when done) and makes it current there
    with platform_stack(CACHE_DIR / "maps" / city, data_dir, instance(city, SMALL_SIZE, ROUND_TRIP)) as client:
        yield client


@contextmanager
def merged_stack(data_dir: Path, warm_up_with: Instance) -> Iterator[Client]:
    """The same platform on all five extracts imported together as one map (`bench.maps`)."""
    with platform_stack(map_dir("all"), data_dir, warm_up_with) as client:
        yield client


@contextmanager
def platform_stack(maps: Path, data_dir: Path, warm_up_with: Instance) -> Iterator[Client]:
    stack = Stack(
        data_dir=data_dir,
        ports={name: free_port() for name in DEFAULT_PORTS},
        redis_port=free_port(),
        services=["auth_service", "route_service", "optimize_service"],
        extra_env={"LOG_LEVEL": "WARNING", "MAP_DIR": str(maps)},
    )
    stack.start()
    try:
        client = Client(stack, stack.login())
        client.optimize(warm_up_with)  # first requests load OSRM and solvers
        yield client
    finally:
        stack.stop()


# ---------------------------------------------------------------- end to end


@dataclass(frozen=True)
class EndToEnd:
    inst: Instance
    walls_s: list[float]
    duration_s: float
    method: str


def end_to_end(client: Client, inst: Instance, repeats: int) -> EndToEnd:
    walls: list[float] = []
    answer: Answer | None = None
    for _ in range(repeats):
        answer = client.optimize(inst)
        assert answer.status == 200, (answer.status, answer.body)
        walls.append(answer.wall_s)
    assert answer is not None
    duration = tour_duration(inst, answered_order(inst, answer.body))
    return EndToEnd(inst, walls, duration, str(answer.body["solver"]["method"]))


# ---------------------------------------------------------------- memory of the route service


def descendants(root: int) -> list[int]:
    """The process and every process below it (the route service forks its workers, and they
    may start helper processes)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass  # the process ended between listing and reading
    return 0.0


def route_rss_mib(stack: Stack) -> tuple[float, int]:
    """Sum of VmRSS over the route service's processes (forked ones share pages, so the sum
    overstates what they use together; its changes are what the goal is about), and their count."""
    pids = descendants(stack.processes["route_service"].pid)
    return sum(rss_mib(pid) for pid in pids), len(pids)


@dataclass
class Sampler:
    """Samples the route service's RSS every 50 ms in a thread; keeps the peak."""

    stack: Stack
    peak_mib: float = 0.0
    processes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _loop(self) -> None:
        while not self._stop.is_set():
            total, count = route_rss_mib(self.stack)
            self.peak_mib, self.processes = max(self.peak_mib, total), max(self.processes, count)
            time.sleep(0.05)

    @contextmanager
    def running(self) -> Iterator[Sampler]:
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()


@dataclass(frozen=True)
class Memory:
    idle_mib: float
    peak_mib: float
    after_mib: float
    processes: int
    status: int
    wall_s: float


def memory(client: Client, big: Instance) -> Memory:
    time.sleep(2)  # the warm-up's work settles
    idle, _count = route_rss_mib(client.stack)
    with Sampler(client.stack).running() as sampler:
        answer = client.optimize(big)
    time.sleep(5)
    after, _count = route_rss_mib(client.stack)
    return Memory(idle, sampler.peak_mib, after, sampler.processes, answer.status, answer.wall_s)


# ---------------------------------------------------------------- fairness and bursts


@dataclass(frozen=True)
class Fairness:
    alone_s: list[float]
    loaded_s: list[float]
    statuses: Counter[int]
    big_statuses: Counter[int]
    overlapped: int  # tries that started while both large requests were in flight


@dataclass
class Busy:
    """Two threads sending the large request again and again, and how many are in flight."""

    client: Client
    big: Instance
    statuses: Counter[int] = field(default_factory=Counter)
    in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                self.in_flight += 1
            answer = self.client.optimize(self.big)
            with self._lock:
                self.in_flight -= 1
                self.statuses[answer.status] += 1
            if answer.status != 200:  # refused: wait (at most 1 s) instead of hammering
                self._stop.wait(min(1.0, float(answer.headers.get("Retry-After", 1))))

    @contextmanager
    def running(self, threads: int = 2) -> Iterator[Busy]:
        workers = [threading.Thread(target=self._loop) for _ in range(threads)]
        for worker in workers:
            worker.start()
        try:
            yield self
        finally:
            self._stop.set()
            for worker in workers:
                worker.join()


def fairness(client: Client, big: Instance, small: Instance, tries: int) -> Fairness:
    alone = [client.optimize(small).wall_s for _ in range(5)]
    loaded, statuses, overlapped = [], Counter[int](), 0
    with Busy(client, big).running() as busy:
        time.sleep(2.5)  # both large requests are past their matrix, solving or queued
        for _ in range(tries):
            overlapped += busy.in_flight >= 2
            answer = client.optimize(small)
            loaded.append(answer.wall_s)
            statuses[answer.status] += 1
    return Fairness(alone, loaded, statuses, busy.statuses, overlapped)


@dataclass(frozen=True)
class Burst:
    answers: list[Answer]
    seconds: float


def burst(client: Client, big: Instance, count: int) -> Burst:
    """`count` large requests released at the same moment."""
    barrier = threading.Barrier(count)
    answers: list[Answer | None] = [None] * count

    def send(slot: int) -> None:
        barrier.wait()
        answers[slot] = client.optimize(big)

    started = time.perf_counter()
    threads = [threading.Thread(target=send, args=(slot,)) for slot in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Burst([a for a in answers if isinstance(a, Answer)], time.perf_counter() - started)


# ---------------------------------------------------------------- the stacks


@dataclass
class Load:
    city: str
    memory: Memory
    fairness: Fairness
    burst: Burst


@dataclass(frozen=True)
class StackResults:
    e2e: list[EndToEnd]  # each city's round trips on a platform serving that extract alone
    load: Load | None
    merged: list[EndToEnd]  # the same round trips on one platform serving all five extracts


def stack_measurements(settings: Settings, insts: list[Instance]) -> StackResults:
    """One stack per city in turn: the round trips end to end; on the load city, first the
    memory (so that idle is idle), then the round trips, then fairness and the burst. Then
    one stack on all five extracts as one map: every round trip again."""
    load_city = next((c for c in settings.cities if LOAD_SIZE in supported_sizes(c)), None) if settings.load else None
    rows: list[EndToEnd] = []
    load: Load | None = None
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as tmp:
        for city in settings.cities:
            subset = [i for i in insts if i.city == city and i.shape == ROUND_TRIP]
            if not subset and city != load_city:
                continue
            log(f"   stack for {city}")
            with city_stack(city, Path(tmp) / city) as client:
                big = instance(city, LOAD_SIZE, ROUND_TRIP) if city == load_city else None
                mem = memory(client, big) if big is not None else None
                for inst in subset:
                    rows.append(end_to_end(client, inst, settings.e2e_repeats))
                    log(f"   end to end {inst.key}: {statistics.median(rows[-1].walls_s):.2f} s")
                if big is not None and mem is not None:
                    log("   fairness and burst")
                    small = instance(city, SMALL_SIZE, ROUND_TRIP)
                    fair = fairness(client, big, small, settings.fairness_tries)
                    load = Load(city, mem, fair, burst(client, big, settings.burst))
        merged = merged_measurements(settings, insts, Path(tmp) / "all") if settings.merged else []
    return StackResults(rows, load, merged)


def merged_measurements(settings: Settings, insts: list[Instance], data_dir: Path) -> list[EndToEnd]:
    round_trips = [i for i in insts if i.shape == ROUND_TRIP]
    if not round_trips:
        return []
    log("   stack for all five extracts as one map")
    rows = []
    with merged_stack(data_dir, instance(round_trips[0].city, SMALL_SIZE, ROUND_TRIP)) as client:
        for inst in round_trips:
            rows.append(end_to_end(client, inst, settings.e2e_repeats))
            log(f"   end to end on all five, {inst.key}: {statistics.median(rows[-1].walls_s):.2f} s")
    return rows


# ---------------------------------------------------------------- report


def gap_pct(value: float, best: float) -> float:
    return 100 * (value - best) / best


def mark(ok: bool | None) -> str:
    return "-" if ok is None else ("✓" if ok else "✗")


def wall_ok(size: int, wall: float) -> bool | None:
    goal = WALL_GOALS_S.get(size)
    return None if goal is None else wall <= goal


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the p99 of 20 values is the largest."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def best_of(refs: dict[tuple[str, str], Result], key: str) -> Result:
    return min((refs[key, s] for s in SOLVERS), key=lambda r: r.duration_s)


def best_solvers(refs: dict[tuple[str, str], Result], key: str) -> list[str]:
    """Every reference that found the best tour (ties are common up to 100 stops)."""
    best = best_of(refs, key).duration_s
    return [s for s in SOLVERS if refs[key, s].duration_s <= best + 0.05]


def instance_rows(insts: list[Instance], ours: dict[str, Ours], refs: dict[tuple[str, str], Result]) -> list[str]:
    rows = []
    for inst in insts:
        mine, best = ours[inst.key], best_of(refs, inst.key)
        gap = gap_pct(mine.duration_s, best.duration_s)
        cells = [f"{refs[inst.key, s].duration_s:.0f} / {refs[inst.key, s].wall_s:.1f}" for s in SOLVERS]
        rows.append(
            f"| {inst.city} | {inst.size} | {inst.shape} | {mine.duration_s:.0f} | {mine.method} | {mine.wall_s:.2f} | "
            + " | ".join(cells)
            + f" | {gap:+.2f} % | {mark(gap <= GAP_GOAL_PCT)} | {mark(wall_ok(inst.size, mine.wall_s))} |"
        )
    return rows


def size_summary(
    insts: list[Instance], ours: dict[str, Ours], refs: dict[tuple[str, str], Result], e2e: list[EndToEnd]
) -> list[str]:
    rows = []
    for size in sorted({i.size for i in insts}):
        group = [i for i in insts if i.size == size]
        gaps = [gap_pct(ours[i.key].duration_s, best_of(refs, i.key).duration_s) for i in group]
        walls = [ours[i.key].wall_s for i in group]
        http_walls = [statistics.median(r.walls_s) for r in e2e if r.inst.size == size]
        wins = Counter(ours[i.key].method for i in group)
        bests = Counter(s for i in group for s in best_solvers(refs, i.key))
        http_cell = f"{statistics.median(http_walls):.2f} / {max(http_walls):.2f}" if http_walls else "-"
        rows.append(
            f"| {size} | {len(group)} | {max(gaps):+.2f} % | {statistics.median(gaps):+.2f} % | "
            f"{sum(g <= GAP_GOAL_PCT for g in gaps)}/{len(group)} | {statistics.median(walls):.2f} / {max(walls):.2f} | "
            f"{http_cell} | {WALL_GOALS_S.get(size, '-')} | {counts(wins)} | {counts(bests)} |"
        )
    return rows


def counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counter.most_common())


def e2e_rows(e2e: list[EndToEnd], refs: dict[tuple[str, str], Result]) -> list[str]:
    rows = []
    for row in e2e:
        median = statistics.median(row.walls_s)
        gap = gap_pct(row.duration_s, best_of(refs, row.inst.key).duration_s)
        rows.append(
            f"| {row.inst.city} | {row.inst.size} | {median:.2f} | {max(row.walls_s):.2f} | "
            f"{mark(wall_ok(row.inst.size, median))} | {row.method} | {row.duration_s:.0f} | {gap:+.2f} % |"
        )
    return rows


def merged_section(merged: list[EndToEnd], own: list[EndToEnd], refs: dict[tuple[str, str], Result]) -> list[str]:
    """The round trips on one platform serving all five extracts, beside the same request on a
    platform serving the city's extract alone (the matrix, snapping and geometry run on the
    larger map; the solver sees the same problem)."""
    if not merged:
        return ["All five extracts as one map: skipped (BENCH_OPTIMIZE_MERGED=0, or no round trip in the run).", ""]
    alone = {row.inst.key: statistics.median(row.walls_s) for row in own}
    rows = []
    for row in merged:
        median = statistics.median(row.walls_s)
        gap = gap_pct(row.duration_s, best_of(refs, row.inst.key).duration_s)
        base = alone.get(row.inst.key)
        ratio = f"{median / base:.2f}" if base else "-"
        rows.append(
            f"| {row.inst.city} | {row.inst.size} | {median:.2f} | {max(row.walls_s):.2f} | "
            f"{mark(wall_ok(row.inst.size, median))} | {'-' if base is None else f'{base:.2f}'} | {ratio} | "
            f"{row.method} | {row.duration_s:.0f} | {gap:+.2f} % | {mark(gap <= GAP_GOAL_PCT)} |"
        )
    return [
        "All five extracts loaded as one map (one platform whose map holds Heidelberg, Munich, Helsinki, Monaco and "
        'Andorra, `bench/maps.py` "all"): the same round trips, the same repeats; the tour is scored on the '
        "city's own matrix, so a different matrix on the larger map would show as a gap:",
        "",
        "| city | stops | wall median (s) | wall max (s) | goal | alone: wall median (s) | ratio | method | tour (s) | gap | ≤ 1 % |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def load_section(load: Load | None, settings: Settings) -> list[str]:
    if load is None:
        return ["Load measurements skipped (BENCH_OPTIMIZE_LOAD=0, or no city of the run holds 1000 stops)."]
    mem, fair = load.memory, load.fairness
    rise = mem.peak_mib - mem.idle_mib
    p99 = percentile(fair.loaded_s, 99)
    return [
        f"Under load ({load.city}, {LOAD_SIZE}- and {SMALL_SIZE}-stop round trips through the gateway):",
        "",
        f"- **Route service memory** (VmRSS summed over its {mem.processes} processes): idle {mem.idle_mib:.0f} MiB, "
        f"peak during a {LOAD_SIZE}-stop request {mem.peak_mib:.0f} MiB (+{rise:.0f} MiB; goal ≤ +{MEMORY_GOAL_MIB:.0f}: "
        f"{mark(rise <= MEMORY_GOAL_MIB)}), 5 s after {mem.after_mib:.0f} MiB (+{mem.after_mib - mem.idle_mib:.0f}; "
        f"back near idle, ≤ +{NEAR_IDLE_MIB:.0f}: {mark(mem.after_mib - mem.idle_mib <= NEAR_IDLE_MIB)}). "
        f"The request answered {mem.status} in {mem.wall_s:.1f} s.",
        f"- **Fairness**: a {SMALL_SIZE}-stop request alone p50 {statistics.median(fair.alone_s):.2f} s; with two "
        f"{LOAD_SIZE}-stop requests running, over {len(fair.loaded_s)} tries p50 {statistics.median(fair.loaded_s):.2f} s, "
        f"p99 {p99:.2f} s (goal ≤ {FAIRNESS_GOAL_S:g} s: {mark(p99 <= FAIRNESS_GOAL_S)}); statuses "
        f"{dict(fair.statuses)}; both large requests in flight at the start of {fair.overlapped} of the tries; "
        f"the large requests' statuses: {dict(fair.big_statuses)}.",
        f"- **Burst**: {settings.burst} {LOAD_SIZE}-stop requests at once: {burst_summary(load.burst)}",
    ]


def burst_summary(result: Burst) -> str:
    refused = [a for a in result.answers if a.status == 503]
    with_retry = [a for a in refused if "Retry-After" in a.headers]
    others = Counter(a.status for a in result.answers if a.status != 503)
    retry_values = sorted(int(a.headers["Retry-After"]) for a in with_retry if a.headers["Retry-After"].isdigit())
    done = [a.wall_s for a in result.answers if a.status == 200]
    parts = [
        f"{len(refused)} answered 503 ({len(with_retry)} with Retry-After"
        + (f", {retry_values[0]}-{retry_values[-1]} s" if retry_values else "")
        + f", answered within {max((a.wall_s for a in refused), default=0):.2f} s)",
        f"other statuses {dict(others)}",
    ]
    if done:
        parts.append(f"the 200s took {min(done):.1f}-{max(done):.1f} s")
    return "; ".join(parts) + f"; all done after {result.seconds:.1f} s."


def capacity_line(cities: Sequence[str]) -> str:
    held = [
        f"{c} {capacity(c)}{'+' if capacity(c) >= 2 * max(SIZES) else ''} (≤ {max(supported_sizes(c))})" for c in cities
    ]
    return "Places per extract (sizes held): " + ", ".join(held) + "."


def full_run_minutes() -> float:
    """A cold full run: three 60 s references per instance on two processes, VROOM's first
    tour at 1000 stops (~80 s, not interruptible), and ~10 min for ours, end to end and load."""
    count = sum(len(supported_sizes(c)) for c in CITIES) * len(SHAPES)
    largest = sum(max(SIZES) in supported_sizes(c) for c in CITIES) * len(SHAPES)
    return (count * len(SOLVERS) * 60 + largest * 80) / 2 / 60 + 10


def report(
    settings: Settings,
    insts: list[Instance],
    ours: dict[str, Ours],
    refs: dict[tuple[str, str], Result],
    stacks: StackResults,
    elapsed_s: float,
) -> str:
    e2e, load = stacks.e2e, stacks.load
    quick = "" if settings.full else " (a partial run: its settings are in the command)"
    command = " ".join(
        [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("BENCH_OPTIMIZE_")]
        + ["python -m bench optimize"]
    )
    lines = [
        "## Stop-order optimization (POST /v1/optimize/stops)",
        "",
        f"Reproduce: `{command}`{quick}. This run took {elapsed_s / 60:.1f} min; a full run "
        f"(all extracts and sizes, 60 s references) takes about {full_run_minutes() / 60:.1f} h with an empty cache "
        "(`var/bench-cache/optimize/`) and ~10 min once the references are cached. "
        f"**Reference seconds used: {settings.reference_s:g}** per solver and instance.",
        "",
        f"Instances: car fastest, durations from OSRM in the bench's process; stops are uniform random points "
        f"within {SNAP_M:g} m of a car road of the extract, snapped onto it, at least {SPACING_M:g} m apart, in the main "
        f"strongly connected part of the network; an extract holds a size when a seeded draw finds "
        f"{CAPACITY_FACTOR} times as many such places. {capacity_line(CITIES)} Shapes: open (start only), "
        "destination (start and a different end), round-trip (start = end). Tour durations in seconds on the matrix.",
        "",
        f"Ours: `optimize_service.stops.solver` as the service runs it, in this process: the searches of `searches(n)` at once "
        f"in {default_solver_processes()} processes, the shortest wins; wall = solver only (the matrix and the tour "
        f"geometry come on top, see end to end). References (tour s / wall s): VROOM level {VROOM_LEVEL}, OR-Tools "
        "GLS from Christofides, PyVRP, each with the reference seconds and at least "
        f"{MIN_CPU_SHARE:.0%} of them on a CPU (a result that shared the machine is computed again); gap = ours "
        "against the best of them. "
        f"Goals: gap ≤ {GAP_GOAL_PCT:g} %; wall ≤ 1 s at 100 stops, 2 s at 200, 5 s at 500, 10 s at 1000.",
        "",
        "| city | stops | shape | ours (s) | method | wall (s) | "
        + " | ".join(SOLVER_NAMES[s] for s in SOLVERS)
        + " | gap | ≤ 1 % | wall goal |",
        "|---|---|---|---|---|---|" + "---|" * len(SOLVERS) + "---|---|---|",
        *instance_rows(insts, ours, refs),
        "",
        "Per size (gaps over all instances of the size; wall p50 / max; HTTP: medians per city):",
        "",
        "| stops | instances | worst gap | median gap | ≤ 1 % | wall in process (s) | wall HTTP (s) | goal (s) | won by | best reference (ties count each) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *size_summary(insts, ours, refs, e2e),
        "",
        f"End to end through the gateway (round trips; wall of the whole request, median and max of {settings.e2e_repeats}; "
        "tour on the same matrix):",
        "",
        "| city | stops | wall median (s) | wall max (s) | goal | method | tour (s) | gap |",
        "|---|---|---|---|---|---|---|---|",
        *e2e_rows(e2e, refs),
        "",
        *merged_section(stacks.merged, e2e, refs),
        *load_section(load, settings),
    ]
    return "\n".join(lines)


def run() -> str:
    started = time.perf_counter()
    settings = settings_from_env()
    log(f"   instances: {settings.cities}, {settings.sizes}, {settings.shapes}")
    insts = list(instances(settings.cities, settings.sizes, settings.shapes))
    refs = references(insts, settings.reference_s, progress=log)
    ours = solve_ours(insts)
    stacks = stack_measurements(settings, insts)
    return report(settings, insts, ours, refs, stacks, time.perf_counter() - started)


if __name__ == "__main__":
    print(run())
