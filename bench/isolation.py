"""No account starves another (issue 29): the security campaign's attacks, each run against the
whole platform on Munich (bench/full_stack.py) while a second account probes it with light
requests, one at a time (a cold route, a reverse geocode, a login, the gateway's /health).

Phases, each `BENCH_ISOLATION_SECONDS` long (default 15), in one run on one machine:
- idle: the probe alone, the reference;
- match: the attacker keeps four 10 000-point traces (~0.2 m apart along a real route) in flight,
  abandoning each after 2 s (`curl -m2`) as the campaign did;
- gzip: four unauthenticated clients send 4 MiB gzip bodies that inflate to 4 GiB;
- login: three source addresses (127.0.0.2-4) each log in at 4.5 per second, new e-mails, wrong passwords;
- optimize: the attacker keeps two 100-stop stop-order requests (the most a standard account's
  matrix cells allow synchronously) with its tier's largest time limit in flight;
- jobs: the attacker submits four 300-stop jobs (its tier runs three at once), then the victim
  one 5-stop job, and how long that waited is measured;
- header, batch, results, fleet: the batch and job surfaces (issue 55, bench/isolation_surfaces.py);
- busy machine (a reference, not an attack): one process per core spins at the probe's own
  priority and sends nothing. What the probe loses there is the machine's, not the platform's:
  no attack that saturates the same cores can leave the probe better off.

Goal: the probe's p99 within 2x its idle p99 in every phase, every attack request answered
or refused (a status, never a 5xx) within its bound, and every process's memory under its
manifest's limit (deploy/k8s/base). BENCH_ISOLATION_PHASES (names, comma-separated) runs some
phases only, after the idle one. Every loop is bounded in count and time and
targets loopback only.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import resource
import socket
import statistics
import tempfile
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from bench.full_stack import full_stack
from bench.isolation_surfaces import (
    largest_result_job,
    manifest_limits_mib,
    memory_line,
    surface_attacks,
    watching_memory,
    wide_header,
    worst_memory,
)
from bench.scale import percentile
from launcher.stack import Stack

PHASE_SECONDS = float(os.environ.get("BENCH_ISOLATION_SECONDS", "15"))
# The shared Munich extract covers lat 48.1314-48.1434, lon 11.5657-11.5861.
ROUTE_FROM, ROUTE_TO = (48.1374, 11.5755), (48.1420, 11.5800)  # ~0.7 km
LONG_FROM, LONG_TO = (48.1320, 11.5670), (48.1425, 11.5850)  # ~2 km, densified into the trace
TRACE_POINTS = 10_000
BOMB_INFLATED = 4 << 30
GOAL_RATIO = 2.0
STANDARD_TIME_LIMIT_S = 10  # the standard tier's cap (OPTIMIZE_TIME_LIMITS); the campaign asked 30


@dataclass
class Api:
    base: str
    token: str = ""

    def call(self, method: str, path: str, body: bytes | None = None, *, timeout: float = 60.0,
             headers: dict[str, str] | None = None, source: str | None = None) -> tuple[int, float, bytes]:  # fmt: skip
        """Status (0: no answer within `timeout`), seconds, body."""
        parts = urlsplit(self.base)
        sent = {"Content-Type": "application/json", **(headers or {})}
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        connection = http.client.HTTPConnection(
            parts.hostname or "127.0.0.1", parts.port, timeout=timeout,
            source_address=(source, 0) if source else None,
        )  # fmt: skip
        began = time.perf_counter()
        try:
            connection.request(method, path, body=body, headers=sent)
            answer = connection.getresponse()
            payload = answer.read()
            return answer.status, time.perf_counter() - began, payload
        except (TimeoutError, OSError):
            return 0, time.perf_counter() - began, b""
        finally:
            connection.close()


@dataclass
class Phase:
    name: str
    probe_s: dict[str, list[float]] = field(default_factory=dict)
    probe_failures: Counter[str] = field(default_factory=Counter)
    attack_statuses: Counter[int] = field(default_factory=Counter)
    attack_max_s: float = 0.0
    # Busy CPU of the whole machine (platform, probe and attacking client) from the attack's
    # start to its last answer (a 10 s optimization asked at the end runs past the phase).
    machine_cpu_s: float = 0.0
    attacker_cpu_s: float = 0.0  # the attacking client's own process (another machine in reality)
    memory_mib: dict[str, float] = field(default_factory=dict)  # each platform process's peak

    def attacked(self, status: int, seconds: float) -> None:
        self.attack_statuses[status] += 1
        self.attack_max_s = max(self.attack_max_s, seconds)


# ---------------------------------------------------------------- the probe


def probe_calls(victim: Api, login: Api, email: str, password: str) -> dict[str, Callable[[int], tuple[int, float]]]:
    def route(i: int) -> tuple[int, float]:
        d = (i % 97) * 1e-5  # a new route every time: the answer cache never helps
        path = f"/v1/route?from={ROUTE_FROM[0] + d},{ROUTE_FROM[1]}&to={ROUTE_TO[0]},{ROUTE_TO[1] + d}"
        status, seconds, _ = victim.call("GET", path, timeout=35)
        return status, seconds

    def geocode(i: int) -> tuple[int, float]:
        status, seconds, _ = victim.call("GET", f"/v1/geocoder?address=Tal%20{i % 400 + 1}%20M%C3%BCnchen%20{i}")
        return status, seconds

    def reverse(i: int) -> tuple[int, float]:
        status, seconds, _ = victim.call("GET", f"/v1/geocoder/reverse?lat={48.137 + (i % 89) * 1e-5}&lon=11.575")
        return status, seconds

    def sign_in(i: int) -> tuple[int, float]:
        body = json.dumps({"user": email, "password": password}).encode()
        status, seconds, _ = login.call("POST", "/v1/authenticate", body, timeout=35)
        return status, seconds

    def health(i: int) -> tuple[int, float]:
        status, seconds, _ = login.call("GET", "/health", timeout=35)
        return status, seconds

    return {"route": route, "geocode": geocode, "reverse": reverse, "login": sign_in, "health": health}


def probe(phase: Phase, calls: dict[str, Callable[[int], tuple[int, float]]], until: float) -> None:
    """One light request after another, in turn, until `until` (a login every fourth round:
    the victim's own login rate stays far under its limit)."""
    i = 0
    while time.monotonic() < until:
        for name, call in calls.items():
            if name == "login" and i % 4:
                continue
            status, seconds = call(i)
            if status == 200:
                phase.probe_s.setdefault(name, []).append(seconds)
            else:
                phase.probe_failures[f"{name} {status}"] += 1
        i += 1
        time.sleep(0.05)


# ---------------------------------------------------------------- the attacks


def dense_trace(attacker: Api) -> bytes:
    """TRACE_POINTS points along a real ~2 km route, a fraction of a metre apart, a second apart."""
    path = f"/v1/route?from={LONG_FROM[0]},{LONG_FROM[1]}&to={LONG_TO[0]},{LONG_TO[1]}"
    status, _, body = attacker.call("GET", path)
    if status != 200:
        raise RuntimeError(f"the attack's route failed: {status} {body[:200]!r}")
    line = json.loads(body)["routes"][0]["geometry"]["coordinates"]
    points: list[dict[str, float]] = []
    per_segment = max(1, TRACE_POINTS // max(1, len(line) - 1))
    for (lon1, lat1), (lon2, lat2) in pairwise(line):
        for k in range(per_segment):
            f = k / per_segment
            points.append({"lat": lat1 + (lat2 - lat1) * f, "lon": lon1 + (lon2 - lon1) * f})
    points = points[:TRACE_POINTS]
    start = 1_700_000_000
    return json.dumps({"points": [{**p, "time": start + i} for i, p in enumerate(points)]}).encode()


def gzip_bomb() -> bytes:
    """A gzip stream of BOMB_INFLATED zero bytes (~4 MiB on the wire)."""
    chunk = bytes(1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: with a gzip header
    out = bytearray()
    for _ in range(BOMB_INFLATED >> 20):
        out += deflate.compress(chunk)
    out += deflate.flush()
    return bytes(out)


def stops_body(count: int) -> bytes:
    stops: list[dict[str, Any]] = [
        {"name": f"s{i}", "coordinate": {"lat": 48.1320 + (i % 20) * 0.0005, "lon": 11.5670 + (i // 20) * 0.0012}}
        for i in range(count)
    ]
    stops[0]["start"] = True
    return json.dumps(stops).encode()


def repeat(phase: Phase, until: float, attack: Callable[[], tuple[int, float]], lock: threading.Lock) -> None:
    while time.monotonic() < until:
        status, seconds = attack()
        with lock:
            phase.attacked(status, seconds)


@dataclass(frozen=True)
class AttackPlan:
    """One phase's attack, picklable: it runs in its own process (`attack_process`), as an attacker
    runs its own client; in the probe's process its threads would share the probe's interpreter
    lock, and each probe would wait for them (+15 to 17 ms on every probe kind, measured
    2026-11-26 with the gzip attack in threads)."""

    kind: str  # match | gzip | login | optimize, or one of bench.isolation_surfaces
    base: str
    token: str = ""
    copies: int = 1
    payload: bytes = b""
    sources: tuple[str, ...] = ()


def attacks_of(plan: AttackPlan) -> list[Callable[[], tuple[int, float]]]:
    attacker = Api(plan.base, plan.token)
    if plan.kind == "match":
        return [match_attack(attacker, plan.payload)] * plan.copies
    if plan.kind == "gzip":
        return [bomb_attack(plan.base, plan.payload)] * plan.copies
    if plan.kind == "login":
        return [login_attack(plan.base, source) for source in plan.sources]
    if plan.kind == "optimize":
        return [optimize_attack(attacker)] * plan.copies
    surface = surface_attacks(plan.kind, attacker, plan.copies, plan.payload)
    if surface is not None:
        return surface
    raise ValueError(f"unknown attack {plan.kind!r}")


def attack_process(plan: AttackPlan, seconds: float, answers: Any) -> None:
    """The attack's loops in threads of this process for `seconds`; its answers, as
    (statuses, slowest seconds), put on `answers`."""
    phase, lock = Phase(plan.kind), threading.Lock()
    until = time.monotonic() + seconds
    loops = [threading.Thread(target=repeat, args=(phase, until, attack, lock)) for attack in attacks_of(plan)]
    for loop in loops:
        loop.start()
    for loop in loops:
        loop.join()
    used = resource.getrusage(resource.RUSAGE_SELF)
    answers.put((dict(phase.attack_statuses), phase.attack_max_s, used.ru_utime + used.ru_stime))


def match_attack(attacker: Api, trace: bytes) -> Callable[[], tuple[int, float]]:
    def attack() -> tuple[int, float]:
        status, seconds, _ = attacker.call("POST", "/v1/match", trace, timeout=2.0)
        return (status or -2), seconds  # -2: abandoned after 2 s, as the campaign did

    return attack


def bomb_attack(base: str, bomb: bytes) -> Callable[[], tuple[int, float]]:
    anonymous = Api(base)

    def attack() -> tuple[int, float]:
        headers = {"Content-Encoding": "gzip", "Content-Length": str(len(bomb))}
        status, seconds, _ = anonymous.call("POST", "/v1/route", bomb, timeout=30, headers=headers)
        return status, seconds

    return attack


def login_attack(base: str, source: str) -> Callable[[], tuple[int, float]]:
    """Wrong passwords for ever new e-mails at 4.5 a second (under the per-address limit): each
    costs a password hash, which the per-account pacing would otherwise spare after five."""
    anonymous = Api(base)

    def attack() -> tuple[int, float]:
        began = time.monotonic()
        body = json.dumps({"user": f"{uuid.uuid4().hex[:12]}@example.com", "password": uuid.uuid4().hex}).encode()
        status, seconds, _ = anonymous.call("POST", "/v1/authenticate", body, timeout=30, source=source)
        time.sleep(max(0.0, 1 / 4.5 - (time.monotonic() - began)))
        return status, seconds

    return attack


def optimize_attack(attacker: Api) -> Callable[[], tuple[int, float]]:
    """The heaviest stop order a standard account may ask synchronously: 100 stops (its matrix
    cells), the tier's largest time limit."""
    body = stops_body(100)

    def attack() -> tuple[int, float]:
        path = f"/v1/optimize/stops?timeLimit={STANDARD_TIME_LIMIT_S}"
        status, seconds, _ = attacker.call("POST", path, body, timeout=70)
        return status, seconds

    return attack


def jobs_attack(attacker: Api, victim: Api, phase: Phase, until: float) -> None:
    """The attacker's heavy jobs first, then the victim's small one: how long it waited."""
    heavy = stops_body(300)
    for _ in range(4):
        path = f"/v1/optimize/stops?async=true&timeLimit={STANDARD_TIME_LIMIT_S}"
        status, seconds, _ = attacker.call("POST", path, heavy)
        phase.attacked(status, seconds)
    status, _, body = victim.call("POST", "/v1/optimize/stops?async=true", stops_body(5))
    if status != 202:
        phase.probe_failures[f"job submit {status}"] += 1
        return
    location = json.loads(body).get("id")
    began = time.perf_counter()
    while time.monotonic() < until + 60:
        status, _, body = victim.call("GET", f"/v1/jobs/{location}")
        if status == 200 and json.loads(body).get("status") in ("succeeded", "failed", "cancelled"):
            phase.probe_s.setdefault("5-stop job", []).append(time.perf_counter() - began)
            return
        time.sleep(0.2)
    phase.probe_failures["5-stop job unfinished"] += 1


# ---------------------------------------------------------------- phases


@contextmanager
def attacking(workers: list[Callable[[], None]]) -> Iterator[None]:
    threads = [threading.Thread(target=work, daemon=True) for work in workers]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        for thread in threads:
            thread.join(timeout=120)


# What a phase starts in the probe's process: loops given the phase to record into and when to stop.
Attacks = Callable[[Phase, float], list[Callable[[], None]]]
WARM_UP_S = min(1.0, PHASE_SECONDS / 10)  # the attack under way before the first probe


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine since boot. Summing the platform's processes came
    out above two cores' worth in the optimize phase (solver processes come and go), so the
    machine's own count is taken, and the attacking client's beside it."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def run_phase(name: str, calls: dict[str, Callable[[int], tuple[int, float]]], attacks: Attacks,
              pids: dict[str, int]) -> Phase:  # fmt: skip
    phase = Phase(name)
    until = time.monotonic() + PHASE_SECONDS
    before = machine_busy_s()
    with watching_memory(pids, phase.memory_mib), attacking(attacks(phase, until)):
        time.sleep(WARM_UP_S)
        probe(phase, calls, until)
    phase.machine_cpu_s = machine_busy_s() - before
    return phase


def run_attacked_phase(name: str, calls: dict[str, Callable[[int], tuple[int, float]]], plan: AttackPlan,
                       pids: dict[str, int]) -> Phase:  # fmt: skip
    """The probe here while `plan` runs in a separate process for the whole phase."""
    before = machine_busy_s()
    context = multiprocessing.get_context("spawn")
    answers = context.Queue()
    attacker = context.Process(target=attack_process, args=(plan, PHASE_SECONDS + WARM_UP_S, answers), daemon=True)
    attacker.start()
    phase = Phase(name)
    with watching_memory(pids, phase.memory_mib):
        time.sleep(WARM_UP_S + 0.5)  # the child imports
        probe(phase, calls, time.monotonic() + PHASE_SECONDS)
        statuses, slowest, phase.attacker_cpu_s = answers.get(timeout=180)
    attacker.join(timeout=30)
    phase.machine_cpu_s = machine_busy_s() - before
    phase.attack_statuses.update(statuses)
    phase.attack_max_s = slowest
    return phase


def spin(until: float) -> None:
    while time.monotonic() < until:
        pass


def busy_machine(phase: Phase, until: float) -> list[Callable[[], None]]:
    """One spinning process per core until `until` (the reference phase's load)."""

    def spinning() -> None:
        context = multiprocessing.get_context("spawn")
        spinners = [context.Process(target=spin, args=(until,), daemon=True) for _ in range(os.cpu_count() or 1)]
        for spinner in spinners:
            spinner.start()
        for spinner in spinners:
            spinner.join(timeout=PHASE_SECONDS + 60)

    return [spinning]


def loopback_sources() -> list[str]:
    """Three extra loopback addresses the login attack can send from (Linux routes 127/8)."""
    usable = []
    for address in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
        with socket.socket() as s:
            try:
                s.bind((address, 0))
                usable.append(address)
            except OSError:
                continue
    return usable or ["127.0.0.1"]


def measure(stack: Stack) -> list[Phase]:
    attacker = Api(stack.base_url, stack.login("standard"))
    victim_email, victim_password = stack.add_user("standard")
    victim = Api(stack.base_url, stack.token_for(victim_email, victim_password))
    calls = probe_calls(victim, Api(stack.base_url), victim_email, victim_password)
    base, token = stack.base_url, attacker.token

    def jobs(phase: Phase, until: float) -> list[Callable[[], None]]:
        return [lambda: jobs_attack(attacker, victim, phase, until)]

    pids = {name: process.pid for name, process in stack.processes.items()}
    chosen = {name.strip() for name in os.environ.get("BENCH_ISOLATION_PHASES", "").split(",") if name.strip()}

    def wanted(name: str) -> bool:
        return not chosen or name in chosen

    plans = [
        *([AttackPlan("match", base, token, copies=4, payload=dense_trace(attacker))] if wanted("match") else []),
        AttackPlan("gzip", base, copies=4, payload=gzip_bomb()),
        AttackPlan("login", base, sources=tuple(loopback_sources())),
        AttackPlan("optimize", base, token, copies=2),
        AttackPlan("header", base, token, copies=7, payload=wide_header()),
        AttackPlan("batch", base, token, copies=2),
        AttackPlan("fleet", base, token, copies=1),
    ]
    if wanted("results"):
        plans.append(AttackPlan("results", base, token, copies=8, payload=largest_result_job(attacker, stack.env()).encode()))
    idle = run_phase("idle", calls, lambda phase, until: [], pids)
    attacked = [run_attacked_phase(plan.kind, calls, plan, pids) for plan in plans if wanted(plan.kind)]
    later = [("jobs", jobs), ("busy machine (reference)", busy_machine)]
    return [idle, *attacked, *(run_phase(name, calls, attack, pids) for name, attack in later if wanted(name.split()[0]))]


# ---------------------------------------------------------------- the section


def p50_p99(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) * 1000:.0f} / {percentile(values, 99) * 1000:.0f}"


def table(phases: list[Phase]) -> list[str]:
    idle = phases[0]
    names = ["route", "geocode", "reverse", "login", "health"]
    limits = manifest_limits_mib()
    rows = [
        "| phase | " + " | ".join(f"{n} p50 / p99 ms" for n in names) + " | worst p99 / idle | probe failures "
        "| attack answers (status: count) | slowest attack answer s | busy CPU s: machine / attacking client "
        "| memory nearest its limit: peak / limit MiB |",
        "|---|" + "---|" * len(names) + "---|---|---|---|---|---|",
    ]
    for phase in phases:
        ratios = [
            percentile(phase.probe_s[n], 99) / percentile(idle.probe_s[n], 99)
            for n in names
            if phase.probe_s.get(n) and idle.probe_s.get(n)
        ]
        worst = max(ratios, default=float("nan"))
        verdict = "" if phase is idle else (" ✓" if worst <= GOAL_RATIO else " ✗")
        statuses = ", ".join(f"{s}: {c}" for s, c in sorted(phase.attack_statuses.items())) or "-"
        failures = ", ".join(f"{k}: {v}" for k, v in sorted(phase.probe_failures.items())) or "none"
        extra = f" (5-stop job waited {phase.probe_s['5-stop job'][0]:.1f} s)" if "5-stop job" in phase.probe_s else ""
        process, peak, limit = worst_memory(phase.memory_mib, limits)
        rows.append(
            f"| {phase.name}{extra} | " + " | ".join(p50_p99(phase.probe_s.get(n, [])) for n in names)
            + f" | {worst:.2f}{verdict} | {failures} | {statuses} | {phase.attack_max_s:.1f} "
            f"| {phase.machine_cpu_s:.1f} / {phase.attacker_cpu_s:.1f} "
            f"| {process} {peak:.0f} / {limit:.0f}{' ✓' if peak <= limit else ' ✗'} |"
        )  # fmt: skip
    return rows


def run() -> str:
    with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp, full_stack(Path(tmp)) as stack:
        phases = measure(stack)
    never_5xx = all(status < 500 for phase in phases for status in phase.attack_statuses)
    lines = [
        "## Isolation: the campaign's attacks against a light probe from another account",
        "",
        f"Phases of {PHASE_SECONDS:g} s (BENCH_ISOLATION_SECONDS); Munich, every service and the gateway as real "
        "processes on loopback, two standard accounts. Probe: one request at a time (cold route, cold geocode, reverse "
        "geocode, a login every fourth round, the gateway's /health). Goal: probe p99 ≤ 2x idle in every phase; attacks "
        "answered or refused, never 5xx (-2: the attacker abandoned the match after 2 s, as the campaign did); every "
        "process under its manifest's memory limit (deploy/k8s/base; resident memory with its children, sampled "
        "every 0.2 s).",
        "",
        *table(phases),
        "",
        f"No attack answered 5xx: {'yes' if never_5xx else 'no'}.",
        "",
        memory_line([(phase.name, phase.memory_mib) for phase in phases]),
    ]
    return "\n".join(lines)
