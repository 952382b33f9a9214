"""Checking credentials: e-mail and password, or an API key. No HTTP here.

Every failure raises the same `InvalidCredentials`, whatever went wrong, so a caller cannot
learn which e-mail addresses have accounts; an unknown user costs one Argon2 verification
like a known one.
"""

from __future__ import annotations

import logging

from auth_service.accounts import AccountStore, User
from auth_service.passwords import Passwords
from auth_service.tokens import TokenSubject
from common.errors import InvalidCredentials

log = logging.getLogger("auth_service.authentication")

WRONG_CREDENTIALS = "the e-mail address or the password is wrong, or the account is disabled"
WRONG_API_KEY = "the API key is unknown, revoked, or its account is disabled"


class Authenticator:
    def __init__(self, store: AccountStore, passwords: Passwords) -> None:
        self.store = store
        self.passwords = passwords

    async def with_password(self, email: str, password: str) -> TokenSubject:
        user = self.store.find_user(email)
        matches = await self.passwords.verify_in_thread(user.password_hash if user else None, password)
        if user is None or not matches or user.disabled:
            raise InvalidCredentials(WRONG_CREDENTIALS)
        await self._upgrade_hash(user, password)
        return TokenSubject(sub=user.subject, tier=user.tier, email=user.email)

    def with_api_key(self, key: str) -> TokenSubject:
        api_key = self.store.find_api_key(key.strip().lower())
        if api_key is None or api_key.revoked_at is not None:
            raise InvalidCredentials(WRONG_API_KEY)
        user = self.store.user_by_id(api_key.user_id)
        if user.disabled:
            raise InvalidCredentials(WRONG_API_KEY)
        return TokenSubject(sub=user.subject, tier=user.tier, email=user.email, api_key_id=api_key.id)

    async def _upgrade_hash(self, user: User, password: str) -> None:
        # Hashes made with older (cheaper) parameters are replaced at the next successful login.
        if self.passwords.needs_rehash(user.password_hash):
            self.store.set_password_hash(user.id, await self.passwords.hash_in_thread(password))
            log.info("password hash of user %s upgraded to the current Argon2 parameters", user.id)
