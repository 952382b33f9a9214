"""The auth service's aiohttp application."""

from __future__ import annotations

from aiohttp import web

from auth_service import handlers
from auth_service.config import AuthConfig
from auth_service.state import accounts_health, revocation_sync_context, state_context
from common.service import HEALTH_CHECKS_KEY, base_app

JWKS_PATH = "/.well-known/jwks.json"


def create_app(config: AuthConfig) -> web.Application:
    app = base_app(config)
    app.cleanup_ctx.append(state_context(config))
    app.cleanup_ctx.append(revocation_sync_context(config))
    app[HEALTH_CHECKS_KEY].append(accounts_health)
    app.router.add_post("/v1/authenticate", handlers.authenticate)
    app.router.add_post("/v1/authenticate/apikey", handlers.authenticate_apikey)
    app.router.add_get(JWKS_PATH, handlers.jwks)
    app.router.add_get("/v1/account", handlers.get_account)
    app.router.add_get("/v1/account/apikeys", handlers.list_api_keys)
    app.router.add_post("/v1/account/apikeys", handlers.create_api_key)
    app.router.add_delete("/v1/account/apikeys/{keyId}", handlers.revoke_api_key)
    app.router.add_post("/v1/account/password", handlers.change_password)
    app.router.add_get("/v1/admin/users", handlers.list_users)
    app.router.add_post("/v1/admin/users", handlers.create_user)
    app.router.add_patch("/v1/admin/users/{userId}", handlers.change_user)
    return app
