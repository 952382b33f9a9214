"""Each optimization bounded by its caller's tier and paid for before any work (issue 29): the
tier's cap of `timeLimit`, the optimizer's matrix counted against the tier's cells, the price
charged to the account's budget (`RateLimit-Cost`), and the solver lanes' turns taken
round-robin between accounts (real route service on Monaco, solver in threads)."""

from __future__ import annotations

import asyncio
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestServer

from common.admission import INTERNAL_JOB_HEADER, Caller, parse_cost_budgets
from common.config import DEFAULT_COST_BUDGETS
from common.errors import TooManyStops
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from common.pools import RestartingPool
from common.tiers import DEFAULT_MATRIX_CELLS, DEFAULT_OPTIMIZE_SECONDS, parse_tier_limits
from optimize_service.costs import (
    JOB_CELL_UNITS,
    UNITS_PER_CELL,
    UNITS_PER_OSRM_POINT,
    UNITS_PER_VALHALLA_CELL,
    TierRules,
    check_cells,
    cost_of_fleet,
    cost_of_stops,
    matrix_units,
)
from optimize_service.scheduler import LARGE, SMALL, Lane, Scheduler
from optimize_service.state import STATE_KEY
from optimize_service.stops.solver import estimate_s
from tests.optimize_service.conftest import ClientFactory, optimize_client
from tests.optimize_service.test_app import PROBLEM, URL, Client, stops
from tests.optimize_service.test_fleet_app import URL as FLEET_URL
from tests.optimize_service.test_fleet_app import seeded_instance

RULES = TierRules(
    parse_tier_limits("OPTIMIZE_TIME_LIMITS", DEFAULT_OPTIMIZE_SECONDS),
    parse_tier_limits("ROUTE_MATRIX_CELLS", DEFAULT_MATRIX_CELLS),
)


def who(tier: str, account: str = "acct-1", *, job: bool = False) -> dict[str, str]:
    headers = {INTERNAL_SUBJECT_HEADER: f"{account}-{tier}", INTERNAL_TIER_HEADER: tier}
    return {**headers, INTERNAL_JOB_HEADER: "1"} if job else headers


async def post(client: Client, url: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    sent = {"Content-Type": "application/json", **PROBLEM, **headers}
    response = await client.post(url, data=orjson.dumps(body), headers=sent)
    return response.status, dict(response.headers), await response.json(content_type=None)


def many_stops(count: int) -> list[dict[str, Any]]:
    """`count` distinct places in Monaco (refused before any routing in these tests)."""
    return [{"name": f"s{i}", "coordinate": {"lat": 43.73 + i * 1e-5, "lon": 7.42}} for i in range(count)]


async def test_time_limit_over_the_tiers_cap_is_400_naming_it(client: Client) -> None:
    """The campaign: one `timeLimit=30` took another account's request from 2.9 s to 30.8 s."""
    status, _, body = await post(client, f"{URL}?timeLimit=30", stops(5), who("standard"))
    assert status == 400 and body["type"] == "/problems/general/invalid-parameter/", body
    assert "timeLimit: must be a number of seconds between 0.05 and 10, the most the standard tier allows" in body["detail"]
    status, _, body = await post(client, f"{URL}?timeLimit=2.5", stops(5), who("demo"))
    assert status == 400 and "and 2, the most the demo tier allows" in body["detail"], body
    # The cap itself is allowed. Five stops are solved exactly at once (14 searched the whole 10 s).
    status, _, body = await post(client, f"{URL}?timeLimit=10", stops(5), who("standard"))
    assert status == 200, body
    fleet = {**seeded_instance(3, 6, 0, 1), "timeLimit": 12}
    status, _, body = await post(client, FLEET_URL, fleet, who("standard"))
    assert status == 400 and "the most the standard tier allows" in body["detail"], body


async def test_the_optimizers_matrix_counts_against_the_tiers_cells(client: Client) -> None:
    """The campaign: a synchronous 1000-stop request built a 1000 x 1000 matrix, 100 x the
    standard tier's /v1/matrix cells. Synchronous requests now stay within them."""
    status, _, body = await post(client, URL, many_stops(101), who("standard"))
    assert status == 413 and body["type"] == "/problems/optimize/too-many-stops", body
    assert "(10201 cells)" in body["detail"] and "10000 cells: at most 100 places" in body["detail"]
    assert "?async=true" in body["detail"]
    status, _, body = await post(client, URL, many_stops(32), who("demo"))
    assert status == 413 and "at most 31 places" in body["detail"], body
    fleet = seeded_instance(3, 40, 0, 2)  # 40 jobs and 2 starts: 42 places, over the demo's 1000 cells
    status, _, body = await post(client, FLEET_URL, fleet, who("demo"))
    assert status == 413 and "42 x 42" in body["detail"], body


async def test_a_jobs_replay_is_bounded_by_its_cost_not_by_the_cells(client: Client) -> None:
    """A job's replay may be larger than the synchronous cells (the campaign's rule: larger
    ones as jobs), up to what the tier's per-request cost pays at 0.1 units a
    cell (issue 55: jobs had no cell cap); its price is still charged."""
    optimizer = client.app[STATE_KEY].optimizer
    job = optimizer.allowance(Caller("acct-job", "demo", job=True))
    parsed = await optimizer.parse(many_stops(200), {}, job)
    assert len(parsed.stops) == 200
    assert parsed.options.time_limit_s is None  # the default 1.7 s at 200 stops is within demo's 2 s
    with pytest.raises(TooManyStops, match=r"the demo tier's jobs may have 50000 cells .*: at most 223 places"):
        await optimizer.parse(many_stops(224), {}, job)


async def test_the_answer_says_what_the_request_cost(client: Client) -> None:
    status, headers, body = await post(client, URL, stops(14), who("standard", "payer"))
    assert status == 200, body
    lane = client.app[STATE_KEY].optimizer.scheduler.lane_for_work(estimate_s(14, None))
    expected = cost_of_stops(14, estimate_s(14, None), lane.parallel)
    assert int(headers["RateLimit-Cost"]) == expected.units and expected.units >= 500  # a 0.5 s search
    assert int(headers["RateLimit-Cost-Remaining"]) <= 60_000 - expected.units


async def test_a_tour_at_a_time_pays_valhallas_matrix(client: Client) -> None:
    """Issue 56: matrices at a time are Valhalla's (a Dijkstra a source, ~70x OSRM's CH per
    cell), so a startTime prices the matrix as a restricted one."""
    url = f"{URL}?startTime=2026-12-01T10:00:00%2B01:00"
    status, headers, body = await post(client, url, stops(14), who("standard", "timed"))
    assert status == 200, body
    lane = client.app[STATE_KEY].optimizer.scheduler.lane_for_work(estimate_s(14, None))
    expected = cost_of_stops(14, estimate_s(14, None), lane.parallel, restricted=True)
    assert int(headers["RateLimit-Cost"]) == expected.units > cost_of_stops(14, estimate_s(14, None), lane.parallel).units


async def test_a_request_dearer_than_the_tier_allows_is_413_before_any_work(
    aiohttp_client: ClientFactory, monaco_route: TestServer, redis_server: str
) -> None:
    client = await optimize_client(
        aiohttp_client, str(monaco_route.make_url("")), redis_server, cost_budgets="standard=400/10/1000/1"
    )
    status, _, body = await post(client, URL, stops(14), who("standard"))
    assert status == 413 and body["type"] == "/problems/general/cost-too-high", body
    assert "14 stops" in body["detail"] and "at most 400 per request" in body["detail"]
    status, _, body = await post(client, URL, stops(14), {})  # on nobody's behalf: not charged
    assert status == 200, body


async def test_turns_in_a_lane_go_round_robin_between_accounts() -> None:
    """Three requests of one account queued, then one of another: the other's goes second, not
    fourth (a FIFO lock ran a1, a2, a3, b1)."""
    started, solving = threading.Event(), threading.Event()
    order: list[str] = []

    def work(name: str) -> None:
        order.append(name)
        if name == "a1":
            started.set()
            solving.wait(5)  # holds the lane while the others queue

    with ThreadPoolExecutor(max_workers=1) as pool:
        lane = Lane(LARGE, RestartingPool(LARGE, lambda: pool), 1, None, 1000.0)

        async def one(account: str, name: str) -> None:
            job = lane.admit(1.0, account)
            try:
                await lane.call(job, work, name)
            finally:
                lane.release(job)

        first = asyncio.create_task(one("a", "a1"))
        await asyncio.to_thread(started.wait, 5)
        others = []
        for account, name in (("a", "a2"), ("a", "a3"), ("b", "b1")):
            others.append(asyncio.create_task(one(account, name)))
            await asyncio.sleep(0.01)  # queued in this order
        solving.set()
        await asyncio.gather(first, *others)
    assert order == ["a1", "b1", "a2", "a3"]


async def test_a_waiter_that_leaves_passes_its_turn_on() -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        small = Lane(SMALL, RestartingPool(SMALL, lambda: pool), 1, None, 1000.0)
        large = Lane(LARGE, RestartingPool(LARGE, lambda: pool), 1, None, 1000.0)
        scheduler = Scheduler(small, large, 1.0)
        release = asyncio.Event()

        async def hold() -> None:
            async with scheduler.admit_work(5.0, "a") as (lane, job):
                await lane.call(job, lambda: None)
                await release.wait()

        holder = asyncio.create_task(hold())
        await asyncio.sleep(0.05)
        leaving = asyncio.create_task(large.call(large.admit(5.0, "b"), lambda: "b"))
        staying_job = large.admit(5.0, "c")
        staying = asyncio.create_task(large.call(staying_job, lambda: "c"))
        await asyncio.sleep(0.05)
        leaving.cancel()
        release.set()
        await holder
        assert await asyncio.wait_for(staying, 5) == "c"


def test_the_tier_rules_apply_only_on_someones_behalf() -> None:
    assert RULES.allowance(None, 30.0) is None
    standard = RULES.allowance(Caller("x", "standard"), 30.0)
    assert standard is not None and (standard.max_time_limit_s, standard.matrix_cells) == (10.0, 10_000)
    job = RULES.allowance(Caller("x", "standard", job=True), 30.0)
    assert job is not None and job.matrix_cells is None
    unknown = RULES.allowance(Caller("x", "gold"), 30.0)
    assert unknown is not None and (unknown.tier, unknown.matrix_cells) == ("demo", 1000)  # fail closed


def test_a_fleet_pays_each_profiles_matrix_at_its_engines_price() -> None:
    """Issue 55: 200 stops and 10 truck sizes (a road-graph matrix each) used 26.7 CPU-s of the
    route service for a ~2.9 s charge, every cell priced at OSRM's 2 us."""
    cars = cost_of_fleet(210, [("car", False)], 1.0, 2)
    trucks = cost_of_fleet(210, [("truck", True)] * 10, 1.0, 2)
    assert cars.units == math.ceil(2000 + 210 * 210 * UNITS_PER_CELL + 420 * UNITS_PER_OSRM_POINT)
    assert trucks.units == math.ceil(2000 + 10 * 210 * 210 * UNITS_PER_VALHALLA_CELL) >= 26_000
    assert "441000 matrix cells" in trucks.measure
    assert matrix_units("car", True, 10) == 100 * UNITS_PER_VALHALLA_CELL < matrix_units("bicycle", False, 10)


def test_a_jobs_cells_are_what_its_tiers_cost_cap_pays_at_the_graphs_price() -> None:
    rules = TierRules(RULES.time_limits, RULES.matrix_cells, parse_cost_budgets(DEFAULT_COST_BUDGETS))
    demo = rules.allowance(Caller("x", "demo", job=True), 30.0)
    standard = rules.allowance(Caller("x", "standard", job=True), 30.0)
    assert demo is not None and demo.matrix_cells == int(5000 / JOB_CELL_UNITS)
    assert standard is not None and standard.matrix_cells == int(60_000 / JOB_CELL_UNITS)
    with pytest.raises(TooManyStops, match="the demo tier's jobs may have 50000 cells"):
        check_cells(300, 1, demo, "300 stops", "stops")
