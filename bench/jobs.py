"""Asynchronous jobs (issue 17) through the gateway: what a job costs against the same call
answered synchronously, and the per-tier limit on jobs at once.

    python -m bench jobs    # BENCH_JOBS_MAPS (the five cities), BENCH_JOBS_BUDGET_SECONDS (420)

One platform: the state and cache Redis, the auth, route, optimize and job services and the
gateway as real processes on free loopback ports (`launcher.stack.Stack`); accounts made and
logged in as users do, every call through the gateway with the token. A job is timed from
sending `POST …?async=true` to having read the first `GET /v1/jobs/{id}` (polled every 0.2 s)
that says succeeded, result inline; a synchronous call from sending it to having read its whole
answer. Job and synchronous runs alternate, so the machine's load falls on both alike.

1. `POST /v1/optimize/stops`, 20 stops on Heidelberg's roads (bench/fleet.py's seeded places),
   20 runs each way, and the submit's own 202;
2. `POST /v1/optimize/routes`, 100 jobs x 5 vehicles (bench/fleet.py's instance), 3 runs each way;
3. per tier, its job limit + 3 fleet jobs submitted at once from as many threads: how many got
   202, how many 429 `JOB_ERROR_TOO_MANY_JOBS` with `Retry-After`, anything else, no answer;
   the accepted ones are then cancelled (`DELETE`) and one more submit must be accepted;
4. 20 000-line detour files (bench/detour.py's seeded files, the documented maximum; goal: the
   job done in ≤ 15 s), 3 runs each way, on each map of BENCH_JOBS_MAPS in turn (the route
   service restarted on it) while the time budget allows: a map is left out, and named, when
   the previous map's time would take the run past BENCH_JOBS_BUDGET_SECONDS.

Every call has a timeout and every job a deadline: the bench stops by itself.
`run()` returns the Markdown section; `python -m bench jobs` writes it to RESULTS.md.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from bench.detour import MAX_CASES, boxes_of, detour_file
from bench.fleet import fleet_instance, pool
from bench.full_stack import loopback_stack
from bench.maps import CITIES, map_dir
from bench.scale import percentile
from common.tiers import DEFAULT_JOB_LIMITS, TIERS, parse_tier_limits
from launcher.stack import Stack

MAPS = [name.strip() for name in os.environ.get("BENCH_JOBS_MAPS", ",".join(CITIES)).split(",") if name.strip()]
BUDGET_S = float(os.environ.get("BENCH_JOBS_BUDGET_SECONDS", "420"))
CITY = "heidelberg"  # the optimization runs' roads
SERVICES = ["auth_service", "route_service", "optimize_service", "job_service"]
DETOUR_RUNS = 3
STOPS = 20
STOPS_RUNS = 20
FLEET_JOBS, FLEET_VEHICLES = 100, 5
FLEET_RUNS = 3
EXTRA_JOBS = 3  # submitted at once beyond the tier's limit
POLL_S = 0.2
GOAL_S = 15.0  # a 20 000-line detour file as a job (issue 17)
CALL_TIMEOUT_S = 150.0  # above the gateway's 120 s for a detour file
SUBMIT_TIMEOUT_S = 30.0  # a submit not answered by then counts as "no answer"
JOB_DEADLINE_S = 300.0  # a job not done by then stops the bench
LEFTOVER_S = 5.0  # after cancelling running jobs: the owning service may finish their work
JSON, CSV = "application/json", "text/csv"
# A fixed start: the answers' times do not depend on the clock, so job and synchronous answers compare.
STOPS_PATH = "/v1/optimize/stops?startTime=2026-11-25T08:00:00%2B01:00"


class BenchError(RuntimeError):
    """A call or a job did not do what the bench needs; the message says which and why."""


# ---------------------------------------------------------------- HTTP through the gateway


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes
    seconds: float

    def json(self) -> Any:
        return orjson.loads(self.body)

    def describe(self) -> str:
        return f"{self.status} {error_code(self.body) or self.body[:200]!r} after {self.seconds:.1f} s"


def error_code(body: bytes) -> str:
    """The code of an error answer in the legacy format (`details[0].code`); '' when none."""
    try:
        details = orjson.loads(body).get("details") or [{}]
        return str(details[0].get("code", ""))
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return ""


@dataclass(frozen=True)
class Api:
    """One account's calls through the gateway."""

    base_url: str
    token: str

    def call(
        self, method: str, path: str, body: bytes | None = None, content_type: str = JSON,
        timeout: float = CALL_TIMEOUT_S,
    ) -> Reply:  # fmt: skip
        headers = {"Authorization": f"Bearer {self.token}", "Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(  # noqa: S310 - loopback
            self.base_url + path, data=body, headers=headers, method=method
        )
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 - loopback
                status, head, raw = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            status, head, raw = exc.code, exc.headers, exc.read()
        return Reply(status, {k.lower(): v for k, v in head.items()}, raw, time.perf_counter() - started)

    def synchronous(self, path: str, body: bytes, content_type: str = JSON) -> Reply:
        reply = self.call("POST", path, body, content_type)
        if reply.status != 200:
            raise BenchError(f"POST {path}: {reply.describe()}")
        return reply

    def job(self, path: str, body: bytes, content_type: str = JSON) -> JobRun:
        """Submitted with ?async=true and polled until it succeeded."""
        began = time.perf_counter()
        submitted = self.call("POST", with_async(path), body, content_type)
        if submitted.status != 202:
            raise BenchError(f"POST {with_async(path)}: {submitted.describe()}")
        location = submitted.headers["location"]
        while time.perf_counter() - began < JOB_DEADLINE_S:
            time.sleep(POLL_S)
            polled = self.call("GET", location)
            if polled.status != 200:
                raise BenchError(f"GET {location}: {polled.describe()}")
            job = polled.json()
            if job["status"] == "succeeded":
                return JobRun(
                    submitted.seconds,
                    time.perf_counter() - began,
                    span(job["createdAt"], job["startedAt"]),
                    span(job["startedAt"], job["finishedAt"]),
                    job["result"],
                )
            if job["status"] not in ("queued", "running"):
                raise BenchError(f"job {path}: {job['status']}, {job.get('error')}")
        raise BenchError(f"job {path} not done after {JOB_DEADLINE_S:g} s")


def with_async(path: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}async=true"


def span(start: str, end: str) -> float:
    """Seconds between two of a job's ISO times (the job service's own clock)."""
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


@dataclass(frozen=True)
class JobRun:
    submit_s: float  # POST ?async=true sent → its 202 read
    done_s: float  # POST sent → the GET that says succeeded read whole
    queued_s: float  # the job's createdAt → startedAt
    running_s: float  # startedAt → finishedAt: the replayed call and the stored result
    result: Any = field(default=None, repr=False, compare=False)


def alternated(runs: int, sync: Callable[[], Reply], job: Callable[[], JobRun]) -> tuple[list[Reply], list[JobRun]]:
    replies: list[Reply] = []
    jobs: list[JobRun] = []
    for _ in range(runs):
        replies.append(sync())
        jobs.append(job())
    return replies, jobs


# ---------------------------------------------------------------- the platform


@contextmanager
def platform(data_dir: Path, city: str) -> Iterator[Stack]:
    stack = loopback_stack(data_dir, SERVICES, MAP_DIR=str(map_dir(city)))
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def serve_map(stack: Stack, name: str) -> None:
    """The route service restarted on another map (the other processes keep running)."""
    stack.extra_env["MAP_DIR"] = str(map_dir(name))
    stack.stop_process("route_service")
    stack.start_process("route_service")
    stack.wait_healthy("route_service")


# ---------------------------------------------------------------- 1, 2: small operations


@dataclass(frozen=True)
class Timings:
    """One operation, synchronous and as a job, runs alternating."""

    sync_s: list[float]
    jobs: list[JobRun]
    detail: str = ""  # what the answers were


def stops_body() -> bytes:
    places = pool(CITY).points[:STOPS]
    return orjson.dumps([{"name": f"s{i}", "coordinate": {"lat": p.lat, "lon": p.lon}} for i, p in enumerate(places)])


def stop_order(api: Api) -> Timings:
    body = stops_body()
    api.synchronous(STOPS_PATH, body)
    api.job(STOPS_PATH, body)  # warm: the runner's connection to the optimize service
    replies, jobs = alternated(STOPS_RUNS, lambda: api.synchronous(STOPS_PATH, body), lambda: api.job(STOPS_PATH, body))
    same = all(job.result == replies[0].json() for job in jobs)
    return Timings([r.seconds for r in replies], jobs, f"job results equal to the synchronous answer: {yes(same)}")


def fleet(api: Api) -> Timings:
    body = orjson.dumps(fleet_instance(CITY, FLEET_JOBS, FLEET_VEHICLES).body)
    api.synchronous("/v1/optimize/routes", body)  # the first fleet request warms VROOM's process
    replies, jobs = alternated(
        FLEET_RUNS, lambda: api.synchronous("/v1/optimize/routes", body), lambda: api.job("/v1/optimize/routes", body)
    )
    routes = sorted({len(job.result["routes"]) for job in jobs})
    left = sorted({len(job.result.get("unassigned", [])) for job in jobs})
    return Timings([r.seconds for r in replies], jobs, f"routes per job answer: {routes}, jobs unassigned: {left}")


# ---------------------------------------------------------------- 3: the tier's limit


@dataclass(frozen=True)
class LimitRun:
    tier: str
    limit: int
    submitted: int
    accepted: int
    refused: int  # 429 JOB_ERROR_TOO_MANY_JOBS with Retry-After
    retry_after: list[str]  # the distinct Retry-After values of those
    other: list[str]  # any other answer, described
    no_answer: int  # timed out or the connection failed
    slowest_s: float  # the slowest submit answered
    room_after_cancel: bool  # one more submit accepted once the accepted ones were cancelled


def job_limits() -> dict[str, int]:
    """The job service's limits per tier, as it reads them (JOB_LIMITS, else the default)."""
    return parse_tier_limits("JOB_LIMITS", os.environ.get("JOB_LIMITS", DEFAULT_JOB_LIMITS)).values


def too_many_jobs(reply: Reply) -> bool:
    """The tier's limit, answered as documented: 429, its code, and when to try again."""
    return (
        reply.status == 429 and error_code(reply.body) == "JOB_ERROR_TOO_MANY_JOBS" and "retry-after" in reply.headers
    )


def at_once(api: Api, count: int, body: bytes) -> list[Reply | None]:
    """`count` submits released together; None where no answer came."""
    gate = threading.Barrier(count)

    def submit() -> Reply | None:
        gate.wait(timeout=SUBMIT_TIMEOUT_S)
        try:
            return api.call("POST", with_async("/v1/optimize/routes"), body, timeout=SUBMIT_TIMEOUT_S)
        except (TimeoutError, urllib.error.URLError):
            return None

    with ThreadPoolExecutor(max_workers=count) as threads:
        return list(threads.map(lambda _: submit(), range(count)))


def over_the_limit(stack: Stack, tier: str, limit: int, body: bytes) -> LimitRun:
    api = Api(stack.base_url, stack.login(tier))
    replies = at_once(api, limit + EXTRA_JOBS, body)
    answered = [r for r in replies if r is not None]
    accepted = [r for r in answered if r.status == 202]
    refused = [r for r in answered if too_many_jobs(r)]
    other = [r.describe() for r in answered if r.status != 202 and not too_many_jobs(r)]
    for reply in accepted:
        cancelled = api.call("DELETE", reply.headers["location"])
        if cancelled.status not in (200, 204):
            raise BenchError(f"DELETE {reply.headers['location']}: {cancelled.describe()}")
    again = api.call("POST", with_async("/v1/optimize/routes"), body, timeout=SUBMIT_TIMEOUT_S)
    if again.status == 202:
        api.call("DELETE", again.headers["location"])
    return LimitRun(
        tier,
        limit,
        len(replies),
        len(accepted),
        len(refused),
        sorted({r.headers["retry-after"] for r in refused}),
        other,
        len(replies) - len(answered),
        max((r.seconds for r in answered), default=0.0),
        again.status == 202,
    )


def limits(stack: Stack) -> list[LimitRun]:
    body = orjson.dumps(fleet_instance(CITY, FLEET_JOBS, FLEET_VEHICLES).body)  # seconds each: still active
    per_tier = job_limits()
    found = [over_the_limit(stack, tier, per_tier[tier], body) for tier in TIERS if tier in per_tier]
    time.sleep(LEFTOVER_S)
    return found


# ---------------------------------------------------------------- 4: detour files


@dataclass(frozen=True)
class DetourMap:
    name: str
    size: int  # bytes of the file
    answered: int
    failed: int
    sync_s: list[float]
    jobs: list[JobRun]
    same: bool  # every job's result equal to the synchronous answer


def detour_map(api: Api, name: str) -> DetourMap:
    body = detour_file(boxes_of(name), MAX_CASES)
    path = f"/v1/detour/file?filename={name}-{MAX_CASES}.csv"
    warm = b"\n".join(body.split(b"\n")[:50]) + b"\n"
    api.synchronous(path, warm, CSV)
    api.job(path, warm, CSV)  # the runner's connection to a route service just started
    sync_s: list[float] = []
    jobs: list[JobRun] = []
    reference: Any = None
    same = True
    for _ in range(DETOUR_RUNS):  # answers of a few MB: compared at once, not kept
        reply = api.synchronous(path, body, CSV)
        sync_s.append(reply.seconds)
        answer = reply.json()
        reference = answer if reference is None else reference
        same &= answer == reference
        run = api.job(path, body, CSV)
        same &= run.result == reference
        jobs.append(JobRun(run.submit_s, run.done_s, run.queued_s, run.running_s))
    summary = reference["summary"]
    return DetourMap(name, len(body), summary["answered"], summary["failed"], sync_s, jobs, same)


def detour_maps(stack: Stack, api: Api, began: float) -> tuple[list[DetourMap], list[str]]:
    """Each map in turn while the budget allows; the maps left out."""
    found: list[DetourMap] = []
    skipped: list[str] = []
    serving, last_s = CITY, 0.0
    for name in MAPS:
        if found and time.perf_counter() - began + last_s > BUDGET_S:
            skipped.append(name)
            continue
        started = time.perf_counter()
        if name != serving:
            serve_map(stack, name)
            serving = name
        found.append(detour_map(api, name))
        last_s = time.perf_counter() - started
        print(f"   detour {name}: {last_s:.0f} s", flush=True)
    return found, skipped


# ---------------------------------------------------------------- the section


def run() -> str:
    began = time.perf_counter()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as data, platform(Path(data), CITY) as stack:
        api = Api(stack.base_url, stack.login("unlimited"))
        stops = stop_order(api)
        fleets = fleet(api)
        tiers = limits(stack)
        maps, skipped = detour_maps(stack, api, began)
    return report(maps, skipped, stops, fleets, tiers, (load_before, os.getloadavg()[0]), time.perf_counter() - began)


def thousands(count: int) -> str:
    return f"{count:,}".replace(",", " ")


def yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def p50_p99(values: list[float], digits: int = 2) -> str:
    return f"{percentile(values, 50):.{digits}f} / {percentile(values, 99):.{digits}f}"


def detour_row(found: DetourMap) -> str:
    done = [j.done_s for j in found.jobs]
    return (
        f"| {found.name} | {found.size / 1e6:.2f} MB | {found.answered} / {found.failed} | {spread(found.sync_s)} "
        f"| {spread(done)} | {spread([j.submit_s for j in found.jobs])} "
        f"| {statistics.median([j.queued_s for j in found.jobs]):.2f} "
        f"| {statistics.median([j.running_s for j in found.jobs]):.2f} | {yes(max(done) <= GOAL_S)} "
        f"| {yes(found.same)} |"
    )


def report(
    maps: list[DetourMap], skipped: list[str], stops: Timings, fleets: Timings, tiers: list[LimitRun],
    load: tuple[float, float], wall_s: float,
) -> str:  # fmt: skip
    stops_done = [j.done_s for j in stops.jobs]
    fleet_done = [j.done_s for j in fleets.jobs]
    return "\n".join(
        [
            "## Asynchronous jobs (`?async=true`, `/v1/jobs`)",
            "",
            f"Command: `python -m bench jobs` (BENCH_JOBS_MAPS={','.join(MAPS)}, "
            f"BENCH_JOBS_BUDGET_SECONDS={BUDGET_S:g}); {wall_s / 60:.1f} min, load average {load[0]:.1f} at the "
            f"start and {load[1]:.1f} at the end (2 shared cores: other work was running). Redis (state, cache), "
            "the auth, route, optimize and job services and the gateway as real processes on loopback, one "
            "`unlimited` account, every call through the gateway with its token. A job: from sending "
            f"`POST …?async=true` to having read the first `GET /v1/jobs/{{id}}` (polled every {POLL_S:g} s) that "
            "says `succeeded`, its result inline; synchronous: sent → whole answer read; the two alternate. "
            "Queued and running: the job's own `createdAt` → `startedAt` → `finishedAt` (the runner looks for "
            "queued work every 0.25 s when idle; running is the replayed call and the compressed write of the "
            "result). Job service at its defaults (2 jobs at once, `JOB_LIMITS` demo=1, standard=3, "
            "unlimited=10).",
            "",
            f"**{thousands(MAX_CASES)}-line detour files** (`POST /v1/detour/file`, the documented maximum; bench/detour.py's "
            f"seeded from/to/via points in a box of the city), {DETOUR_RUNS} runs each way, the route service "
            f"started on each map in turn; goal: the job done in ≤ {GOAL_S:g} s (issue 17). Seconds, median "
            "(min-max).",
            "",
            "| map | file | answered / failed lines | synchronous s | job done s | submit (202) s | queued s "
            "| running s | job ≤ 15 s | job result = synchronous answer |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *(detour_row(found) for found in maps),
            "",
            (
                f"Left out for the time budget: {', '.join(skipped)} (the previous map's runs would have taken the "
                f"bench past {BUDGET_S:g} s; `BENCH_JOBS_MAPS={','.join(skipped)} python -m bench jobs` measures "
                "them, and rewrites this section)."
                if skipped
                else "Every map named was measured."
            ),
            "",
            f"**Job overhead on a small operation**: `POST /v1/optimize/stops` with {STOPS} stops on Heidelberg's "
            f"roads, {STOPS_RUNS} runs each way (p99 of {STOPS_RUNS}: near the slowest); {stops.detail}.",
            "",
            "| | p50 / p99 s |",
            "|---|---|",
            f"| synchronous | {p50_p99(stops.sync_s, 3)} |",
            f"| job: submit → succeeded read | {p50_p99(stops_done, 3)} |",
            f"| job: the submit's 202 alone | {p50_p99([j.submit_s for j in stops.jobs], 3)} |",
            f"| job: queued (createdAt → startedAt) | {p50_p99([j.queued_s for j in stops.jobs], 3)} |",
            f"| job: running (startedAt → finishedAt) | {p50_p99([j.running_s for j in stops.jobs], 3)} |",
            f"| added by the job (p50 job - p50 synchronous) | "
            f"{percentile(stops_done, 50) - percentile(stops.sync_s, 50):.3f} |",
            "",
            f"**Fleet as a job**: `POST /v1/optimize/routes`, {FLEET_JOBS} jobs x {FLEET_VEHICLES} vehicles "
            f"(bench/fleet.py's seeded Heidelberg instance), {FLEET_RUNS} runs each way after one synchronous "
            f"warm-up; {fleets.detail}. Seconds, median (min-max): synchronous {spread(fleets.sync_s)}, job "
            f"submit → succeeded {spread(fleet_done)} (submit {spread([j.submit_s for j in fleets.jobs])}, queued "
            f"{spread([j.queued_s for j in fleets.jobs])}, running {spread([j.running_s for j in fleets.jobs])}).",
            "",
            f"**Jobs at once per account**: per tier a new account submits its limit + {EXTRA_JOBS} fleet jobs "
            f"({FLEET_JOBS} x {FLEET_VEHICLES}, seconds each, so none finishes meanwhile) from as many threads "
            f"released together, {SUBMIT_TIMEOUT_S:g} s timeout each; then cancels the accepted ones (`DELETE`) "
            "and submits one more.",
            "",
            "| tier | limit | submitted at once | 202 | 429 `JOB_ERROR_TOO_MANY_JOBS` with Retry-After (values) "
            "| other answers | no answer (timeout) | slowest submit s | accepted again after cancelling |",
            "|---|---|---|---|---|---|---|---|---|",
            *(
                f"| {t.tier} | {t.limit} | {t.submitted} | {t.accepted} | {t.refused} ({', '.join(t.retry_after)} s) "
                f"| {'; '.join(t.other) or 'none'} | {t.no_answer} | {t.slowest_s:.2f} | {yes(t.room_after_cancel)} |"
                for t in tiers
            ),
        ]
    )


if __name__ == "__main__":
    print(run())
