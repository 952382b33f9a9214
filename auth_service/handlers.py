"""HTTP handlers: read the request, call the domain, answer. Errors are raised, never formatted."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from auth_service.accounts import AccountStore
from auth_service.authentication import Authenticator
from auth_service.keys import KeyRing
from auth_service.passwords import Requester
from auth_service.tokens import TokenIssuer
from auth_service.validation import parse_apikey_login, parse_password_login
from common.errors import MalformedBody
from common.middleware import client_gone
from common.service import json_response, read_json

STORE_KEY: web.AppKey[AccountStore] = web.AppKey("account_store", AccountStore)
AUTHENTICATOR_KEY: web.AppKey[Authenticator] = web.AppKey("authenticator", Authenticator)
ISSUER_KEY: web.AppKey[TokenIssuer] = web.AppKey("token_issuer", TokenIssuer)
KEYRING_KEY: web.AppKey[KeyRing] = web.AppKey("keyring", KeyRing)

# Tokens are credentials: no cache may keep them (RFC 6749 section 5.1).
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


async def read_json_object(request: web.Request) -> dict[str, Any]:
    body = await read_json(request)
    if not isinstance(body, dict):
        raise MalformedBody("the body must be a JSON object")
    return body


def requester_of(request: web.Request) -> Requester:
    """Whose password check this is: the client's address (the gateway's X-Forwarded-For, which
    it sets from TRUSTED_PROXIES; only the gateway holds the internal credential) for fair
    turns, and whether the caller still waits (the gateway closes the connection when it gives
    up, and a hash still queued for it is then not started)."""
    forwarded = request.headers.get("X-Forwarded-For", "").rsplit(",", 1)[-1].strip()
    return Requester(key=forwarded or request.remote or "", present=lambda: not client_gone(request))


async def authenticate(request: web.Request) -> web.Response:
    issuer = request.app[ISSUER_KEY]
    login = parse_password_login(await read_json_object(request), issuer.default_seconds)
    authenticator = request.app[AUTHENTICATOR_KEY]
    subject = await authenticator.with_password(login.user, login.password, requester_of(request))
    return json_response(issuer.issue(subject, login.duration).response(), headers=NO_STORE)


async def authenticate_apikey(request: web.Request) -> web.Response:
    issuer = request.app[ISSUER_KEY]
    login = parse_apikey_login(await read_json_object(request), issuer.default_seconds)
    subject, duration = request.app[AUTHENTICATOR_KEY].with_api_key(login.apikey, login.duration)
    return json_response(issuer.issue(subject, duration).response(), headers=NO_STORE)


async def jwks(request: web.Request) -> web.Response:
    keyring = request.app[KEYRING_KEY]
    keyring.refresh()
    # Short caching: verifiers see a rotated key within a minute; they refetch on an unknown kid anyway.
    return json_response(keyring.jwks(), headers={"Cache-Control": "public, max-age=60"})
