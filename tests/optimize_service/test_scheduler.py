"""The scheduling policy: which lane by size and time limit, the bounded queue, Retry-After."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from common.errors import OptimizerBusy
from common.pools import RestartingPool
from optimize_service.scheduler import LARGE, SMALL, Lane, Scheduler
from optimize_service.stops.exact import EXACT_MAX_STOPS
from optimize_service.stops.planner import solve_in
from optimize_service.stops.solver import TourProblem, default_time_limit, estimate_s


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lanes(pool: ThreadPoolExecutor, clock: Clock, *, queue_size: int | None = 4, queue_seconds: float = 40.0) -> Scheduler:
    small = Lane(SMALL, RestartingPool(SMALL, lambda: pool), 1, None, queue_seconds, clock=clock)
    large = Lane(LARGE, RestartingPool(LARGE, lambda: pool), 1, queue_size, queue_seconds, clock=clock)
    return Scheduler(small, large, small_max_s=1.0)


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


@pytest.mark.parametrize(
    ("stops", "time_limit", "lane"),
    [
        (2, None, SMALL),
        (EXACT_MAX_STOPS, 30.0, SMALL),  # exact: the time limit does not apply
        (20, None, SMALL),
        (100, None, SMALL),  # 0.8 s search
        (150, None, LARGE),  # 1.2 s search
        (20, 5.0, LARGE),  # a long search asked for
        (1000, None, LARGE),
        (300, 0.2, SMALL),
    ],
)
def test_the_lane_follows_the_estimated_solver_time(pool: ThreadPoolExecutor, stops: int, time_limit: float | None, lane: str) -> None:
    chosen = lanes(pool, Clock()).lane_for_work(estimate_s(stops, time_limit), small=stops <= EXACT_MAX_STOPS)
    assert chosen.name == lane


def test_estimates_follow_the_time_limit_and_the_measured_setup() -> None:
    assert estimate_s(EXACT_MAX_STOPS, 10.0) < 0.2
    assert estimate_s(20, None) == pytest.approx(default_time_limit(20), abs=0.01)
    assert estimate_s(1000, None) == pytest.approx(default_time_limit(1000) + 0.75)
    assert estimate_s(1000, 10.0) == pytest.approx(10.75)


def test_a_full_queue_refuses_with_the_time_until_there_is_room(pool: ThreadPoolExecutor) -> None:
    clock = Clock()
    large = lanes(pool, clock, queue_size=1).large
    solving = large.admit(4.0)
    solving.started = clock.now
    large.admit(4.0)  # waits behind it: the queue of one is full
    with pytest.raises(OptimizerBusy) as refused:
        large.admit(4.0)
    assert refused.value.status == 503 and refused.value.code == "OPTIMIZE_ERROR_BUSY"
    # Room once the one solving is done: in 4 s, then 3 s after one second of it.
    assert refused.value.headers["Retry-After"] == "4" and "2 large optimizations" in refused.value.detail
    clock.now += 1.0
    assert large.retry_after_s(4.0) == 3
    large.release(solving)
    large.admit(4.0)


def test_the_estimated_wait_bounds_the_queue_below_the_gateway_timeout(pool: ThreadPoolExecutor) -> None:
    clock = Clock()
    large = lanes(pool, clock, queue_size=None, queue_seconds=10.0).large
    first = large.admit(6.0)
    first.started = clock.now
    large.admit(3.0)  # 6 + 3 ≤ 10
    with pytest.raises(OptimizerBusy) as refused:
        large.admit(3.0)  # 9 + 3 > 10
    assert refused.value.headers["Retry-After"] == "6"  # after the first: 3 + 3 ≤ 10
    with pytest.raises(OptimizerBusy) as too_long:
        large.admit(12.0)  # longer than the bound: only into an empty lane
    assert too_long.value.headers["Retry-After"] == "9"


def test_an_idle_lane_takes_any_request(pool: ThreadPoolExecutor) -> None:
    large = lanes(pool, Clock(), queue_size=0, queue_seconds=5.0).large
    job = large.admit(estimate_s(1000, 30.0))
    with pytest.raises(OptimizerBusy):
        large.admit(1.0)
    large.release(job)
    large.admit(1.0)


async def test_small_requests_are_admitted_while_the_large_lane_is_full(pool: ThreadPoolExecutor) -> None:
    scheduler = lanes(pool, Clock(), queue_size=0)
    async with scheduler.admit_work(estimate_s(1000, None)):
        with pytest.raises(OptimizerBusy):
            async with scheduler.admit_work(estimate_s(500, None)):
                pass
        async with scheduler.admit_work(estimate_s(20, None)):
            assert len(scheduler.small.jobs) == 1
    assert not scheduler.large.jobs and not scheduler.small.jobs  # both released


async def test_a_place_is_released_when_the_request_fails(pool: ThreadPoolExecutor) -> None:
    scheduler = lanes(pool, Clock(), queue_size=0)
    with pytest.raises(RuntimeError):
        async with scheduler.admit_work(estimate_s(1000, None)):
            raise RuntimeError("the route service failed")
    async with scheduler.admit_work(estimate_s(1000, None)):
        pass


async def test_a_lane_solves_one_request_at_a_time_in_arrival_order(pool: ThreadPoolExecutor) -> None:
    """The real solver (in threads here): the second request starts when the first is done."""
    scheduler = lanes(pool, Clock())
    rng = np.random.default_rng(3)
    durations = rng.uniform(10, 100, size=(20, 20))
    begun_when_done: list[list[bool]] = []  # at each solve's end: which admitted requests had begun

    async def one() -> None:
        async with scheduler.admit_work(estimate_s(20, 2.0)) as (lane, job):  # a long search: the large lane
            tour = await solve_in(lane, job, TourProblem(durations, 0, None, 0.3))
            begun_when_done.append([job.started is not None for job in scheduler.large.jobs])
            assert sorted(tour.order) == list(range(20)) and tour.time_limit_s == 0.3

    await asyncio.gather(one(), one())
    # the first ended before the second (admitted behind it) began; then the second ran alone
    assert begun_when_done == [[True, False], [True]]
