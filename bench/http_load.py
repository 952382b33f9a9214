"""HTTP load generation for the benchmarks: wrk when available, else a small aiohttp client.

A load is a list of request paths (or coordinate tuples formatted into a path template),
cycled for a fixed time over keep-alive connections; the result is requests/s and latency
percentiles. Only loopback targets are meant; every run stops by itself after `seconds`.

`jitter=True` makes every request unique by adding 1..9 µ° (≤ 1.3 m) to the coordinates
in a pattern that never repeats within a run, so a result cache keyed on the coordinates
(6 decimals) misses every time: that measures the cold path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

Coords = tuple[float, float, float, float]  # lat1, lon1, lat2, lon2


@dataclass(frozen=True)
class Load:
    base_url: str
    # A printf template taking lat1, lon1, lat2, lon2 (in this order unless lonlat).
    template: str
    coords: Sequence[Coords]
    headers: dict[str, str]
    lonlat: bool = False
    jitter: bool = False
    # Offsets the jitter pattern so that two cold runs never repeat each other's requests.
    salt: int = 0

    def path(self, serial: int) -> str:
        """The path of the `serial`-th request (the same rule as the wrk script)."""
        lat1, lon1, lat2, lon2 = self.coords[serial % len(self.coords)]
        if self.jitter:
            k = (self.salt + serial) // len(self.coords) + 1
            lat1, lon1 = lat1 + (k % 10) * 1e-6, lon1 + (k // 10 % 10) * 1e-6
            lat2, lon2 = lat2 + (k // 100 % 10) * 1e-6, lon2 + (k // 1000 % 10) * 1e-6
        values = (lon1, lat1, lon2, lat2) if self.lonlat else (lat1, lon1, lat2, lon2)
        return self.template % values


@dataclass(frozen=True)
class LoadResult:
    connections: int
    seconds: float
    requests: int
    errors: int  # non-2xx answers
    socket_errors: int  # connect/read/write errors and timeouts (e.g. the server closed a keep-alive)
    p50_ms: float
    p99_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def find_wrk() -> tuple[str | None, str]:
    """wrk's path, installing Debian's package when root with apt; else None and why."""
    path = shutil.which("wrk")
    if path:
        return path, "wrk"
    if os.geteuid() == 0 and shutil.which("apt-get"):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(["apt-get", "install", "-y", "wrk"], capture_output=True, timeout=180, check=False)
        path = shutil.which("wrk")
        if path:
            return path, "wrk (installed with apt-get for this run)"
    return None, "wrk is not installed, so the aiohttp load generator (bench/http_load.py, 1 process) was used"


# ---------------------------------------------------------------- wrk

_LUA = """
local coords = {%(coords)s}
local n = #coords
local template = %(template)s
local lonlat = %(lonlat)s
local jitter = %(jitter)s
local salt = %(salt)d
local threads = %(threads)d
%(headers)s
local next_id = 0
function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
end
local counter = 0
function request()
  -- The serial numbers of all threads interleave: thread t sends t, t+threads, ...
  local serial = counter * threads + tid
  counter = counter + 1
  local c = coords[serial %% n + 1]
  local lat1, lon1, lat2, lon2 = c[1], c[2], c[3], c[4]
  if jitter then
    local k = math.floor((salt + serial) / n) + 1
    lat1 = lat1 + (k %% 10) * 1e-6
    lon1 = lon1 + (math.floor(k / 10) %% 10) * 1e-6
    lat2 = lat2 + (math.floor(k / 100) %% 10) * 1e-6
    lon2 = lon2 + (math.floor(k / 1000) %% 10) * 1e-6
  end
  local path
  if lonlat then
    path = string.format(template, lon1, lat1, lon2, lat2)
  else
    path = string.format(template, lat1, lon1, lat2, lon2)
  end
  return wrk.format("GET", path)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %%d %%d %%d %%d %%f %%f\\n", summary.requests, summary.duration, e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""


def wrk_script(load: Load, threads: int) -> str:
    coords = ",".join("{" + ",".join(f"{v:.7f}" for v in c) + "}" for c in load.coords)
    headers = "\n".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in load.headers.items())
    return _LUA % {
        "coords": coords,
        "template": json.dumps(load.template),
        "lonlat": "true" if load.lonlat else "false",
        "jitter": "true" if load.jitter else "false",
        "salt": load.salt,
        "threads": threads,
        "headers": headers,
    }


def run_wrk(wrk: str, load: Load, connections: int, seconds: float, threads: int = 2) -> LoadResult:
    threads = min(threads, connections)
    with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
        script = Path(tmp) / "load.lua"
        script.write_text(wrk_script(load, threads))
        command = [wrk, "-t", str(threads), "-c", str(connections), "-d", f"{seconds:g}s", "--timeout", "5s",
                   "-s", str(script), load.base_url]  # fmt: skip
        out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    requests, duration_us, errors, socket_errors, p50_us, p99_us = line.split()[1:]
    return LoadResult(connections, int(duration_us) / 1e6, int(requests), int(errors), int(socket_errors),
                      float(p50_us) / 1000, float(p99_us) / 1000)  # fmt: skip


# ---------------------------------------------------------------- fallback: aiohttp


async def _client_load(load: Load, connections: int, seconds: float) -> tuple[int, int, int, list[float], float]:
    latencies: list[float] = []
    errors, socket_errors, serial = 0, 0, 0
    connector = aiohttp.TCPConnector(limit=connections)
    started = time.perf_counter()
    deadline = started + seconds

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal errors, socket_errors, serial
        while time.perf_counter() < deadline:
            path, serial = load.path(serial), serial + 1
            sent = time.perf_counter()
            try:
                async with session.get(load.base_url + path, headers=load.headers) as resp:
                    await resp.read()
                    errors += resp.status >= 400
            except (aiohttp.ClientError, TimeoutError):
                socket_errors += 1
            latencies.append(time.perf_counter() - sent)

    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, skip_auto_headers=["Accept-Encoding"]) as s:
        await asyncio.gather(*(worker(s) for _ in range(connections)))
    return len(latencies), errors, socket_errors, latencies, time.perf_counter() - started


def _client_process(load: Load, connections: int, seconds: float, queue: multiprocessing.Queue[str]) -> None:
    requests, errors, socket_errors, latencies, elapsed = asyncio.run(_client_load(load, connections, seconds))
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0.0

    queue.put(json.dumps([requests, errors, socket_errors, pct(0.5), pct(0.99), elapsed]))


def run_aiohttp(load: Load, connections: int, seconds: float) -> LoadResult:
    """The same load from a separate process (so it does not share the caller's event loop)."""
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[str] = context.Queue()
    process = context.Process(target=_client_process, args=(load, connections, seconds, queue))
    process.start()
    try:
        requests, errors, socket_errors, p50, p99, elapsed = json.loads(queue.get(timeout=seconds + 60))
    finally:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    return LoadResult(connections, elapsed, requests, errors, socket_errors, p50, p99)


def run_load(wrk: str | None, load: Load, connections: int, seconds: float) -> LoadResult:
    return run_wrk(wrk, load, connections, seconds) if wrk else run_aiohttp(load, connections, seconds)
