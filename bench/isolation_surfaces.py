"""The isolation bench's attacks on the batch and job surfaces (issue 55), and the memory watch
every phase runs under (bench/isolation.py).

- header: seven clients at once send geocoder batches whose CSV header has 25 000 columns
  (164 KB; the campaign's took 6.6 CPU-s each and parsed in the pool every batch shares);
- batch: two clients (a standard account's heavy slots) send 3 000 distinct lines each, over and
  over (the campaign's used 24-28 CPU-s for a 6 000-unit charge);
- results: eight clients read the largest batch job result a standard account may make, over
  and over (the campaign's 44 MB result took the job service to 828 MB, the gateway to 439 MB);
- fleet: jobs of 200 stops and 10 truck sizes, one after another (26.7 CPU-s of the route
  service for a ~2.9 s charge).

Memory: every platform process's resident memory (with its children) is sampled every
MEMORY_SAMPLE_S during each phase; its peak is held against the limit of its container in
deploy/k8s/base (the service's main container).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import yaml

from bench.processes import resident_mib
from common.admission import parse_cost_budgets
from common.config import DEFAULT_COST_BUDGETS, REPO_ROOT
from geo_service.costs import BATCH_LINE_UNITS

MEMORY_SAMPLE_S = 0.2
MANIFESTS = REPO_ROOT / "deploy" / "k8s" / "base"
WIDE_HEADER_COLUMNS = 25_000
BATCH_LINES = 3_000
RESULT_READERS = 8
FLEET_STOPS, FLEET_TRUCK_SIZES = 200, 10
# Streets of the shared Munich extract (lat 48.1314-48.1434, lon 11.5657-11.5861).
MUNICH_STREETS = ("Marienplatz", "Tal", "Sendlinger Straße", "Kaufingerstraße", "Rosenstraße", "Weinstraße",
                  "Theatinerstraße", "Residenzstraße", "Dienerstraße", "Burgstraße", "Sparkassenstraße",
                  "Ledererstraße", "Rindermarkt", "Oberanger", "Färbergraben", "Hackenstraße", "Hotterstraße",
                  "Damenstiftstraße", "Frauenplatz", "Neuhauser Straße")  # fmt: skip
POSTCODES = ("80331", "80333", "80469", "80335")


class Caller(Protocol):
    def call(self, method: str, path: str, body: bytes | None = None, *, timeout: float = 60.0,
             headers: dict[str, str] | None = None, source: str | None = None) -> tuple[int, float, bytes]: ...  # fmt: skip


Attack = Callable[[], tuple[int, float]]
CSV = {"Content-Type": "text/csv"}


def wide_header() -> bytes:
    return (",".join(f"c{i}" for i in range(WIDE_HEADER_COLUMNS)) + "\nTal 4\n").encode()


def distinct_lines(rng: random.Random, count: int) -> bytes:
    """`count` addresses no earlier batch asked (the answer cache never helps)."""
    lines = [f'"{rng.choice(MUNICH_STREETS)} {rng.randint(1, 400)}, {rng.choice(POSTCODES)} München {rng.randint(0, 10**9)}"'
             for _ in range(count)]  # fmt: skip
    return ("address\n" + "\n".join(lines) + "\n").encode()


def header_attack(attacker: Caller, body: bytes) -> Attack:
    def attack() -> tuple[int, float]:
        status, seconds, _ = attacker.call("POST", "/v1/geocoder/batch", body, timeout=60, headers=CSV)
        return status, seconds

    return attack


def batch_attack(attacker: Caller, seed: int) -> Attack:
    rng = random.Random(seed)

    def attack() -> tuple[int, float]:
        body = distinct_lines(rng, BATCH_LINES)
        status, seconds, _ = attacker.call("POST", "/v1/geocoder/batch", body, timeout=120, headers=CSV)
        if status == 429:
            time.sleep(0.5)  # as a client told to wait would, at least a little
        return status, seconds

    return attack


def result_attack(attacker: Caller, job_id: str) -> Attack:
    def attack() -> tuple[int, float]:
        status, seconds, _ = attacker.call("GET", f"/v1/jobs/{job_id}", timeout=120)
        return status, seconds

    return attack


def fleet_body(rng: random.Random) -> bytes:
    def point() -> dict[str, float]:
        return {"lat": round(rng.uniform(48.1330, 48.1420), 6), "lon": round(rng.uniform(11.5680, 11.5840), 6)}

    depot = point()
    vehicles = [{"id": f"v{v}", "kind": "truck", "start": depot, "end": depot, "capacity": [100],
                 "truck": {"height": 2.5 + 0.1 * v, "weight": 7.5 + v}} for v in range(FLEET_TRUCK_SIZES)]  # fmt: skip
    jobs = [{"id": f"j{j}", "location": point(), "demand": [1]} for j in range(FLEET_STOPS)]
    return json.dumps({"vehicles": vehicles, "jobs": jobs}).encode()


def fleet_attack(attacker: Caller, seed: int) -> Attack:
    rng = random.Random(seed)

    def attack() -> tuple[int, float]:
        status, seconds, _ = attacker.call("POST", "/v1/optimize/routes?async=true", fleet_body(rng), timeout=60)
        if status == 429:
            time.sleep(1.0)
        return status, seconds

    return attack


def surface_attacks(kind: str, attacker: Caller, copies: int, payload: bytes) -> list[Attack] | None:
    """The attack loops of one of this module's kinds; None for another kind."""
    if kind == "header":
        return [header_attack(attacker, payload)] * copies
    if kind == "batch":
        return [batch_attack(attacker, seed) for seed in range(copies)]
    if kind == "results":
        return [result_attack(attacker, payload.decode())] * copies
    if kind == "fleet":
        return [fleet_attack(attacker, seed) for seed in range(copies)]
    return None


def largest_result_job(attacker: Caller, env: dict[str, str]) -> str:
    """The id of the largest batch job (5 results a line) the standard tier prices within one
    request, once done."""
    budget = parse_cost_budgets(env.get("COST_BUDGETS", DEFAULT_COST_BUDGETS)).for_tier("standard")
    lines = int(budget.per_request / BATCH_LINE_UNITS * 0.95)
    body = distinct_lines(random.Random(55), lines)
    status, _, answer = attacker.call("POST", "/v1/geocoder/batch?async=true&limit=5", body, timeout=120, headers=CSV)
    if status != 202:
        raise RuntimeError(f"the result attack's job was refused: {status} {answer[:300]!r}")
    job_id = str(json.loads(answer)["id"])
    for _ in range(600):
        status, _, answer = attacker.call("GET", f"/v1/jobs/{job_id}/result", timeout=120)
        if status == 200:
            return job_id
        time.sleep(0.5)
    raise RuntimeError("the result attack's job did not finish within 5 minutes")


# ---------------------------------------------------------------- memory


def manifest_limits_mib() -> dict[str, float]:
    """Each service's main container memory limit (MiB), from its Deployment in deploy/k8s/base."""
    limits: dict[str, float] = {}
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "Deployment":
                continue
            container = doc["spec"]["template"]["spec"]["containers"][0]
            memory = container.get("resources", {}).get("limits", {}).get("memory")
            if memory:
                limits[path.stem.replace("-", "_")] = mebibytes(str(memory))
    return limits


def mebibytes(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1.0, "Gi": 1024.0}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return float(quantity[: -len(suffix)]) * factor
    return float(quantity) / (1 << 20)


@contextmanager
def watching_memory(pids: dict[str, int], peaks: dict[str, float]) -> Iterator[None]:
    """`peaks` holds each process's highest resident memory (MiB) while the block runs."""
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for name, pid in pids.items():
                peaks[name] = max(peaks.get(name, 0.0), resident_mib(pid))
            stop.wait(MEMORY_SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        stop.set()
        sampler.join(timeout=10)


def worst_memory(peaks: dict[str, float], limits: dict[str, float]) -> tuple[str, float, float]:
    """The process nearest its limit: (name, peak MiB, limit MiB)."""
    held = [(name, peak, limits[name]) for name, peak in peaks.items() if name in limits]
    return max(held, key=lambda item: item[1] / item[2], default=("-", 0.0, float("nan")))


def memory_line(phases: list[tuple[str, dict[str, float]]]) -> str:
    """Each process's highest resident memory over the phases, against its manifest's limit."""
    limits = manifest_limits_mib()
    peaks: dict[str, tuple[float, str]] = {}
    for phase, memory in phases:
        for name, peak in memory.items():
            if peak > peaks.get(name, (0.0, ""))[0]:
                peaks[name] = (peak, phase)
    held = [f"{name} {peak:.0f} / {limits[name]:.0f} ({phase})" for name, (peak, phase) in sorted(peaks.items()) if name in limits]
    return "Peak resident memory per process, MiB / its manifest's limit (the phase it was reached in): " + ", ".join(held) + "."
