"""Cost-aware admission against a real Redis: requests are priced, charged to their account's
budget, capped per request, and heavy ones hold one of the account's concurrent slots."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from common.admission import (
    INTERNAL_JOB_HEADER,
    JOB_PAID,
    JOB_PRICE_ONLY,
    Admission,
    Caller,
    Cost,
    Priced,
    caller_of,
    cost,
    parse_cost_budgets,
)
from common.errors import CostLimitExceeded, CostTooHigh, TooManyConcurrent
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from common.redis import ResilientRedis
from launcher.redis_server import free_port

BUDGETS = parse_cost_budgets("small=100/10/300/2,unlimited=0/0/0/0")


def account(tier: str = "small", *, job: bool = False) -> Caller:
    return Caller("test-" + uuid.uuid4().hex, tier, job)


async def test_a_request_dearer_than_its_tier_allows_is_refused_naming_both(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    with pytest.raises(CostTooHigh) as refused:
        async with admission.admit(account(), cost(101, "101 points")):
            pass
    assert refused.value.status == 413
    assert "101 work units (101 points)" in refused.value.detail and "at most 100" in refused.value.detail
    await admission.redis.close()


async def test_the_budget_pays_by_cost_not_by_request(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    caller = account()
    # 300 units in the bucket: three requests of 100 pass, the fourth is refused.
    for _ in range(3):
        async with admission.admit(caller, cost(100, "100 points")) as admitted:
            assert admitted.headers["RateLimit-Cost"] == "100"
    with pytest.raises(CostLimitExceeded) as refused:
        async with admission.admit(caller, cost(100, "100 points")):
            pass
    assert refused.value.status == 429
    # 100 units at 10 per second: ten seconds.
    assert 9 <= int(refused.value.headers["Retry-After"]) <= 10
    # Another account's budget is its own.
    async with admission.admit(account(), cost(100, "100 points")):
        pass
    await admission.redis.close()


async def test_cheap_requests_are_not_refused_where_dear_ones_are(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    caller = account()
    for units in (100, 100, 50):  # 50 of 300 units left
        async with admission.admit(caller, cost(units, "x")):
            pass
    with pytest.raises(CostLimitExceeded):
        async with admission.admit(caller, cost(100, "x")):
            pass
    async with admission.admit(caller, cost(2, "two routes")) as admitted:
        assert int(admitted.headers["RateLimit-Cost-Remaining"]) < 100
    await admission.redis.close()


async def test_a_jobs_replay_is_charged_into_debt_but_never_refused(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    caller = account()
    job = Caller(caller.account, caller.tier, job=True)
    for _ in range(5):
        async with admission.admit(job, cost(100, "x")):
            pass
    with pytest.raises(CostLimitExceeded) as refused:
        async with admission.admit(caller, cost(2, "x")):
            pass
    # 500 units charged into a 300-unit bucket: 202 units (20 s) before two more fit.
    assert int(refused.value.headers["Retry-After"]) >= 20
    await admission.redis.close()


async def test_a_jobs_submission_is_priced_refusably_and_its_replay_not_charged_again(redis_server: str) -> None:
    """Issue 55: jobs were priced only at run time, so a job over the tier's cap was accepted
    (202) and failed later, and an empty budget never refused one."""
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    who = {INTERNAL_SUBJECT_HEADER: "test-" + uuid.uuid4().hex, INTERNAL_TIER_HEADER: "small"}
    pricing = caller_of({**who, INTERNAL_JOB_HEADER: JOB_PRICE_ONLY})
    paid = caller_of({**who, INTERNAL_JOB_HEADER: f"{JOB_PAID}:100"})
    assert pricing is not None and pricing.job and pricing.price_only and not pricing.paid
    assert paid is not None and paid.job and paid.paid and not paid.price_only and paid.paid_units == 100
    ran = []
    with pytest.raises(CostTooHigh, match="at most 100 per request"):
        async with admission.admit(pricing, cost(101, "x")):
            ran.append(1)
    with pytest.raises(Priced) as priced:
        async with admission.admit(pricing, cost(100, "x", heavy=True)):
            ran.append(1)
    assert priced.value.headers["RateLimit-Cost"] == "100" and priced.value.headers["RateLimit-Cost-Remaining"] == "200"
    with pytest.raises(Priced):  # light work is charged too: it is a job
        async with admission.admit(pricing, cost(1, "x")):
            ran.append(1)
    for _ in range(3):  # the paid replays cost nothing more, and are never refused
        async with admission.admit(paid, cost(100, "x", heavy=True)) as admitted:
            ran.append(2)
    assert ran == [2, 2, 2] and admitted.headers == {} and admitted.charged == 100  # what a settlement starts from
    for _ in range(2):
        with pytest.raises(Priced):
            async with admission.admit(pricing, cost(90, "x")):
                pass
    with pytest.raises(CostLimitExceeded, match="holds 19 now"):  # 300 - 100 - 1 - 2 x 90: it cannot pay 50
        async with admission.admit(pricing, cost(50, "x")):
            pass
    await admission.redis.close()


async def test_heavy_work_holds_one_of_the_accounts_slots_until_it_answers(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    caller = account()
    heavy = Cost(1, "a match", heavy=True)
    async with admission.admit(caller, heavy), admission.admit(caller, heavy):
        with pytest.raises(TooManyConcurrent) as refused:
            async with admission.admit(caller, heavy):
                pass
        assert refused.value.headers["Retry-After"] == "1"
        # Light work is not held back, nor another account's heavy work.
        async with admission.admit(caller, Cost(1, "a route")), admission.admit(account(), heavy):
            pass
    # Both slots were given back.
    async with admission.admit(caller, heavy), admission.admit(caller, heavy):
        pass
    await admission.redis.close()


async def test_a_slot_left_by_a_dead_process_frees_itself(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS, lease_seconds=0.2)
    caller = account()
    heavy = Cost(1, "a match", heavy=True)
    for _ in range(2):
        assert await admission.take_slot(caller, BUDGETS.for_tier("small"), {})  # never released
    with pytest.raises(TooManyConcurrent):
        await admission.take_slot(caller, BUDGETS.for_tier("small"), {})
    # Redis' own clock decides; wait for the lease by polling, not by a fixed sleep.
    for _ in range(100):
        try:
            async with admission.admit(caller, heavy):
                break
        except TooManyConcurrent:
            await asyncio.sleep(0.05)
    else:
        pytest.fail("the leases never ran out")
    await admission.redis.close()


async def test_an_unreachable_redis_admits_but_the_per_request_cap_still_holds() -> None:
    admission = Admission(ResilientRedis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.05), BUDGETS)
    caller = account()
    for _ in range(10):
        async with admission.admit(caller, Cost(100, "x", heavy=True)):
            pass
    with pytest.raises(CostTooHigh):
        async with admission.admit(caller, cost(1000, "x")):
            pass
    await admission.redis.close()


async def test_an_unreachable_redis_lets_large_bodies_through_unrefused() -> None:
    """The early refusal of a large body fails open like the rest of admission."""
    admission = Admission(ResilientRedis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.05), BUDGETS)
    for _ in range(3):  # more than a spent budget would let through: no CostLimitExceeded
        await admission.refuse_large_body_early(account(), 1 << 20)
    assert not admission.redis.available
    await admission.redis.close()


async def test_a_spent_budget_refuses_only_large_bodies_and_never_a_jobs_replay(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    caller = account()
    for _ in range(3):  # the whole burst, 100 at a time (the most per request)
        async with admission.admit(caller, Cost(100, "x")):
            pass
    with pytest.raises(CostLimitExceeded) as caught:
        await admission.refuse_large_body_early(caller, 1 << 20)
    assert int(caught.value.headers["Retry-After"]) >= 1
    await admission.refuse_large_body_early(caller, 1000)  # small: left to the priced admission
    await admission.refuse_large_body_early(Caller(caller.account, caller.tier, True), 1 << 20)
    await admission.redis.close()


async def test_internal_calls_on_nobodys_behalf_are_not_charged(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    assert caller_of({}) is None
    async with admission.admit(None, cost(10**9, "the optimizer's matrix")) as admitted:
        assert admitted.headers == {}
    found = caller_of({INTERNAL_SUBJECT_HEADER: "u1", INTERNAL_TIER_HEADER: "standard", "X-Internal-Job": "1"})
    assert found == Caller("u1", "standard", True)
    await admission.redis.close()


async def test_light_requests_are_left_to_the_gateways_request_rate(redis_server: str) -> None:
    admission = Admission(ResilientRedis(redis_server), BUDGETS)
    caller = account()
    for _ in range(400):  # more than the 300-unit bucket holds
        async with admission.admit(caller, cost(0.5, "one route")) as admitted:
            assert admitted.headers == {}
    await admission.redis.close()


def test_budgets_parse_and_unknown_tiers_get_the_smallest() -> None:
    budgets = parse_cost_budgets("demo=10/1/20/1,standard=100/10/200/2")
    assert budgets.for_tier("standard").per_request == 100
    assert budgets.for_tier("gold").per_request == 10
    assert budgets.for_tier(None).per_request == 10
    for bad in ("demo=1/2/3", "demo=a/1/1/1", "demo=-1/1/1/1", "demo=1/1/0/1", ""):
        with pytest.raises(SystemExit):
            parse_cost_budgets(bad)


def test_a_work_unit_is_a_cpu_millisecond_and_any_answered_work_costs_one() -> None:
    from common.admission import cpu_of_units, units_of_cpu

    assert units_of_cpu(0.0) == 1
    assert units_of_cpu(0.0015) == 2
    assert units_of_cpu(cpu_of_units(800_000)) == 800_000
