"""Checking credentials: e-mail and password, or an API key. No HTTP here.

Every failure raises the same `InvalidCredentials`, whatever went wrong, so a caller cannot
learn which e-mail addresses have accounts; an unknown user costs one Argon2 verification
like a known one, and is throttled like one (`auth_service.throttle`).
"""

from __future__ import annotations

import logging

from auth_service.accounts import AccountStore, User, now_seconds
from auth_service.passwords import ANYONE, Passwords, Requester
from auth_service.throttle import LoginThrottle
from auth_service.tokens import TokenSubject
from common.errors import InvalidCredentials, TooManyFailedLogins

log = logging.getLogger("auth_service.authentication")

WRONG_CREDENTIALS = "the e-mail address or the password is wrong, or the account is disabled"
WRONG_API_KEY = "the API key is unknown, revoked or expired, or its account is disabled"


class Authenticator:
    def __init__(self, store: AccountStore, passwords: Passwords, throttle: LoginThrottle | None = None) -> None:
        self.store = store
        self.passwords = passwords
        self.throttle = throttle

    async def with_password(self, email: str, password: str, requester: Requester = ANYONE) -> TokenSubject:
        """`requester`: whose turn the hash takes (`passwords.HashingGate`); one who has left
        by then is not hashed for."""
        await self._check_throttle(email, requester.key)
        user = self.store.find_user(email)
        matches = await self.passwords.verify_in_thread(user.password_hash if user else None, password, requester)
        if user is None or not matches or user.disabled:
            if self.throttle is not None:
                await self.throttle.failed(email, requester.key)
            raise InvalidCredentials(WRONG_CREDENTIALS)
        if self.throttle is not None:
            await self.throttle.succeeded(email)
        await self._upgrade_hash(user, password)
        return TokenSubject(sub=user.subject, tier=user.tier, email=user.email)

    def with_api_key(self, key: str, duration: int) -> tuple[TokenSubject, int]:
        """The key's subject and the token's lifetime: `duration`, or less so that no token
        outlives the key's expiry."""
        api_key = self.store.find_api_key(key.strip().lower())
        now = now_seconds()
        if api_key is None or not api_key.usable(now):
            raise InvalidCredentials(WRONG_API_KEY)
        user = self.store.user_by_id(api_key.user_id)
        if user.disabled:
            raise InvalidCredentials(WRONG_API_KEY)
        if api_key.expires_at is not None:
            duration = min(duration, api_key.expires_at - now)
        subject = TokenSubject(sub=user.subject, tier=user.tier, email=user.email, api_key_id=api_key.id)
        return subject, duration

    async def _check_throttle(self, email: str, address: str) -> None:
        if self.throttle is None:
            return
        verdict = await self.throttle.attempt(email, address)
        if not verdict.allowed:
            # Unknown addresses are throttled the same, so this tells nothing about who has an account.
            raise TooManyFailedLogins(
                f"too many failed logins for this account or from this address: retry in "
                f"{verdict.retry_after_seconds} s",
                retry_after_s=verdict.retry_after_seconds,
            )

    async def _upgrade_hash(self, user: User, password: str) -> None:
        # Hashes made with older (cheaper) parameters are replaced at the next successful login.
        if self.passwords.needs_rehash(user.password_hash):
            self.store.set_password_hash(user.id, await self.passwords.hash_in_thread(password))
            log.info("password hash of user %s upgraded to the current Argon2 parameters", user.id)
