"""Argon2id hashing and off-loop verification."""

from __future__ import annotations

import threading

import pytest

from auth_service.passwords import Argon2Params, Passwords, password_problem

CHEAP = Argon2Params(time_cost=1, memory_kib=8, parallelism=1)


def test_hash_is_argon2id_with_the_configured_parameters() -> None:
    password_hash = Passwords(Argon2Params(time_cost=2, memory_kib=16, parallelism=1)).hash("s3cret-pass")
    assert password_hash.startswith("$argon2id$v=19$m=16,t=2,p=1$")


def test_verify() -> None:
    passwords = Passwords(CHEAP)
    password_hash = passwords.hash("s3cret-pass")
    assert passwords.verify(password_hash, "s3cret-pass")
    assert not passwords.verify(password_hash, "other-pass")
    assert not passwords.verify("garbage", "s3cret-pass")


def test_unknown_user_is_checked_against_the_dummy_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    passwords = Passwords(CHEAP)
    real_hasher = passwords.hasher
    dummy_hash = passwords.dummy_hash
    checked: list[str] = []

    class SpyHasher:
        def verify(self, password_hash: str, password: str) -> bool:
            checked.append(password_hash)
            return real_hasher.verify(password_hash, password)

    monkeypatch.setattr(passwords, "hasher", SpyHasher())
    # The dummy is a real hash the password does not match: the full Argon2 cost is paid.
    assert not passwords.verify(None, "anything")
    assert checked == [dummy_hash]
    assert dummy_hash.startswith("$argon2id$v=19$m=8,t=1,p=1$")


async def test_verification_runs_outside_the_event_loop_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    passwords = Passwords(CHEAP)
    password_hash = passwords.hash("s3cret-pass")
    threads: list[int] = []
    real_verify = passwords.verify

    def spy(stored: str | None, password: str) -> bool:
        threads.append(threading.get_ident())
        return real_verify(stored, password)

    monkeypatch.setattr(passwords, "verify", spy)
    assert await passwords.verify_in_thread(password_hash, "s3cret-pass")
    assert threads and threads[0] != threading.get_ident()


def test_outdated_hash_needs_rehash() -> None:
    old = Passwords(CHEAP).hash("s3cret-pass")
    assert Passwords(Argon2Params(time_cost=2, memory_kib=8, parallelism=1)).needs_rehash(old)
    assert not Passwords(CHEAP).needs_rehash(old)


@pytest.mark.parametrize(("password", "ok"), [("short", False), ("        ", False), ("long enough", True)])
def test_password_rules(password: str, ok: bool) -> None:
    assert (password_problem(password) is None) == ok
