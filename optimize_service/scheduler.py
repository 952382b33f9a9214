"""Which solver processes answer a problem, and when: two lanes and a bounded queue (no aiohttp).

Measured before (Heidelberg, two cores, one pool of two processes for every request): with two
1000-stop requests running, a 20-stop request waited 10.5 s for an answer that takes 0.55 s
alone. Now:

- **Small lane**: exact problems (Held-Karp, up to 12 stops) and short searches, those whose
  estimated solver time (a stop order's `stops.solver.estimate_s`, fleet routing's time limit)
  is at most `OPTIMIZE_SMALL_SECONDS` (1 s: up to ~120 stops at the default time limit). Processes of their own at normal priority, so a small
  problem never waits behind a large one and gets the CPU first.
- **Large lane**: everything else, including a small set with a long `timeLimit` (it asked for
  long work). Its processes are niced (`OPTIMIZE_LARGE_NICE`): on two cores a large search
  would otherwise take half the CPU from a small one.
- Each lane solves one request at a time, with all its processes (the portfolio's searches run
  at once, one per process); the others wait their turn, taken round-robin between accounts
  (`FairTurn`): one account's queued requests never go before another account's waiting one.
  Measured before (issue 29): one account's `timeLimit=30` took another's 300-stop request from
  2.9 s to 30.8 s; the tier's cap of `timeLimit` (optimize_service.costs) bounds the one solving,
  the turns bound the rest to one request of each account ahead. A lane admits a request only
  while the work ahead of it plus its own stays within `OPTIMIZE_QUEUE_SECONDS` (40 s; the
  gateway gives up on an optimization after 60 s) and, for the large lane, while at most
  `OPTIMIZE_QUEUE_SIZE` wait behind the one solving. Otherwise `OptimizerBusy`: 503 with
  `Retry-After`, the estimated seconds until the lane would admit it, at once and never a
  timeout. Admission comes before the road matrix, so a refused request costs no routing.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from common.errors import OptimizerBusy
from common.pools import RestartingPool

SMALL, LARGE = "small", "large"
T = TypeVar("T")

def parallel_searches(processes: int) -> int:
    """Two searches per request when the lane has two processes (the solver's portfolio has two;
    on the bench, PyVRP alone is 1.4-1.7 % above the reference at 200 and 500 stops, the pair
    ≤ 0.71 %); never more than its processes, or they would run one after the other."""
    return max(1, min(2, processes))


@dataclass(eq=False)
class Job:
    """One admitted request: counted in its lane from admission (before its matrix) to the end
    of its solve."""

    estimate_s: float
    started: float | None = None  # clock time its solve began
    account: str = ""  # who asked ("": on nobody's behalf); turns go round-robin between accounts


class FairTurn:
    """One holder at a time; the next turn goes to the waiting account served longest ago (one
    never served first), within an account in arrival order. A FIFO lock let one account's three
    queued requests all go before another account's one."""

    def __init__(self) -> None:
        self._held = False
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._served: dict[str, int] = {}  # account -> the turn it last had (holding or waiting)
        self._turns = 0
        self._arrivals = itertools.count()
        self._arrived: dict[asyncio.Future[None], int] = {}

    @asynccontextmanager
    async def hold(self, account: str) -> AsyncIterator[None]:
        await self._acquire(account)
        try:
            yield
        finally:
            self._pass_on()

    async def _acquire(self, account: str) -> None:
        if not self._held and not self._waiting:
            self._take(account)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(account, deque()).append(turn)
        self._arrived[turn] = next(self._arrivals)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._pass_on()  # handed the turn as the caller left: the next one takes it
            else:
                self._forget(account, turn)
            raise
        finally:
            self._arrived.pop(turn, None)

    def _take(self, account: str) -> None:
        self._held = True
        self._turns += 1
        self._served[account] = self._turns

    def _forget(self, account: str, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(account)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                del self._waiting[account]

    def _pass_on(self) -> None:
        self._held = False
        if not self._waiting:
            self._served.clear()  # nobody waits: no history to be fair about
            return
        account = min(self._waiting, key=lambda a: (self._served.get(a, 0), self._arrived[self._waiting[a][0]]))
        queue = self._waiting[account]
        turn = queue.popleft()
        if not queue:
            del self._waiting[account]
        self._take(account)
        # Only the holder's and the waiting accounts' turns matter: the history stays that small.
        self._served = {a: n for a, n in self._served.items() if a == account or a in self._waiting}
        turn.set_result(None)


@dataclass
class Lane:
    name: str
    pool: RestartingPool  # a killed solver process fails its request with a 503, not the lane
    processes: int
    queue_size: int | None  # requests that may wait behind the one solving; None: no limit
    queue_seconds: float  # most estimated solver seconds ahead of a request plus its own
    clock: Callable[[], float] = time.monotonic
    jobs: list[Job] = field(default_factory=list)  # admitted, in arrival order
    _turn: FairTurn = field(default_factory=FairTurn)

    @property
    def parallel(self) -> int:
        return parallel_searches(self.processes)

    def remaining_s(self, jobs: list[Job] | None = None) -> float:
        """Estimated solver seconds left in `jobs` (default: every admitted request)."""
        now = self.clock()
        total = 0.0
        for job in self.jobs if jobs is None else jobs:
            total += job.estimate_s if job.started is None else max(0.0, job.started + job.estimate_s - now)
        return total

    def fits(self, jobs: list[Job], estimate: float) -> bool:
        if not jobs:
            return True  # an idle lane takes anything: the gateway's limit bounds timeLimit
        if self.queue_size is not None and len(jobs) > self.queue_size:
            return False
        return self.remaining_s(jobs) + estimate <= self.queue_seconds

    def retry_after_s(self, estimate: float) -> int:
        """Seconds until the lane would admit a request of `estimate`, if the work ahead runs
        as estimated: the one solving first, then the others in arrival order."""
        ahead = sorted(self.jobs, key=lambda job: job.started is None)
        waited = 0.0
        for done in range(len(ahead) + 1):
            if self.fits(ahead[done:], estimate):
                break
            waited += self.remaining_s([ahead[done]])
        return max(1, math.ceil(waited))

    def admit(self, estimate: float, account: str = "") -> Job:
        if not self.fits(self.jobs, estimate):
            retry = self.retry_after_s(estimate)
            raise OptimizerBusy(
                f"{len(self.jobs)} {self.name} optimizations hold about {self.remaining_s():.0f} s of solver "
                f"work; try again in {retry} s",
                retry_after_s=retry,
            )
        job = Job(estimate, account=account)
        self.jobs.append(job)
        return job

    def release(self, job: Job) -> None:
        self.jobs.remove(job)

    async def call(self, job: Job, work: Callable[..., T], *args: Any) -> T:
        """One work in this lane's processes, once its turn comes."""
        async with self._turn.hold(job.account):
            job.started = self.clock()
            return await self.pool.run(work, *args)

    async def call_each(
        self, job: Job, calls: list[tuple[Callable[..., T], tuple[Any, ...]]]
    ) -> list[T | BaseException]:
        """Several works at once, one per process (a portfolio of searches), once its turn comes;
        every one to its end, a failure returned in its place."""
        async with self._turn.hold(job.account):
            job.started = self.clock()
            return await asyncio.gather(*(self.pool.run(work, *args) for work, args in calls), return_exceptions=True)

    def health(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "solving": sum(job.started is not None for job in self.jobs),
            "admitted": len(self.jobs),
            "queueSize": self.queue_size,
            "workSeconds": round(self.remaining_s(), 1),
            "restarts": self.pool.restarts,
        }


@dataclass
class Scheduler:
    small: Lane
    large: Lane
    small_max_s: float  # OPTIMIZE_SMALL_SECONDS

    def lane_for_work(self, estimate: float, small: bool = False) -> Lane:
        """`small`: the small lane whatever the estimate (an exact tour, whose time limit does
        not apply)."""
        return self.small if small or estimate <= self.small_max_s else self.large

    @staticmethod
    def check_room(lane: Lane, estimate: float) -> None:
        """OptimizerBusy now if the lane would refuse the request: before the account is charged
        for it (common.admission), so a busy optimizer costs the caller nothing."""
        lane.release(lane.admit(estimate))

    @asynccontextmanager
    async def admit_work(
        self, estimate: float, account: str = "", small: bool = False
    ) -> AsyncIterator[tuple[Lane, Job]]:
        """A place for the time of the block for work of `estimate` solver seconds (a stop order,
        fleet routing): the small lane up to `small_max_s` (or when `small`), else the large one;
        OptimizerBusy when it is full. Inside, run it with `lane.call(job, ...)` or
        `lane.call_each(job, ...)` once its turn comes (round-robin between accounts)."""
        lane = self.lane_for_work(estimate, small)
        job = lane.admit(estimate, account)
        try:
            yield lane, job
        finally:
            lane.release(job)

    def health(self) -> dict[str, Any]:
        return {SMALL: self.small.health(), LARGE: self.large.health()}
