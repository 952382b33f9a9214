"""The auth service's aiohttp application."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from auth_service import account_handlers
from auth_service.accounts import open_store
from auth_service.authentication import Authenticator
from auth_service.config import AuthConfig
from auth_service.handlers import (
    AUTHENTICATOR_KEY,
    ISSUER_KEY,
    KEYRING_KEY,
    STORE_KEY,
    authenticate,
    authenticate_apikey,
    jwks,
)
from auth_service.keys import KeyRing, ensure_signing_key, retire_expired_keys
from auth_service.passwords import passwords_for
from auth_service.revocation import publish_revocations, recent_revocations
from auth_service.throttle import LoginThrottle
from auth_service.tokens import TokenIssuer
from common.service import HEALTH_CHECKS_KEY, REDIS_KEY, base_app

log = logging.getLogger("auth_service")
CleanupContext = Callable[[web.Application], AsyncIterator[None]]

JWKS_PATH = "/.well-known/jwks.json"


def accounts_context(config: AuthConfig) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        store = open_store(config)
        ensure_signing_key(store)
        retire_expired_keys(store)
        keyring = KeyRing(store)
        keyring.refresh()
        passwords = passwords_for(config)
        # Made now so the first login of an unknown user is not slower than the others.
        await asyncio.to_thread(lambda: passwords.dummy_hash)
        app[STORE_KEY] = store
        app[KEYRING_KEY] = keyring
        throttle = LoginThrottle(
            app[REDIS_KEY],
            free_failures=config.login_free_failures,
            max_backoff_seconds=config.login_backoff_max_seconds,
            window_seconds=config.login_failure_window_seconds,
            address_free_failures=config.login_address_free_failures,
        )
        app[AUTHENTICATOR_KEY] = Authenticator(store, passwords, throttle)
        app[ISSUER_KEY] = TokenIssuer(
            keyring,
            issuer=config.jwt_issuer,
            audience=config.jwt_audience,
            default_seconds=config.default_token_seconds,
        )
        log.info("accounts database %s open, signing key %s", store.description, keyring.active.kid)
        yield
        passwords.close()
        store.close()

    return context


async def sync_once(app: web.Application) -> None:
    """Re-publishes recent revocations to Redis and retires keys whose tokens all expired."""
    store = app[STORE_KEY]
    revocations = recent_revocations(store)
    if revocations:
        await app[REDIS_KEY].call(lambda client: publish_revocations(client, revocations), fallback=0)
    retire_expired_keys(store)


def revocation_sync_context(config: AuthConfig) -> CleanupContext:
    async def loop(app: web.Application) -> None:
        while True:
            try:
                await sync_once(app)
            except Exception:
                log.exception("revocation sync failed; retrying in %s s", config.revocation_sync_seconds)
            await asyncio.sleep(config.revocation_sync_seconds)

    async def context(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(loop(app), name="revocation-sync")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return context


async def accounts_health(app: web.Application) -> dict[str, Any]:
    try:
        # In a thread: an unreachable PostgreSQL must not hold the event loop for its timeout.
        await asyncio.to_thread(app[STORE_KEY].ping)
    except Exception as exc:
        log.error("accounts database unreadable: %s", exc)
        return {"accounts_db": "down", "ready": False}
    return {"accounts_db": "up", "signing_key": app[KEYRING_KEY].active.kid}


def create_app(config: AuthConfig) -> web.Application:
    app = base_app(config)
    app.cleanup_ctx.append(accounts_context(config))
    app.cleanup_ctx.append(revocation_sync_context(config))
    app[HEALTH_CHECKS_KEY].append(accounts_health)
    app.router.add_post("/v1/authenticate", authenticate)
    app.router.add_post("/v1/authenticate/apikey", authenticate_apikey)
    app.router.add_get(JWKS_PATH, jwks)
    account_handlers.add_routes(app)
    return app
