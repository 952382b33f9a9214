"""Soak: the whole platform under a steady mixed load for ten minutes; memory, open files, errors.

    BENCH_SOAK_SECONDS=600 python -m bench soak       # writes the section of bench/RESULTS.md
    BENCH_SOAK_SECONDS=40 BENCH_SOAK_SAMPLE_SECONDS=10 python -m bench.soak   # a quick look, printed

Every service and the gateway run as real processes on Munich (bench/full_stack.py) with their
production settings (password hashing, rate limits); the account is of tier `unlimited`, so the
load meets no 429. Warm-up: seeded points in the extract are reverse geocoded into addresses and
the routes between neighbouring addresses are requested once; only those that route are used.

The load is open-loop at BENCH_SOAK_RATE requests/s (default 20; at most 32 in flight, beyond
that it waits), a seeded mix per 100 requests: 35 routes, 20 geocodes, 15 reverse geocodes,
10 autocompletes, 5 provider lists, 6 optimizations of 6 stops, 5 detour files of 3 cases, and
2 + 2 authentications (password, API key) whose token the following requests use. Coordinates
get 1-9 µ° (≤ 1.3 m) of jitter from a counter, so routes, optimizations and detours are new
requests (cold caches; Redis's cache grows as with real traffic), while geocoding repeats.

Every BENCH_SOAK_SAMPLE_SECONDS (60) and at the end: RSS and open file descriptors of every
platform process (each one started and every process below it, from /proc), and Redis's keys and
used memory. `run()` returns the Markdown section; progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis

from bench.full_stack import full_stack
from common.config import REPO_ROOT
from launcher.stack import Stack

SECONDS = float(os.environ.get("BENCH_SOAK_SECONDS") or 600)
SAMPLE_SECONDS = float(os.environ.get("BENCH_SOAK_SAMPLE_SECONDS") or 60)
RATE = float(os.environ.get("BENCH_SOAK_RATE") or 20)
MAX_IN_FLIGHT = 32
SEED = 20240612
BOX = (48.1315, 48.1434, 11.5657, 11.5861)  # the Munich extract: lat min, lat max, lon min, lon max
WARMUP_POINTS = 80
MIX = {"route": 35, "geocode": 20, "reverse": 15, "autocomplete": 10, "providers": 5, "optimize": 6,
       "detour": 5, "authenticate": 2, "apikey": 2}  # fmt: skip
# Password hashing makes these slow by design (~0.4 s): kept out of the per-interval latency.
SLOW_BY_DESIGN = {"authenticate"}
OPTIMIZE_STOPS = 6
DETOUR_CASES = 3
MIB = 1024 * 1024


@dataclass(frozen=True)
class Address:
    label: str
    lat: float
    lon: float


@dataclass
class Tally:
    """Answers by status ("200", "503", or the exception of a failed connection) and latencies."""

    statuses: Counter[str] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, status: str, latency_ms: float | None) -> None:
        self.statuses[status] += 1
        if latency_ms is not None:
            self.latencies_ms.append(latency_ms)

    @property
    def count(self) -> int:
        return sum(self.statuses.values())

    def errors(self) -> Counter[str]:
        return Counter({status: n for status, n in self.statuses.items() if not status.startswith("2")})

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass(frozen=True)
class ProcessSample:
    service: str  # the Stack's name of the process it runs under
    pid: int
    command: str
    rss_mib: float
    fds: int


@dataclass(frozen=True)
class Sample:
    elapsed_s: float
    processes: list[ProcessSample]
    redis: dict[str, tuple[int, float]]  # the Stack's name of each Redis → (keys, used MiB)


@dataclass
class Soak:
    """What the load saw, per sampling interval (by send time) and per kind of request."""

    intervals: list[Tally] = field(default_factory=list)
    kinds: dict[str, Tally] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    sent: int = 0
    waited: int = 0  # requests that started late because MAX_IN_FLIGHT were in flight
    seconds: float = 0.0

    def record(self, kind: str, elapsed_s: float, status: str, latency_ms: float) -> None:
        index = int(elapsed_s // SAMPLE_SECONDS)
        while len(self.intervals) <= index:
            self.intervals.append(Tally())
        self.intervals[index].add(status, None if kind in SLOW_BY_DESIGN else latency_ms)
        self.kinds.setdefault(kind, Tally()).add(status, latency_ms)


# ---------------------------------------------------------------- processes, from /proc


def children(pid: int) -> list[int]:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return [int(child) for task in tasks for child in (task / "children").read_text().split()]
    except OSError:
        return []  # ended meanwhile


def process_tree(pid: int) -> list[int]:
    """The process and every process below it (workers, solver pools, helpers)."""
    found = [pid]
    for child in children(pid):
        found += process_tree(child)
    return found


def process_sample(service: str, pid: int) -> ProcessSample | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    rss_kib = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return ProcessSample(service, pid, short_command(command), rss_kib / 1024, fds)


def short_command(command: str) -> str:
    """`python -m route_service` → `-m route_service`; no machine paths in the report."""
    if "multiprocessing" in command:
        return "multiprocessing child"
    words = command.split()
    if "-m" in words:
        return " ".join(words[words.index("-m") : words.index("-m") + 2])
    return Path(words[0]).name if words else "?"


def redis_memory(url: str) -> tuple[int, float]:
    client = redis.Redis.from_url(url, socket_timeout=2)
    try:
        used = int(client.info("memory")["used_memory"])
        return int(client.dbsize()), used / MIB
    except redis.RedisError:
        return -1, 0.0
    finally:
        client.close()


def take_sample(stack: Stack, elapsed_s: float) -> Sample:
    processes = [
        sample
        for name, process in sorted(stack.processes.items())
        for pid in process_tree(process.pid)
        if (sample := process_sample(name, pid)) is not None
    ]
    redis_urls = {"redis": stack.redis_url, "redis_cache": stack.redis_cache_url}
    return Sample(elapsed_s, processes, {name: redis_memory(url) for name, url in redis_urls.items()})


# ---------------------------------------------------------------- accounts


def console(stack: Stack, *args: str) -> str:
    command = [sys.executable, "-m", "auth_service.console", *args]
    done = subprocess.run(command, cwd=REPO_ROOT, env=stack.env(), capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"auth_service.console {args[0]} failed: {done.stderr.strip()}")
    return done.stdout.strip()


@dataclass
class Account:
    """An `unlimited` account with a password and an API key; `token` is the latest one issued."""

    email: str
    password: str
    apikey: str
    token: str = ""

    @classmethod
    def create(cls, stack: Stack) -> Account:
        email, password = f"soak-{uuid.uuid4().hex[:12]}@example.com", uuid.uuid4().hex
        console(stack, "add-user", email, "--password", password, "--tier", "unlimited")
        return cls(email, password, console(stack, "add-apikey", email).splitlines()[0])


# ---------------------------------------------------------------- the requests


@dataclass
class Client:
    session: aiohttp.ClientSession
    base_url: str
    account: Account
    addresses: list[Address]
    pairs: list[tuple[Address, Address]]

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.account.token}"}

    async def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        async with self.session.request(method, self.base_url + path, **kwargs) as resp:
            body = await resp.json(content_type=None) if resp.content_type.endswith("json") else await resp.read()
            return resp.status, body

    async def get(self, path: str, params: dict[str, str]) -> int:
        return (await self.call("GET", path, params=params, headers=self.auth()))[0]

    async def login(self, path: str, credentials: dict[str, str]) -> int:
        status, body = await self.call("POST", path, json=credentials)
        if status == 200:
            self.account.token = str(body["token"])
        return status

    # Each takes the request's serial number: it picks the data and the jitter.

    async def route(self, serial: int) -> int:
        a, b = self.pairs[serial % len(self.pairs)]
        return await self.get("/v1/route", {"from": point(a, serial), "to": point(b, serial)})

    async def geocode(self, serial: int) -> int:
        return await self.get("/v1/geocoder", {"address": self.address(serial).label})

    async def reverse(self, serial: int) -> int:
        lat, lon = jittered(self.address(serial), serial)
        return await self.get("/v1/geocoder/reverse", {"lat": f"{lat:.7f}", "lon": f"{lon:.7f}"})

    async def autocomplete(self, serial: int) -> int:
        return await self.get("/v1/geocoder/autocomplete", {"text": self.address(serial).label[:8]})

    async def providers(self, serial: int) -> int:
        return await self.get("/v1/providers", {})

    async def optimize(self, serial: int) -> int:
        stops = [self.address(serial + i) for i in range(OPTIMIZE_STOPS)]
        body = [stop_json(stop, serial, i == 0) for i, stop in enumerate(stops)]
        return (await self.call("POST", "/v1/optimize/stops", json=body, headers=self.auth()))[0]

    async def detour(self, serial: int) -> int:
        lines = ["id,from_lat,from_lon,to_lat,to_lon,via_lat,via_lon"]
        for case in range(DETOUR_CASES):
            trip = [self.address(serial + case + k) for k in (0, 1, 2)]
            lines.append(f"c{case}," + ",".join(point(address, serial) for address in trip))
        headers = {**self.auth(), "Content-Type": "text/csv"}
        data = "\n".join(lines) + "\n"
        return (await self.call("POST", "/v1/detour/file?filename=soak.csv", data=data, headers=headers))[0]

    async def authenticate(self, serial: int) -> int:
        return await self.login("/v1/authenticate", {"user": self.account.email, "password": self.account.password})

    async def apikey(self, serial: int) -> int:
        return await self.login("/v1/authenticate/apikey", {"apikey": self.account.apikey})

    def address(self, serial: int) -> Address:
        return self.addresses[serial % len(self.addresses)]

    def request(self, kind: str) -> Callable[[int], Awaitable[int]]:
        method: Callable[[int], Awaitable[int]] = getattr(self, kind)
        return method


def jittered(address: Address, serial: int) -> tuple[float, float]:
    return address.lat + (serial % 9 + 1) * 1e-6, address.lon + (serial // 9 % 9 + 1) * 1e-6


def point(address: Address, serial: int) -> str:
    lat, lon = jittered(address, serial)
    return f"{lat:.7f},{lon:.7f}"


def stop_json(address: Address, serial: int, start: bool) -> dict[str, Any]:
    lat, lon = jittered(address, serial)
    return {"name": address.label, "coordinate": {"lat": lat, "lon": lon}, "start": start}


def schedule() -> list[str]:
    """The kinds of 100 requests in a seeded order, repeated for the whole soak."""
    kinds = [kind for kind, count in MIX.items() for _ in range(count)]
    random.Random(SEED).shuffle(kinds)
    return kinds


# ---------------------------------------------------------------- warm-up


async def find_addresses(client: Client) -> list[Address]:
    """Reverse geocoded seeded points of the extract, each address once."""
    rng, found = random.Random(SEED), dict[str, Address]()
    lat0, lat1, lon0, lon1 = BOX
    for _ in range(WARMUP_POINTS):
        params = {"lat": f"{rng.uniform(lat0, lat1):.6f}", "lon": f"{rng.uniform(lon0, lon1):.6f}"}
        status, body = await client.call("GET", "/v1/geocoder/reverse", params=params, headers=client.auth())
        for result in body.get("results", []) if status == 200 else []:
            coordinate = result["coordinate"]
            found.setdefault(result["label"], Address(result["label"], coordinate["lat"], coordinate["lon"]))
    return list(found.values())


async def routable_pairs(client: Client) -> list[tuple[Address, Address]]:
    """Neighbouring addresses whose route answers 200 (once, without jitter)."""
    pairs = list(zip(client.addresses, client.addresses[1:] + client.addresses[:1], strict=True))
    kept = []
    for a, b in pairs:
        params = {"from": f"{a.lat},{a.lon}", "to": f"{b.lat},{b.lon}"}
        if (await client.get("/v1/route", params)) == 200:
            kept.append((a, b))
    return kept


async def warm_up(client: Client) -> None:
    client.addresses = await find_addresses(client)
    if len(client.addresses) < 2 * OPTIMIZE_STOPS:
        raise RuntimeError(f"only {len(client.addresses)} addresses found by reverse geocoding the extract")
    client.pairs = await routable_pairs(client)
    if len(client.pairs) < len(client.addresses) // 2:
        raise RuntimeError(f"only {len(client.pairs)} of {len(client.addresses)} address pairs route")


# ---------------------------------------------------------------- the soak


async def one_request(client: Client, soak: Soak, kind: str, serial: int, started: float) -> None:
    sent = time.perf_counter()
    try:
        status = str(await client.request(kind)(serial))
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:  # ValueError: a body that is not JSON
        status = type(exc).__name__
    soak.record(kind, sent - started, status, (time.perf_counter() - sent) * 1000)


async def sampler(stack: Stack, soak: Soak, started: float) -> None:
    """A sample at the end of every interval (the one at 0 is taken before the load)."""
    for k in range(1, int(SECONDS // SAMPLE_SECONDS) + 1):
        await asyncio.sleep(max(0.0, started + k * SAMPLE_SECONDS - time.perf_counter()))
        if k * SAMPLE_SECONDS < SECONDS:  # the last one is taken after the load has ended
            soak.samples.append(await asyncio.to_thread(take_sample, stack, k * SAMPLE_SECONDS))
            log(soak)


async def drive(client: Client, soak: Soak, started: float) -> None:
    """Sends the mix at RATE until SECONDS have passed, then waits for the answers."""
    kinds, slots, tasks = schedule(), asyncio.Semaphore(MAX_IN_FLIGHT), set[asyncio.Task[None]]()
    while (due := started + soak.sent / RATE) < started + SECONDS:
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        soak.waited += slots.locked()
        await slots.acquire()
        task = asyncio.create_task(one_request(client, soak, kinds[soak.sent % len(kinds)], soak.sent, started))
        task.add_done_callback(lambda _done: slots.release())
        task.add_done_callback(tasks.discard)
        tasks.add(task)
        soak.sent += 1
    await asyncio.gather(*tasks)


async def soak_platform(stack: Stack, account: Account) -> Soak:
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=MAX_IN_FLIGHT)) as session:
        client = Client(session, stack.base_url, account, [], [])
        await client.apikey(0)
        await warm_up(client)
        soak = Soak(samples=[take_sample(stack, 0.0)])
        started = time.perf_counter()
        watcher = asyncio.create_task(sampler(stack, soak, started))
        await drive(client, soak, started)
        soak.seconds = time.perf_counter() - started
        watcher.cancel()
        soak.samples.append(take_sample(stack, soak.seconds))
        return soak


def log(soak: Soak) -> None:
    errors = sum(sum(tally.errors().values()) for tally in soak.intervals)
    print(f"soak: {soak.samples[-1].elapsed_s:.0f} s, {soak.sent} sent, {errors} not 2xx", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the report


def services_in(samples: list[Sample]) -> list[str]:
    return sorted({p.service for sample in samples for p in sample.processes})


def service_cell(sample: Sample, service: str) -> str:
    mine = [p for p in sample.processes if p.service == service]
    return f"{sum(p.rss_mib for p in mine):.0f} / {sum(p.fds for p in mine)}" if mine else "-"


def redis_cell(sample: Sample) -> str:
    return "; ".join(
        f"{keys} keys, {used:.1f} MiB" if keys >= 0 else "unreachable" for keys, used in sample.redis.values()
    )


def interval_table(soak: Soak) -> list[str]:
    services = services_in(soak.samples)
    lines = [
        "| until | requests | 2xx | errors | p50 ms | p99 ms | " + " | ".join(services) + " | Redis (state; cache) |",
        "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(services) + "---|",
    ]
    for index, sample in enumerate(soak.samples):
        tally = soak.intervals[index - 1] if 0 < index <= len(soak.intervals) else Tally()
        errors = sum(tally.errors().values())
        load = (f"{tally.count} | {tally.count - errors} | {errors} | {tally.percentile(0.5):.0f} | "
                f"{tally.percentile(0.99):.0f}") if index else "start | | | |"  # fmt: skip
        cells = " | ".join(service_cell(sample, service) for service in services)
        lines.append(f"| {sample.elapsed_s:.0f} s | {load} | {cells} | {redis_cell(sample)} |")
    return lines


def kind_table(soak: Soak) -> list[str]:
    lines = ["| request | count | 2xx | not 2xx (by status) | p50 ms | p99 ms |", "|---|---:|---:|---|---:|---:|"]
    for kind in MIX:
        tally = soak.kinds.get(kind, Tally())
        errors = tally.errors()
        by_status = ", ".join(f"{status}: {n}" for status, n in sorted(errors.items())) or "none"
        lines.append(f"| {kind} | {tally.count} | {tally.count - sum(errors.values())} | {by_status} | "
                     f"{tally.percentile(0.5):.0f} | {tally.percentile(0.99):.0f} |")  # fmt: skip
    return lines


def growth_mib_per_min(first: ProcessSample | None, last: ProcessSample, minutes: float) -> str:
    if first is None:
        return "new"
    return f"{(last.rss_mib - first.rss_mib) / minutes:+.2f}" if minutes > 0 else "-"


def process_row(proc: ProcessSample, first: ProcessSample | None, middle: ProcessSample | None,
                minutes: float, second_half: float) -> str:  # fmt: skip
    rss_start, fds_start = (f"{first.rss_mib:.1f}", str(first.fds)) if first else ("new", "new")
    return (
        f"| {proc.service} `{proc.command}` | {proc.pid} | {rss_start} → {proc.rss_mib:.1f} | "
        f"{growth_mib_per_min(first, proc, minutes)} | {growth_mib_per_min(middle, proc, second_half)} | "
        f"{fds_start} → {proc.fds} |"
    )


def process_table(soak: Soak) -> list[str]:
    """Each process at the end against itself at the start and half-way (growth after warm-up)."""
    start, middle, end = soak.samples[0], soak.samples[len(soak.samples) // 2], soak.samples[-1]
    at_start, at_middle = ({p.pid: p for p in sample.processes} for sample in (start, middle))
    minutes, second_half = end.elapsed_s / 60, (end.elapsed_s - middle.elapsed_s) / 60
    lines = [
        "| process | pid | RSS start → end MiB | MiB/min | MiB/min, second half | open fds start → end |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for proc in end.processes:
        lines.append(process_row(proc, at_start.get(proc.pid), at_middle.get(proc.pid), minutes, second_half))
    gone = [p for p in start.processes if p.pid not in {q.pid for q in end.processes}]
    lines += [f"| {p.service} `{p.command}` | {p.pid} | {p.rss_mib:.1f} → gone | | | {p.fds} → gone |" for p in gone]
    return lines


def summary(soak: Soak) -> list[str]:
    total = Tally()
    for tally in soak.kinds.values():
        total.statuses.update(tally.statuses)
    errors = total.errors()
    by_status = ", ".join(f"{status}: {n}" for status, n in sorted(errors.items())) or "none"
    return [
        f"{soak.sent} requests in {soak.seconds:.0f} s ({soak.sent / max(soak.seconds, 1e-9):.1f}/s, target {RATE:g}/s; "
        f"{soak.waited} started late because {MAX_IN_FLIGHT} were in flight). "
        f"**Not 2xx: {sum(errors.values())}** ({by_status}). {largest_growth(soak)}"
        f"Processes gone or new between the first and last sample: {changed_processes(soak)}.",
    ]


def largest_growth(soak: Soak) -> str:
    """The process whose RSS grew fastest in the second half, when warm-up is over."""
    middle, end = soak.samples[len(soak.samples) // 2], soak.samples[-1]
    minutes = (end.elapsed_s - middle.elapsed_s) / 60
    before = {p.pid: p for p in middle.processes}
    growth = [(p.rss_mib - before[p.pid].rss_mib, p) for p in end.processes if p.pid in before]
    if minutes <= 0 or not growth:
        return ""
    grown, proc = max(growth, key=lambda item: item[0])
    return f"Fastest RSS growth in the second half: {proc.service} `{proc.command}`, {grown / minutes:+.2f} MiB/min. "


def changed_processes(soak: Soak) -> str:
    first, last = ({p.pid for p in sample.processes} for sample in (soak.samples[0], soak.samples[-1]))
    return f"{len(first - last)} gone, {len(last - first)} new" if first != last else "none"


def report(soak: Soak) -> str:
    knobs = f"BENCH_SOAK_SECONDS={SECONDS:g} BENCH_SOAK_SAMPLE_SECONDS={SAMPLE_SECONDS:g} BENCH_SOAK_RATE={RATE:g}"
    command = f"{knobs} python -m bench soak"
    parts = [
        f"## Soak: {SECONDS:g} s of mixed load through the gateway\n",
        f"Reproduce: `{command}` (bench/soak.py: the mix, the data and how each figure is taken). "
        "Every service and the gateway on Munich, production settings, one `unlimited` account; "
        "load open-loop from one aiohttp client process on the same machine.\n",
        *summary(soak),
        f"\nPer interval of {SAMPLE_SECONDS:g} s (requests by send time; latency of the answers but authentication, "
        "slow by design). Per service: "
        "RSS in MiB / open file descriptors, summed over its processes at the end of the interval "
        "(forked workers share pages, so RSS sums overstate their use; their changes are what counts).\n",
        *interval_table(soak),
        "\nBy kind of request:\n",
        *kind_table(soak),
        "\nEvery process (started by the launcher, or below one: workers, solver processes):\n",
        *process_table(soak),
    ]
    return "\n".join(parts) + "\n"


def run() -> str:
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp, full_stack(Path(tmp)) as stack:
        soak = asyncio.run(soak_platform(stack, Account.create(stack)))
    return report(soak)


if __name__ == "__main__":
    print(run())
