"""Argon2id password hashing, and verification that costs the same whether or not the user exists."""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from auth_service.config import QUEUE_PER_SLOT, AuthConfig
from common.errors import LoginBusy

MIN_PASSWORD_LENGTH = 8


@dataclass(frozen=True)
class Argon2Params:
    time_cost: int = 3
    memory_kib: int = 65_536
    parallelism: int = 4


T = TypeVar("T")
# Weight of the newest hash in the running mean that estimates `Retry-After`.
MEAN_WEIGHT = 0.2


class CallerGone(ConnectionError):
    """The caller left while its hash waited for a slot: the hash is not started. A
    ConnectionError, so the errors middleware answers it as a closed connection (499)."""


@dataclass(frozen=True)
class Requester:
    """Who waits for a hash. `key` groups one client's requests (its address) so that the
    waiting ones take turns client by client; `present()` is false once the caller has gone."""

    key: str = ""
    present: Callable[[], bool] = lambda: True


ANYONE = Requester()


@dataclass(frozen=True)
class _Waiter:
    turn: asyncio.Future[None]
    present: Callable[[], bool]


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may run on, not the host's
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


class HashingGate:
    """Admission to password hashing: at most `slots` hashes run at once (each on a thread of
    a pool of that size, off the event loop) and at most `queue` wait; beyond, `LoginBusy`
    (503 with `Retry-After`) at once, instead of a queue that grows until the gateway gives
    up with 504 and every login behind it is late too.

    Fair between clients: the waiting hashes take turns client by client (`Requester.key`,
    round robin), and when the queue is full a newcomer displaces the newest waiter of the
    client with the most waiting, unless it would then hold as many as that one. A few
    addresses flooding logins thus get their share of the CPUs, not all of it, and another
    client's login waits a few hashes, not behind the whole flood.

    A waiting hash whose caller has gone (`present()` false when its turn comes) is not
    started. A running one cannot be stopped (one Argon2 call in C), but it is one hash
    long, and its slot stays taken until it ends, so the cap holds."""

    def __init__(self, slots: int, queue: int) -> None:
        self.slots = max(1, slots)
        self.queue = max(0, queue)
        self._running = 0
        # Each client's waiting hashes, oldest first; the dict's order is the round's order.
        self._queues: dict[str, deque[_Waiter]] = {}
        self._executor = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="argon2")
        self._mean_seconds = 0.0
        # What happened to each hash asked for (tests and logs read them).
        self.started = 0
        self.skipped = 0
        self.shed = 0

    @property
    def waiting(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    @property
    def running(self) -> int:
        return self._running

    async def run(self, work: Callable[[], T], requester: Requester = ANYONE) -> T:
        await self._admit(requester)
        self.started += 1
        future = asyncio.get_running_loop().run_in_executor(self._executor, self._timed, work)
        # The slot is given back when the thread ends, not when the caller stops waiting.
        future.add_done_callback(lambda _: self._release())
        # Shielded: cancelling the caller must not mark the running hash done (and free its slot).
        return await asyncio.shield(future)

    def retry_after(self) -> int:
        """Seconds until the queue has likely moved on by its current length."""
        return max(1, math.ceil((self.waiting + 1) / self.slots * self._mean_seconds))

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _admit(self, requester: Requester) -> None:
        if self._running < self.slots and not self._queues:
            self._running += 1
            return
        self._drop_gone()
        if self.waiting >= self.queue:
            self._make_room(requester.key)
        waiter = _Waiter(asyncio.get_running_loop().create_future(), requester.present)
        self._queues.setdefault(requester.key, deque()).append(waiter)
        try:
            await waiter.turn
        except asyncio.CancelledError:
            turn = waiter.turn
            if turn.done() and not turn.cancelled() and turn.exception() is None:
                self._release()  # the slot was handed over just as the caller was cancelled
            raise

    def _make_room(self, key: str) -> None:
        """Refuses the newcomer, or the newest waiter of the client with the most waiting when
        the newcomer's client would still hold fewer than that one."""
        mine = len(self._queues.get(key, ()))
        busiest = max(self._queues, key=lambda k: len(self._queues[k]), default=None)
        self.shed += 1
        if busiest is None or len(self._queues[busiest]) <= mine + 1:
            raise self._busy()
        displaced = self._queues[busiest].pop()
        if not self._queues[busiest]:
            del self._queues[busiest]
        displaced.turn.set_exception(self._busy())

    def _busy(self) -> LoginBusy:
        return LoginBusy(
            f"{self._running} password checks are running and {self.waiting} waiting, "
            "as many as this service takes: retry shortly",
            retry_after_s=self.retry_after(),
        )

    def _drop_gone(self) -> None:
        """Frees the queue of callers that left, before deciding whether it is full."""
        for key, queue in list(self._queues.items()):
            kept = deque(waiter for waiter in queue if not waiter.turn.done() and self._still_there(waiter))
            if kept:
                self._queues[key] = kept
            else:
                del self._queues[key]

    def _still_there(self, waiter: _Waiter) -> bool:
        if waiter.present():
            return True
        self.skipped += 1
        waiter.turn.set_exception(CallerGone("the caller left before its password was checked"))
        return False

    def _release(self) -> None:
        """Hands the freed slot to the next client's oldest waiter whose caller is still there."""
        while self._queues:
            key = next(iter(self._queues))
            queue = self._queues.pop(key)
            waiter = queue.popleft()
            if queue:
                self._queues[key] = queue  # the client's next waiter goes to the back of the round
            if waiter.turn.done() or not self._still_there(waiter):
                continue
            waiter.turn.set_result(None)
            return
        self._running -= 1

    def _timed(self, work: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return work()
        finally:
            # Read from other threads only as a hint for Retry-After: a torn update is harmless.
            elapsed = time.perf_counter() - started
            self._mean_seconds += MEAN_WEIGHT * (elapsed - self._mean_seconds)


class Passwords:
    """Hashes and verifies passwords; hashing runs through a `HashingGate`.

    Each Argon2 call takes tens to hundreds of milliseconds of CPU and `memory_kib` of
    memory, so it must not run on the event loop, and the number running at once is bounded
    so a burst of logins can exhaust neither the CPUs nor memory.
    """

    def __init__(
        self, params: Argon2Params, *, max_concurrent: int | None = None, queue_per_slot: int = QUEUE_PER_SLOT
    ) -> None:
        self.hasher = PasswordHasher(
            time_cost=params.time_cost,
            memory_cost=params.memory_kib,
            parallelism=params.parallelism,
            type=Type.ID,
        )
        slots = max_concurrent or available_cpus()
        self.gate = HashingGate(slots, queue_per_slot * slots)

    def hash(self, password: str) -> str:
        return self.hasher.hash(password)

    @cached_property
    def dummy_hash(self) -> str:
        """A hash with the current parameters, verified when the user is unknown (same cost)."""
        return self.hasher.hash(os.urandom(16).hex())

    def verify(self, password_hash: str | None, password: str) -> bool:
        """True when the password matches; an unknown user (None) costs the same and fails."""
        try:
            return self.hasher.verify(password_hash or self.dummy_hash, password) and password_hash is not None
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    async def verify_in_thread(self, password_hash: str | None, password: str, requester: Requester = ANYONE) -> bool:
        return await self.gate.run(lambda: self.verify(password_hash, password), requester)

    async def hash_in_thread(self, password: str, requester: Requester = ANYONE) -> str:
        return await self.gate.run(lambda: self.hash(password), requester)

    def needs_rehash(self, password_hash: str) -> bool:
        try:
            return self.hasher.check_needs_rehash(password_hash)
        except InvalidHashError:
            return False

    def close(self) -> None:
        self.gate.close()


def passwords_for(config: AuthConfig) -> Passwords:
    return Passwords(
        Argon2Params(config.argon2_time_cost, config.argon2_memory_kib, config.argon2_parallelism),
        max_concurrent=config.password_hash_slots or None,
        queue_per_slot=config.password_hash_queue_per_slot,
    )


def password_problem(password: str) -> str | None:
    """Why a new password is not acceptable, or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"the password must have at least {MIN_PASSWORD_LENGTH} characters"
    if not password.strip():
        return "the password must not be blank"
    return None
