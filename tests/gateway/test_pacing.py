"""Refusals paced per client (gateway.pacing): a client that keeps asking after its 401s and
429s has its further refusals held; others, and its own answered requests, are not."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from common.admission import LARGE_BODY_BYTES
from gateway.app import create_app
from gateway.config import RateLimit
from gateway.pacing import MAX_REMEMBERED_CLIENTS, PacingRule, RefusalPacer, parse_pacing_rule
from gateway.state import GATEWAY_KEY
from tests.gateway.keys import TestKey
from tests.gateway.test_proxy import gateway_before, key  # noqa: F401  (the fixture)


def test_a_client_past_its_free_refusals_is_held_until_they_refill() -> None:
    pacer = RefusalPacer(PacingRule(free=3, per_second=2.0, delay_seconds=0.5))
    assert [pacer.delay_for("a", 0.0) for _ in range(5)] == [0.0, 0.0, 0.0, 0.5, 0.5]
    assert pacer.delay_for("b", 0.0) == 0.0  # each client its own
    assert pacer.delay_for("a", 0.6) == 0.0  # 0.6 s later: one refilled (2 a second)...
    assert pacer.delay_for("a", 0.6) == 0.5  # ... and spent
    assert [pacer.delay_for("a", 10.0) for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]  # refilled to `free`, no more


def test_pacing_off_holds_nothing_and_memory_is_bounded() -> None:
    assert RefusalPacer(PacingRule(free=0)).delay_for("a", 0.0) == 0.0
    pacer = RefusalPacer(PacingRule(free=1, per_second=0.001, delay_seconds=1.0))
    for client in range(MAX_REMEMBERED_CLIENTS + 5):
        pacer.delay_for(str(client), 0.0)
    assert len(pacer._left) == MAX_REMEMBERED_CLIENTS
    assert pacer.delay_for("0", 0.0) == 0.0  # the oldest was forgotten: free again
    assert pacer.delay_for(str(MAX_REMEMBERED_CLIENTS + 4), 0.0) == 1.0  # the newest remembered


@pytest.mark.parametrize(
    ("text", "rule"),
    [("20/10/1", PacingRule(20, 10.0, 1.0)), ("0", PacingRule(free=0)), ("5/0.5/0.25", PacingRule(5, 0.5, 0.25))],
)
def test_the_pacing_setting_is_read(text: str, rule: PacingRule) -> None:
    assert parse_pacing_rule(text) == rule


@pytest.mark.parametrize("text", ["", "20/10", "a/1/1", "20/0/1", "20/10/60", "-1/1/1", "1/1/1/1"])
def test_a_wrong_pacing_setting_stops_the_start(text: str) -> None:
    with pytest.raises(SystemExit, match="GATEWAY_REFUSAL_PACING"):
        parse_pacing_rule(text)


RULE = PacingRule(free=3, per_second=0.001, delay_seconds=0.01)


PacedGateway = Callable[..., Awaitable[TestClient[Any, Any]]]


@pytest.fixture
async def paced_gateway(aiohttp_client: Any, key: TestKey, redis_server: str) -> AsyncIterator[PacedGateway]:  # noqa: F811
    """Makes a gateway pacing by RULE with the rate limits given, its upstream up until the test ends."""
    async with contextlib.AsyncExitStack() as stack:

        async def make(**limits: RateLimit) -> TestClient[Any, Any]:
            before = gateway_before(key, redis_server, rate_limits=limits, refusal_pacing=RULE)
            return await aiohttp_client(create_app(await stack.enter_async_context(before)))

        yield make


async def test_bad_tokens_from_one_address_are_held_past_the_free_ones(
    paced_gateway: PacedGateway, key: TestKey  # noqa: F811
) -> None:
    gateway = await paced_gateway(standard=RateLimit(1000, 1000), anonymous=RateLimit(1000, 1000))
    pacer = gateway.app[GATEWAY_KEY].pacer
    for _ in range(5):
        assert (await gateway.get("/v1/route", headers={"Authorization": "Bearer nonsense"})).status == 401
    assert pacer.held == 2
    good = {"Authorization": f"Bearer {key.token(sub='user:1', tier='standard')}"}
    for _ in range(5):  # answered requests are never held, nor counted
        assert (await gateway.get("/v1/route", headers=good)).status == 200
    assert pacer.held == 2


async def test_an_account_s_429s_are_held_past_the_free_ones_and_another_account_s_are_not(
    paced_gateway: PacedGateway, key: TestKey  # noqa: F811
) -> None:
    gateway = await paced_gateway(demo=RateLimit(0.001, 1))
    pacer = gateway.app[GATEWAY_KEY].pacer
    first = {"Authorization": f"Bearer {key.token(sub='user:pace-1', tier='demo')}"}
    second = {"Authorization": f"Bearer {key.token(sub='user:pace-2', tier='demo')}"}
    statuses = [(await gateway.get("/v1/route", headers=first)).status for _ in range(6)]
    assert statuses == [200, 429, 429, 429, 429, 429]
    assert pacer.held == 2
    statuses = [(await gateway.get("/v1/route", headers=second)).status for _ in range(4)]
    assert statuses == [200, 429, 429, 429]  # its own three free refusals, on the same address
    assert pacer.held == 2


async def test_mistakes_with_large_bodies_are_held_past_the_free_ones_and_small_ones_not(
    paced_gateway: PacedGateway, key: TestKey  # noqa: F811
) -> None:
    """Issue 55: a client looping on 164 KB batches with a wrong header was refused ~75 times a
    second, each body read whole; a client's small mistakes are not held."""
    gateway = await paced_gateway(standard=RateLimit(1000, 1000))
    pacer = gateway.app[GATEWAY_KEY].pacer
    good = {"Authorization": f"Bearer {key.token(sub='user:pace-large', tier='standard')}"}
    for _ in range(5):
        assert (await gateway.post("/v1/no-such-operation", data=b"x" * 100, headers=good)).status == 404
    assert pacer.held == 0
    for _ in range(5):
        assert (await gateway.post("/v1/no-such-operation", data=b"x" * LARGE_BODY_BYTES, headers=good)).status == 404
    assert pacer.held == 2
