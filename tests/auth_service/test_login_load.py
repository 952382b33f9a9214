"""Password hashing under load: a global cap with load shedding (503 AUTH_ERROR_BUSY and
Retry-After at once, instead of a queue that grows into the gateway's 504), and no hash
started for a caller who has gone."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from auth_service.app import create_app
from auth_service.config import AuthConfig
from auth_service.handlers import requester_of
from auth_service.passwords import Argon2Params, CallerGone, HashingGate, Passwords, Requester
from auth_service.state import STATE_KEY
from common.errors import LoginBusy
from tests.auth_service.helpers import PASSWORD, add_user, make_config

EMAIL = "carol@example.com"
PROBLEM = "application/json, application/problem+json"


class BlockedHasher:
    """Stands in for `Passwords.verify`: counts the calls, and holds each in its thread until
    released, so a test decides when a slot frees up."""

    def __init__(self, real: Callable[[str | None, str], bool]) -> None:
        self.real = real
        self.calls = 0
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def __call__(self, password_hash: str | None, password: str) -> bool:
        self.calls += 1
        self.entered.release()
        self.release.wait(10)
        return self.real(password_hash, password)


async def until(condition: Callable[[], bool], seconds: float = 5) -> None:
    """Waits for a state of the gate (it has no event to wait on), for at most `seconds`."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


async def entered(hasher: BlockedHasher) -> None:
    assert await asyncio.to_thread(hasher.entered.acquire, True, 5), "no hash started"


class Service:
    """The auth service served as in production: aiohttp's test server cancels a handler
    when its client disconnects, the production server does not (`handler_cancellation`
    False), so only here does a waiting login outlive its caller as it would in production."""

    def __init__(self, app: web.Application, session: aiohttp.ClientSession, base: str) -> None:
        self.app = app
        self.session = session
        self.base = base

    @property
    def gate(self) -> HashingGate:
        return self.app[STATE_KEY].authenticator.passwords.gate

    async def login(self, *, accept: str = PROBLEM, give_up_s: float = 10) -> tuple[int, dict[str, str], Any]:
        async with self.session.post(
            f"{self.base}/v1/authenticate",
            json={"user": EMAIL, "password": PASSWORD},
            headers={"Accept": accept},
            timeout=aiohttp.ClientTimeout(total=give_up_s),
        ) as response:
            return response.status, dict(response.headers), await response.json()


@pytest.fixture
async def one_slot(tmp_path: Path, database_url: str) -> AsyncIterator[tuple[Service, BlockedHasher]]:
    """The auth service with one hashing slot and room for one more login in its queue."""
    config = make_config(tmp_path, database_url=database_url, password_hash_slots=1, password_hash_queue_per_slot=1)
    app = create_app(config)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    passwords = app[STATE_KEY].authenticator.passwords
    add_user(config, app[STATE_KEY].authenticator.store, EMAIL)
    hasher = BlockedHasher(passwords.verify)
    passwords.verify = hasher  # type: ignore[method-assign]
    async with aiohttp.ClientSession() as session:
        yield Service(app, session, f"http://127.0.0.1:{port}"), hasher
    hasher.release.set()
    await runner.cleanup()


async def test_a_full_hashing_queue_answers_503_with_retry_after_at_once(
    one_slot: tuple[Service, BlockedHasher],
) -> None:
    service, hasher = one_slot
    running = asyncio.create_task(service.login())
    await entered(hasher)
    queued = asyncio.create_task(service.login())
    await until(lambda: bool(service.gate.waiting))
    # Slot and queue taken: refused while the others still wait (before: queued behind them).
    status, headers, problem = await service.login()
    assert not running.done() and not queued.done()
    assert status == 503 and int(headers["Retry-After"]) >= 1
    assert problem["type"] == "/problems/auth/busy" and "waiting" in problem["detail"]
    status, _, legacy = await service.login(accept="application/json")
    assert status == 503 and legacy["details"][0]["code"] == "AUTH_ERROR_BUSY"
    hasher.release.set()
    assert [(await running)[0], (await queued)[0]] == [200, 200]
    assert hasher.calls == 2


async def test_queued_logins_of_callers_who_left_are_never_hashed(one_slot: tuple[Service, BlockedHasher]) -> None:
    service, hasher = one_slot
    service.gate.queue = 10
    running = asyncio.create_task(service.login())
    await entered(hasher)

    async def abandoned() -> None:
        # The client gives up as the gateway does at its timeout: the connection closes.
        with pytest.raises(TimeoutError):
            await service.login(give_up_s=0.3)

    await asyncio.gather(*(abandoned() for _ in range(5)))
    assert service.gate.waiting == 5
    hasher.release.set()
    assert (await running)[0] == 200
    await until(lambda: not service.gate.waiting)
    # Measured by counting: before, each of the 5 abandoned logins was hashed after the first.
    assert hasher.calls == 1
    assert (service.gate.started, service.gate.skipped) == (1, 5)


async def test_a_waiting_caller_who_is_cancelled_gives_its_turn_on() -> None:
    gate = HashingGate(slots=1, queue=2)
    release = threading.Event()
    first = asyncio.create_task(gate.run(lambda: release.wait(5)))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(gate.run(lambda: "second"))
    third = asyncio.create_task(gate.run(lambda: "third"))
    await asyncio.sleep(0.05)
    second.cancel()
    release.set()
    assert await first is True
    assert await third == "third"
    assert gate.running == 0 and not gate.waiting
    gate.close()


async def test_a_cancelled_running_hash_keeps_its_slot_until_its_thread_ends() -> None:
    gate = HashingGate(slots=1, queue=0)
    release = threading.Event()
    running = asyncio.create_task(gate.run(lambda: release.wait(5)))
    await asyncio.sleep(0.05)
    running.cancel()
    await asyncio.sleep(0.05)
    # The thread still hashes: the cap holds, another caller is refused rather than run beside it.
    with pytest.raises(LoginBusy):
        await gate.run(lambda: None)
    release.set()
    await until(lambda: gate.running == 0)
    assert await gate.run(lambda: "next") == "next"
    gate.close()


async def test_a_caller_gone_before_its_turn_gets_caller_gone() -> None:
    gate = HashingGate(slots=1, queue=1)
    release = threading.Event()
    here = False
    running = asyncio.create_task(gate.run(lambda: release.wait(5)))
    await asyncio.sleep(0.05)
    waiting = asyncio.create_task(gate.run(lambda: "never", Requester(present=lambda: here)))
    await asyncio.sleep(0.05)
    release.set()
    await running
    with pytest.raises(CallerGone):
        await waiting
    gate.close()


async def test_a_flooding_client_gets_its_share_and_another_its_turn() -> None:
    gate = HashingGate(slots=1, queue=4)
    release = threading.Event()
    order: list[str] = []

    def hash_for(name: str) -> Callable[[], str]:
        def work() -> str:
            order.append(name)
            release.wait(5)
            return name

        return work

    flood, probe = Requester(key="198.51.100.7"), Requester(key="203.0.113.1")
    first = asyncio.create_task(gate.run(hash_for("flood-0"), flood))
    await until(lambda: gate.running == 1)
    queued = [asyncio.create_task(gate.run(hash_for(f"flood-{i}"), flood)) for i in range(1, 5)]
    await until(lambda: gate.waiting == 4)
    # The queue is full of one client's logins: another client's login displaces the newest.
    mine = asyncio.create_task(gate.run(hash_for("probe"), probe))
    await until(lambda: queued[-1].done())
    with pytest.raises(LoginBusy):
        await queued[-1]
    # And the flooding client cannot take the room back: it already holds the most.
    with pytest.raises(LoginBusy):
        await gate.run(hash_for("flood-5"), flood)
    release.set()
    await asyncio.gather(first, mine, *queued[:-1])
    # Turns go client by client: the probe right after the flood's next one, not after all of it.
    assert order == ["flood-0", "flood-1", "probe", "flood-2", "flood-3"]
    gate.close()


def test_the_requester_is_the_client_the_gateway_names() -> None:
    request = make_mocked_request("POST", "/v1/authenticate", headers={"X-Forwarded-For": "203.0.113.9"})
    assert requester_of(request).key == "203.0.113.9"
    assert requester_of(make_mocked_request("POST", "/v1/authenticate")).key != "203.0.113.9"


def test_the_default_cap_is_one_hash_per_cpu_with_a_short_queue(tmp_path: Path) -> None:
    import os

    passwords = Passwords(Argon2Params(1, 8, 1))
    cpus = len(os.sched_getaffinity(0))
    assert (passwords.gate.slots, passwords.gate.queue) == (cpus, 4 * cpus)
    config: AuthConfig = make_config(tmp_path, password_hash_slots=3, password_hash_queue_per_slot=2)
    assert (config.password_hash_slots, config.password_hash_queue_per_slot) == (3, 2)
    passwords.close()


@pytest.mark.parametrize("setting", ["password_hash_slots", "password_hash_queue_per_slot", "max_api_keys_per_account"])
def test_negative_limits_are_configuration_errors(tmp_path: Path, setting: str) -> None:
    with pytest.raises(SystemExit, match="must be at least"):
        make_config(tmp_path, **{setting: -1})
