"""Failed logins throttled per account (any address), in the state Redis: a short exponential
back-off, never a lock-out; the replicas agree; Redis down skips it (fail open)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from auth_service.accounts import AccountStore
from auth_service.app import create_app
from auth_service.config import AuthConfig
from auth_service.state import STATE_KEY
from auth_service.throttle import LoginThrottle, account_key
from common.redis import ResilientRedis
from tests.auth_service.helpers import PASSWORD, UNREACHABLE_REDIS, Client, ClientFactory, add_user, login

LEGACY = "application/json"


def fresh_email() -> str:
    return f"{uuid.uuid4().hex[:12]}@example.com"


@pytest.fixture
async def throttles(redis_server: str) -> AsyncIterator[tuple[LoginThrottle, LoginThrottle]]:
    """Two replicas' throttles on one Redis: free failures 3, back-off at most 4 s."""
    first, second = ResilientRedis(redis_server), ResilientRedis(redis_server)
    settings: dict[str, Any] = {"free_failures": 3, "max_backoff_seconds": 4, "window_seconds": 60}
    yield LoginThrottle(first, **settings), LoginThrottle(second, **settings)
    await first.close()
    await second.close()


async def test_the_free_failures_pass_then_the_account_waits(throttles: tuple[LoginThrottle, LoginThrottle]) -> None:
    throttle, _ = throttles
    email = fresh_email()
    allowed = []
    for _ in range(4):
        allowed.append((await throttle.attempt(email)).allowed)
        await throttle.failed(email)
    assert allowed == [True, True, True, False]


async def test_each_failure_past_the_free_ones_doubles_the_wait(throttles: tuple[LoginThrottle, LoginThrottle]) -> None:
    throttle, _ = throttles
    waits = []
    for failures in range(3, 7):
        email = fresh_email()
        for _ in range(failures):
            await throttle.failed(email)
        verdict = await throttle.attempt(email)
        waits.append(0 if verdict.allowed else verdict.retry_after_seconds)
    # The 3rd failure (the last free one) starts a 1 s wait; each further one doubles it, up to 4 s.
    assert waits == [1, 2, 4, 4]


async def test_the_replicas_agree_and_accounts_are_apart(throttles: tuple[LoginThrottle, LoginThrottle]) -> None:
    one, other = throttles
    email = fresh_email()
    for _ in range(3):
        await one.failed(email)
    assert not (await other.attempt(email)).allowed
    assert not (await other.attempt(email.upper() + " ")).allowed  # the same account as typed differently
    assert (await other.attempt(fresh_email())).allowed


async def test_a_success_forgets_the_failures(throttles: tuple[LoginThrottle, LoginThrottle]) -> None:
    throttle, _ = throttles
    email = fresh_email()
    for _ in range(2):
        await throttle.failed(email)
    await throttle.succeeded(email)
    for _ in range(2):
        await throttle.failed(email)
    assert (await throttle.attempt(email)).allowed


async def test_an_allowed_attempt_in_the_back_off_books_it_for_concurrent_ones(
    throttles: tuple[LoginThrottle, LoginThrottle], redis_server: str
) -> None:
    throttle, other = throttles
    email = fresh_email()
    for _ in range(3):
        await throttle.failed(email)
    # The back-off has passed (moved into the past here instead of waiting a second).
    await throttle.redis.client.hset(account_key(email), "next", 0)
    assert (await throttle.attempt(email)).allowed
    assert not (await other.attempt(email)).allowed


async def test_the_e_mail_addresses_are_not_stored(throttles: tuple[LoginThrottle, LoginThrottle]) -> None:
    throttle, _ = throttles
    email = fresh_email()
    await throttle.failed(email)
    keys = [key async for key in throttle.redis.client.scan_iter("loginfail:*")]
    assert keys and not any(email.encode() in key for key in keys)


async def test_redis_down_skips_the_throttle() -> None:
    redis = ResilientRedis(UNREACHABLE_REDIS, timeout=0.1)
    throttle = LoginThrottle(redis, free_failures=1, max_backoff_seconds=60, window_seconds=60)
    for _ in range(3):
        await throttle.failed("x@example.com")
    assert (await throttle.attempt("x@example.com")).allowed
    await redis.close()


# ---------------------------------------------------------------- over HTTP


@pytest.fixture
async def throttled(aiohttp_client: ClientFactory, config: AuthConfig, redis_server: str) -> Client:
    # Per account only: every test here logs in from the same address (the per-address count
    # has its own test below).
    settings = replace(config, redis_url=redis_server, login_free_failures=3, login_address_free_failures=0)
    return await aiohttp_client(create_app(settings))


async def test_an_address_naming_ever_new_accounts_is_429_after_its_free_failures(
    aiohttp_client: ClientFactory, config: AuthConfig, redis_server: str
) -> None:
    """Through the service: the client address the gateway forwards is counted, whatever
    account each attempt names."""
    settings = replace(config, redis_url=redis_server, login_free_failures=3, login_address_free_failures=2)
    client = await aiohttp_client(create_app(settings))
    address = f"203.0.113.{uuid.uuid4().int % 250}"
    statuses = []
    for _ in range(3):
        body = {"user": fresh_email(), "password": "wrong password"}
        answer = await client.post("/v1/authenticate", json=body, headers={"X-Forwarded-For": address})
        statuses.append(answer.status)
    assert statuses == [401, 401, 429]
    elsewhere = await client.post(
        "/v1/authenticate", json={"user": fresh_email(), "password": "x"}, headers={"X-Forwarded-For": "198.51.100.1"}
    )
    assert elsewhere.status == 401


async def test_failed_logins_of_one_account_are_429_before_any_hash(
    throttled: Client, config: AuthConfig, store: AccountStore
) -> None:
    email = fresh_email()
    add_user(config, store, email)
    passwords = throttled.app[STATE_KEY].authenticator.passwords
    statuses = [(await login(throttled, {"user": email, "password": "wrong password"})).status for _ in range(3)]
    assert statuses == [401, 401, 401]
    hashed = passwords.gate.started
    # Even the right password waits out the back-off (it is not checked: no hash is spent).
    refused = await login(throttled, {"user": email, "password": PASSWORD}, accept=LEGACY)
    assert refused.status == 429 and refused.headers["Retry-After"] == "1"
    body = await refused.json()
    assert body["details"][0]["code"] == "AUTH_ERROR_TOO_MANY_FAILED_LOGINS"
    assert "retry in 1 s" in body["details"][0]["message"]
    assert passwords.gate.started == hashed
    # Another account is not affected.
    other = fresh_email()
    add_user(config, store, other)
    assert (await login(throttled, {"user": other, "password": PASSWORD})).status == 200


async def test_an_unknown_account_is_throttled_alike(throttled: Client) -> None:
    email = fresh_email()
    statuses = [(await login(throttled, {"user": email, "password": "wrong password"})).status for _ in range(4)]
    # Indistinguishable from an existing account: the answers tell nothing of who has one.
    assert statuses == [401, 401, 401, 429]


async def test_an_address_trying_ever_new_accounts_waits_after_its_free_failures(redis_server: str) -> None:
    """Issue 29: wrong passwords for ever new e-mails from one address never reach an account's
    free failures, yet each cost a hash. The address has its own count: past its free
    failures it waits, whatever account it names next; other addresses do not, and its own
    success elsewhere does not clear it."""
    redis = ResilientRedis(redis_server)
    throttle = LoginThrottle(redis, free_failures=3, max_backoff_seconds=4, window_seconds=60, address_free_failures=4)
    address, other_address = f"192.0.2.{uuid.uuid4().int % 250}", "198.51.100.7"
    allowed = []
    for _ in range(5):
        email = fresh_email()
        allowed.append((await throttle.attempt(email, address)).allowed)
        await throttle.failed(email, address)
    assert allowed == [True, True, True, True, False]
    mine = fresh_email()
    await throttle.succeeded(mine)
    verdict = await throttle.attempt(mine, address)
    assert not verdict.allowed and verdict.retry_after_seconds >= 1
    assert (await throttle.attempt(fresh_email(), other_address)).allowed
    assert (await throttle.attempt(fresh_email())).allowed  # no address known: the account alone
    await redis.close()
