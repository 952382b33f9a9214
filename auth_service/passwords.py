"""Argon2id password hashing, and verification that costs the same whether or not the user exists."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from functools import cached_property

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from auth_service.config import AuthConfig

MIN_PASSWORD_LENGTH = 8


@dataclass(frozen=True)
class Argon2Params:
    time_cost: int = 3
    memory_kib: int = 65_536
    parallelism: int = 4


class Passwords:
    """Hashes and verifies passwords; verification runs in a worker thread, a few at a time.

    Each Argon2 verification takes tens of milliseconds and `memory_kib` of memory, so it
    must not run on the event loop, and the number running at once is bounded so a burst of
    logins cannot exhaust memory.
    """

    def __init__(self, params: Argon2Params, *, max_concurrent: int | None = None) -> None:
        self.hasher = PasswordHasher(
            time_cost=params.time_cost,
            memory_cost=params.memory_kib,
            parallelism=params.parallelism,
            type=Type.ID,
        )
        self._max_concurrent = max_concurrent or max(2, os.cpu_count() or 2)
        self._slots: asyncio.Semaphore | None = None

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

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:
            # Created lazily so it belongs to the running loop.
            self._slots = asyncio.Semaphore(self._max_concurrent)
        return self._slots

    async def verify_in_thread(self, password_hash: str | None, password: str) -> bool:
        async with self._semaphore():
            return await asyncio.to_thread(self.verify, password_hash, password)

    async def hash_in_thread(self, password: str) -> str:
        async with self._semaphore():
            return await asyncio.to_thread(self.hash, password)

    def needs_rehash(self, password_hash: str) -> bool:
        try:
            return self.hasher.check_needs_rehash(password_hash)
        except InvalidHashError:
            return False


def passwords_for(config: AuthConfig) -> Passwords:
    return Passwords(Argon2Params(config.argon2_time_cost, config.argon2_memory_kib, config.argon2_parallelism))


def password_problem(password: str) -> str | None:
    """Why a new password is not acceptable, or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"the password must have at least {MIN_PASSWORD_LENGTH} characters"
    if not password.strip():
        return "the password must not be blank"
    return None
