"""Cost-aware admission: every operation declares what its request will cost before any work
starts, and the caller's account pays for it out of its tier's budget.

A request rate alone let one account starve the rest (issue 29): one `POST /v1/match` of
10 000 points cost 46-50 CPU-seconds and counted as one request, like a 3 ms route. So each
operation's parsed request is priced in **work units**, one unit being about one millisecond
of one core's work on the reference machine (the cost models of each operation, with the
measurement behind them, sit beside its parser: `cost_of_*` functions). Then, before the work:

1. a request dearer than the tier's `per_request` cost is refused with 413 `ERROR_COST_TOO_HIGH`,
   naming its cost and the limit (no budget could ever pay for it);
2. the units are charged to the account's budget, a GCRA bucket in the state Redis refilled at
   `rate` units per second up to `burst` units (shared by every replica); an empty budget is a
   429 `ERROR_COST_LIMIT_EXCEEDED` with `Retry-After`, the time the budget needs to refill;
3. heavy work (`Cost.heavy`: matching, isochrones, large matrices, optimizations, detour files)
   also takes one of the account's `concurrent` slots for as long as it runs (a lease in the
   state Redis, released at the end, expiring on its own if the process dies), so one account's
   parallel heavy requests cannot occupy every worker; beyond it a 429 `ERROR_TOO_MANY_CONCURRENT`.

Every answer carries `RateLimit-Cost` (units charged), `RateLimit-Cost-Limit` (the burst) and
`RateLimit-Cost-Remaining`. Like the gateway's request rate, admission fails open when the state
Redis is unreachable (serving beats refusing; the per-request cap still holds, it needs no Redis),
but not when it answers that it is full: that is a 503 (issue 55).

Calls without a caller (internal calls between our services, e.g. the optimizer's matrix) are
not charged again: the public request that caused them paid for the whole. Jobs are priced at
submission (issue 55): the job service first sends the request to its owning service with
`X-Internal-Job: price`, whose handler parses and prices it as usual; `admit` then checks the
tier's cap (413) and charges the budget (429 when it cannot pay) and, instead of the work,
raises `Priced`, which `common.middleware` answers 204 with the RateLimit-Cost headers. The
job's replay (`X-Internal-Job: paid:<units paid>`) is neither checked nor charged again, and never
refused; an operation that settles its price to the work measured (`Admission.settle`) settles it
from what the submission paid, into debt if need be.
A job stored unpaid (its owning service could not be asked at submission: the job service
fails open) is replayed with `X-Internal-Job: 1`: charged into debt but never refused, which
later synchronous requests feel.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

from redis.asyncio import Redis

from common.errors import CostLimitExceeded, CostTooHigh, TooManyConcurrent
from common.internal_auth import INTERNAL_SUBJECT_HEADER, INTERNAL_TIER_HEADER
from common.redis import ResilientRedis

# Set by the job service (trusted only behind the internal credential): on a submission's
# pricing (JOB_PRICE_ONLY), a paid job's replay (JOB_PAID) or an unpaid one's ("1").
INTERNAL_JOB_HEADER = "X-Internal-Job"
JOB_PRICE_ONLY = "price"
JOB_PAID = "paid"

# The budgets' text (tier=per_request/rate/burst/concurrent; 0: that number does not limit) is
# COST_BUDGETS, default common.config.DEFAULT_COST_BUDGETS.
# A heavy request's slot outlives the longest request the gateway waits for (120 s, detour
# files) so a running request never loses it; a crashed process's slot frees itself then.
SLOT_LEASE_SECONDS = 150
HEAVY_KEY = "heavy:{account}"
BUDGET_KEY = "cost:{account}"

# GCRA over units (the gateway's request rate too: one unit, no debt): the key holds the
# theoretical arrival time (ms, Redis' clock so replicas agree). A request of n units moves it by
# n intervals; `debt` (ARGV[4] = 1) charges even when the budget is empty. Answers {allowed, ms
# to wait, units left, ms until the budget is whole}.
GCRA_CHARGE = """
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local units = tonumber(ARGV[3])
local debt = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local tolerance = interval * burst
local new_tat = math.max(now, tat + interval * units)  -- units < 0: a refund, never past full
local allow_at = new_tat - tolerance
if now < allow_at and debt == 0 then
  return {0, allow_at - now, math.floor((now + tolerance - tat) / interval), tat - now}
end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil(new_tat - now) + 1000)
return {1, 0, math.floor(math.max(0, now + tolerance - new_tat) / interval), new_tat - now}
"""

# Read only, before a large body is read: {1, ms} while the budget (KEYS[1]) cannot pay one
# unit, {2, 0} while every heavy slot (KEYS[2]) is taken by a live lease, else {0, 0}.
_LARGE_BODY_REFUSAL = """
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if interval > 0 then
  local tat = tonumber(redis.call('GET', KEYS[1]) or now)
  local wait = math.ceil(tat + interval - interval * burst - now)
  if wait > 0 then return {1, wait} end
end
local concurrent = tonumber(ARGV[3])
if concurrent > 0 and redis.call('ZCOUNT', KEYS[2], now / 1000, '+inf') >= concurrent then return {2, 0} end
return {0, 0}
"""

# A body this large never belongs to a light request (a 1 000-point trace is ~37 KB, a 100-stop
# order ~9 KB; a route or geocode has none): refused unread while its account's budget is spent
# or its heavy slots are all taken, since reading and parsing it costs more than a light request
# (a 10 000-point trace: 40 ms of the service's loop for JSON and validation, measured 2026-11-26).
LARGE_BODY_BYTES = 16 * 1024

# A slot: a sorted set of tickets scored by their lease's end; expired ones are dropped first.
TAKE_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
return 1
"""


def measured[T](function: Callable[[], T]) -> tuple[T, float]:
    """`function`'s result and the CPU seconds its thread spent on it (what `Admission.settle`
    charges: run it in the thread that does the work)."""
    began = time.thread_time()
    result = function()
    return result, time.thread_time() - began


# A work unit is a millisecond of CPU: prices are estimates of it, settlements measure it.
UNITS_PER_CPU_S = 1000


def units_of_cpu(cpu_s: float) -> int:
    """Work units of `cpu_s` CPU seconds (at least one: every answered request costs)."""
    return max(1, math.ceil(cpu_s * UNITS_PER_CPU_S))


def cpu_of_units(units: float) -> float:
    """CPU seconds `units` work units allow."""
    return units / UNITS_PER_CPU_S


@dataclass(frozen=True)
class Cost:
    """What one request will cost, and what that was computed from (for the messages)."""

    units: int
    measure: str  # e.g. "10000 trace points", "100 x 100 cells"
    heavy: bool = False


def cost(units: float, measure: str, *, heavy: bool = False) -> Cost:
    """Units rounded up, at least one: every request costs something."""
    return Cost(max(1, math.ceil(units)), measure, heavy)


@dataclass(frozen=True)
class TierBudget:
    per_request: int  # most units one request may cost; 0: no cap
    rate: float  # units per second the budget refills; 0: no budget
    burst: int  # units the budget holds
    concurrent: int  # heavy requests running at once; 0: no cap

    def as_json(self) -> dict[str, float | int | None]:
        """For /v1/account and the docs: None where a number does not limit."""
        return {
            "maxCostPerRequest": self.per_request or None,
            "costPerSecond": self.rate or None,
            "costBurst": self.burst or None,
            "concurrentHeavyRequests": self.concurrent or None,
        }


@dataclass(frozen=True)
class CostBudgets:
    tiers: dict[str, TierBudget]

    def for_tier(self, tier: str | None) -> TierBudget:
        """A tier not listed gets the smallest budget (fail closed, like common.tiers)."""
        if tier in self.tiers:
            return self.tiers[tier]
        named = {name: budget for name, budget in self.tiers.items() if name != "anonymous"} or self.tiers
        return min(named.values(), key=lambda b: (b.per_request or math.inf, b.rate or math.inf))


def parse_cost_budgets(text: str, variable: str = "COST_BUDGETS") -> CostBudgets:
    """`tier=per_request/rate/burst/concurrent,...`; a malformed item stops the process at start."""
    tiers: dict[str, TierBudget] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            tier, numbers = item.split("=", 1)
            per_request, rate, burst, concurrent = (x.strip() for x in numbers.split("/"))
            budget = TierBudget(int(per_request), float(rate), int(burst), int(concurrent))
        except ValueError as exc:
            raise SystemExit(
                f"configuration error: {variable} item {item!r} is not tier=per_request/rate/burst/concurrent"
            ) from exc
        if min(budget.per_request, budget.rate, budget.burst, budget.concurrent) < 0 or (
            budget.rate > 0 and budget.burst < 1
        ):
            raise SystemExit(f"configuration error: {variable} item {item!r} has a negative number or no burst")
        tiers[tier.strip()] = budget
    if not tiers:
        raise SystemExit(f"configuration error: {variable} names no tier")
    return CostBudgets(tiers)


@dataclass(frozen=True)
class Caller:
    """Who pays: the account the gateway forwarded, its tier, and whether this is a job's (its
    submission's pricing or its replay: a job's sizes apply to both)."""

    account: str
    tier: str
    job: bool = False
    price_only: bool = False  # the job's submission: priced and charged, refusable, no work
    paid: bool = False  # the replay of a job paid at submission: not charged again
    paid_units: int = 0  # what it paid then, which a price settled after the work starts from


def caller_of(headers: Mapping[str, str]) -> Caller | None:
    """The paying caller of a request, or None for an internal call made on nobody's behalf."""
    account = headers.get(INTERNAL_SUBJECT_HEADER)
    if not account:
        return None
    job = headers.get(INTERNAL_JOB_HEADER, "")
    marked, _, units = job.partition(":")  # a paid replay: "paid:<units>"
    paid_units = int(units) if marked == JOB_PAID and units.isascii() and units.isdigit() else 0
    return Caller(account, headers.get(INTERNAL_TIER_HEADER, ""), bool(job), job == JOB_PRICE_ONLY,
                  marked == JOB_PAID, paid_units)  # fmt: skip


class Priced(Exception):
    """Raised by `Admission.admit` for a price-only request once it is charged, before the work;
    `common.middleware` answers it 204 with its headers."""

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("priced")
        self.headers = headers


@dataclass
class Admitted:
    """The headers an admitted request's answer carries, and the units it was charged."""

    headers: dict[str, str]
    charged: int = 0


class Admission:
    def __init__(self, redis: ResilientRedis, budgets: CostBudgets, *, lease_seconds: float = SLOT_LEASE_SECONDS):
        self.redis = redis
        self.budgets = budgets
        self.lease_seconds = lease_seconds
        self._charge = redis.client.register_script(GCRA_CHARGE)
        self._take_slot = redis.client.register_script(TAKE_SLOT)
        self._large_body_refusal = redis.client.register_script(_LARGE_BODY_REFUSAL)

    @contextlib.asynccontextmanager
    async def admit(self, caller: Caller | None, price: Cost) -> AsyncIterator[Admitted]:
        """Checks, charges and (for heavy work) holds a slot while the body of the `with` runs;
        a price-only request raises `Priced` after its charge instead."""
        if caller is not None and caller.paid:
            yield Admitted({}, caller.paid_units)  # paid at submission: only a settlement after the work
            return
        if caller is None or (price.units <= 1 and not price.heavy and not caller.price_only):
            # On nobody's behalf, or a light request the gateway's request rate already counts
            # (charging it would add a Redis round trip to the cheapest, most frequent requests).
            yield Admitted({})
            return
        budget = self.budgets.for_tier(caller.tier)
        self.check_price(price, budget, caller.tier)
        headers = await self.charge(caller, price, budget)
        if caller.price_only:
            raise Priced(headers)
        if not price.heavy or not budget.concurrent or caller.job:
            yield Admitted(headers, price.units)
            return
        ticket = await self.take_slot(caller, budget, headers)
        try:
            yield Admitted(headers, price.units)
        finally:
            if ticket:
                await self.release_slot(caller, ticket)

    def most_units(self, caller: Caller | None) -> int:
        """The most one request of the caller may cost (0: no cap), for work that can only be
        measured as it runs (a batch's lookups) and stops there."""
        return 0 if caller is None else self.budgets.for_tier(caller.tier).per_request

    async def refuse_large_body_early(self, caller: Caller | None, body_bytes: int | None) -> None:
        """Before a large body is read: a 429 while its account's budget cannot pay one unit or
        its heavy slots are all taken, so such requests cost one Redis call each, not their
        reading and parsing. Without a declared length (chunked) the body counts as large."""
        if caller is None or caller.job or (body_bytes is not None and body_bytes < LARGE_BODY_BYTES):
            return
        budget = self.budgets.for_tier(caller.tier)
        interval_ms = 1000.0 / budget.rate if budget.rate else 0.0
        if not interval_ms and not budget.concurrent:
            return

        async def run(_: Redis) -> list[int]:
            keys = [BUDGET_KEY.format(account=caller.account), HEAVY_KEY.format(account=caller.account)]
            args = [interval_ms, budget.burst, budget.concurrent]
            return [int(x) for x in await self._large_body_refusal(keys=keys, args=args)]

        refusal, wait_ms = await self.redis.call(run, [0, 0])  # Redis unreachable: fail open
        if refusal == 1:
            retry = max(1, math.ceil(wait_ms / 1000))
            raise CostLimitExceeded(
                f"the account's work budget is spent (it refills at {budget.rate:g} units per second up to "
                f"{budget.burst}); a request with a body this large is refused before it is read: retry in {retry} s",
                headers={"RateLimit-Cost-Limit": str(budget.burst), "RateLimit-Cost-Remaining": "0",
                         "Retry-After": str(retry)},
            )  # fmt: skip
        if refusal == 2:
            raise self.too_many_concurrent(budget, {})

    @staticmethod
    def check_price(price: Cost, budget: TierBudget, tier: str) -> None:
        if budget.per_request and price.units > budget.per_request:
            raise CostTooHigh(
                f"this request costs {price.units} work units ({price.measure}); the {tier or 'default'} tier "
                f"allows at most {budget.per_request} per request: split it, or send less"
            )

    async def charge(self, caller: Caller, price: Cost, budget: TierBudget) -> dict[str, str]:
        if not budget.rate:
            return {"RateLimit-Cost": str(price.units)}
        interval_ms = 1000.0 / budget.rate
        in_debt = caller.job and not caller.price_only

        async def run(_: Redis) -> list[int]:
            keys = [BUDGET_KEY.format(account=caller.account)]
            return list(await self._charge(keys=keys, args=[interval_ms, budget.burst, price.units, int(in_debt)]))

        no_answer: list[int] = []
        result = await self.redis.call(run, no_answer, refuse_when_full=True)  # full: 503, never open
        if not result:
            return {"RateLimit-Cost": str(price.units)}  # Redis unreachable: fail open
        allowed, retry_ms, remaining = (float(x) for x in result[:3])
        headers = {
            "RateLimit-Cost": str(price.units),
            "RateLimit-Cost-Limit": str(budget.burst),
            "RateLimit-Cost-Remaining": str(max(0, int(remaining))),
        }
        if not allowed:
            retry = max(1, math.ceil(retry_ms / 1000))
            raise CostLimitExceeded(
                f"this request costs {price.units} work units ({price.measure}) and the account's budget holds "
                f"{max(0, int(remaining))} now; it refills at {budget.rate:g} units per second up to {budget.burst}: "
                f"retry in {retry} s",
                headers={**headers, "Retry-After": str(retry)},
            )
        return headers

    async def settle(self, caller: Caller | None, admitted: Admitted, units: int) -> None:
        """Charges what the work measured instead of the price paid ahead: the difference given
        back (a batch's lines answered from the cache) or charged in debt (lines dearer than their
        price: the work is done; the account's next requests wait for it). The answer's headers
        say what was charged in the end."""
        difference = units - admitted.charged
        if caller is None or not admitted.charged or not difference:
            return  # nothing was charged ahead (on nobody's behalf, light, or a job paid before this change)
        budget = self.budgets.for_tier(caller.tier)
        admitted.charged = units
        admitted.headers["RateLimit-Cost"] = str(units)
        if not budget.rate:
            return
        interval_ms = 1000.0 / budget.rate

        async def run(_: Redis) -> list[int]:
            keys = [BUDGET_KEY.format(account=caller.account)]
            return list(await self._charge(keys=keys, args=[interval_ms, budget.burst, difference, 1]))

        no_answer: list[int] = []
        result = await self.redis.call(run, no_answer)
        if result:
            admitted.headers["RateLimit-Cost-Remaining"] = str(max(0, int(result[2])))

    async def take_slot(self, caller: Caller, budget: TierBudget, headers: dict[str, str]) -> str | None:
        ticket = secrets.token_hex(8)

        async def run(_: Redis) -> int:
            key = HEAVY_KEY.format(account=caller.account)
            return int(await self._take_slot(keys=[key], args=[budget.concurrent, self.lease_seconds, ticket]))

        taken = await self.redis.call(run, -1, refuse_when_full=True)
        if taken == -1:
            return None  # Redis unreachable: fail open, nothing to release
        if not taken:
            raise self.too_many_concurrent(budget, headers)
        return ticket

    @staticmethod
    def too_many_concurrent(budget: TierBudget, headers: dict[str, str]) -> TooManyConcurrent:
        return TooManyConcurrent(
            f"the account already runs {budget.concurrent} heavy requests (matching, isochrones, large "
            f"matrices, optimizations, detour files) at once, the most its tier allows: retry when one has "
            f"answered, or send it with ?async=true where the operation offers it",
            headers={**headers, "Retry-After": "1"},
        )

    async def release_slot(self, caller: Caller, ticket: str) -> None:
        async def run(client: Redis) -> int:
            return int(await client.zrem(HEAVY_KEY.format(account=caller.account), ticket))

        await self.redis.call(run, 0)
