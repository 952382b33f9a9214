"""The auth service's state and the workflows behind its answers (the handlers only parse,
call and respond): the account store, the signing keys, password checks and token issuing,
and what each account change does besides (revocations published, a new session's token)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from auth_service.accounts import (
    AccountError,
    AccountStore,
    ApiKey,
    ApiKeyLimit,
    DuplicateUser,
    Revocation,
    User,
    open_store,
)
from auth_service.authentication import Authenticator
from auth_service.config import AuthConfig
from auth_service.keys import KeyRing, ensure_signing_key, retire_expired_keys
from auth_service.management import UserChanges, apply_changes, check_own_changes
from auth_service.parsing import NewUser, PasswordChange
from auth_service.passwords import Requester, passwords_for
from auth_service.revocation import publish_revocations, recent_revocations
from auth_service.throttle import LoginThrottle
from auth_service.tokens import IssuedToken, TokenIssuer, TokenSubject
from common.errors import Conflict, InvalidParameter, NotFound, TooManyApiKeys
from common.redis import ResilientRedis
from common.service import REDIS_KEY

log = logging.getLogger("auth_service")
CleanupContext = Callable[[web.Application], AsyncIterator[None]]
# 10 ms beyond the second, defensively: asyncio sleeps on the monotonic clock, `iat` comes from
# the wall clock (NTP may slew it), and a token issued still at a revocation's second would be
# revoked at birth.
WALL_CLOCK_MARGIN_S = 0.01


@dataclass
class AuthState:
    store: AccountStore
    keyring: KeyRing
    authenticator: Authenticator
    issuer: TokenIssuer
    redis: ResilientRedis

    async def publish(self, revocations: list[Revocation]) -> None:
        """To Redis now; when it is down the service's sync loop publishes them once it is back."""
        if revocations:
            await self.redis.call(lambda client: publish_revocations(client, revocations), fallback=0)

    def add_api_key(self, user: User, expires_at: int | None) -> tuple[ApiKey, str]:
        try:
            return self.store.add_api_key_for(user.id, expires_at=expires_at)
        except ApiKeyLimit as exc:
            raise TooManyApiKeys(str(exc)) from exc

    async def revoke_api_key(self, user: User, key_id: int) -> ApiKey:
        revoked = self.store.revoke_user_api_key(user.id, key_id)
        if revoked is None:  # unknown, or another user's: the same answer, so ids tell nothing
            raise NotFound(f"you have no API key with id {key_id}", parameter="keyId")
        key, revocation = revoked
        await self.publish([revocation] if revocation else [])
        return key

    async def change_password(self, user: User, change: PasswordChange, requester: Requester) -> IssuedToken:
        """The new password set, every earlier token revoked (this session's too), and the new
        session's token, issued after the revocation's second."""
        passwords = self.authenticator.passwords
        if not await passwords.verify_in_thread(user.password_hash, change.current, requester):
            raise InvalidParameter("is not the account's password", parameter="currentPassword")
        new_hash = await passwords.hash_in_thread(change.new, requester)
        revocation = self.store.change_password(user.id, new_hash)
        await self.publish([revocation])
        await after_second(revocation.revoked_at)
        return self.issuer.issue(TokenSubject(sub=user.subject, tier=user.tier, email=user.email), change.duration)

    async def create_user(self, new: NewUser, requester: Requester) -> User:
        password_hash = await self.authenticator.passwords.hash_in_thread(new.password, requester)
        try:
            return self.store.add_user(new.email, password_hash, new.tier, new.role)
        except DuplicateUser as exc:
            raise Conflict(str(exc), parameter="email") from exc

    async def change_user(self, admin: User, user_id: int, changes: UserChanges) -> User:
        try:
            target = self.store.user_by_id(user_id)
        except AccountError as exc:
            raise NotFound(f"there is no user with id {user_id}", parameter="userId") from exc
        check_own_changes(admin, target, changes)
        user, revocations = apply_changes(self.store, target, changes)
        await self.publish(revocations)
        return user

    async def sync_once(self) -> None:
        """Re-publishes recent revocations to Redis and retires keys whose tokens all expired."""
        await self.publish(recent_revocations(self.store))
        retire_expired_keys(self.store)


async def after_second(unix: int) -> None:
    """Waits until the clock has passed `unix` (at most a second): a token issued then has an
    `iat` after a revocation made at `unix`, which covers tokens with `iat <= unix`."""
    delay = unix + 1 - time.time()
    if delay > 0:
        await asyncio.sleep(delay + WALL_CLOCK_MARGIN_S)


STATE_KEY: web.AppKey[AuthState] = web.AppKey("auth_state", AuthState)


def state_context(config: AuthConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        store = open_store(config)
        ensure_signing_key(store)
        retire_expired_keys(store)
        keyring = KeyRing(store)
        keyring.refresh()
        passwords = passwords_for(config)
        # Made now so the first login of an unknown user is not slower than the others.
        await asyncio.to_thread(lambda: passwords.dummy_hash)
        throttle = LoginThrottle(
            app[REDIS_KEY],
            free_failures=config.login_free_failures,
            max_backoff_seconds=config.login_backoff_max_seconds,
            window_seconds=config.login_failure_window_seconds,
            address_free_failures=config.login_address_free_failures,
        )
        issuer = TokenIssuer(
            keyring, issuer=config.jwt_issuer, audience=config.jwt_audience, default_seconds=config.default_token_seconds
        )
        app[STATE_KEY] = AuthState(store, keyring, Authenticator(store, passwords, throttle), issuer, app[REDIS_KEY])
        log.info("accounts database %s open, signing key %s", store.description, keyring.active.kid)
        yield
        passwords.close()
        store.close()

    return context


def revocation_sync_context(config: AuthConfig) -> CleanupContext:
    async def loop(state: AuthState) -> None:
        while True:
            try:
                await state.sync_once()
            except Exception:
                log.exception("revocation sync failed; retrying in %s s", config.revocation_sync_seconds)
            await asyncio.sleep(config.revocation_sync_seconds)

    async def context(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(loop(app[STATE_KEY]), name="revocation-sync")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return context


async def accounts_health(app: web.Application) -> dict[str, Any]:
    state = app[STATE_KEY]
    try:
        # In a thread: an unreachable PostgreSQL must not hold the event loop for its timeout.
        await asyncio.to_thread(state.store.ping)
    except Exception as exc:
        log.error("accounts database unreadable: %s", exc)
        return {"accounts_db": "down", "ready": False}
    return {"accounts_db": "up", "signing_key": state.keyring.active.kid}

