"""HTTP handlers: read the request, call the domain, answer. Errors are raised, never formatted."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from auth_service.authentication import Authenticator
from auth_service.config import AuthConfig
from auth_service.keys import KeyRing
from auth_service.tokens import TokenIssuer
from auth_service.validation import parse_apikey_login, parse_password_login
from common.errors import MalformedBody
from common.service import json_response, read_json

AUTH_CONFIG_KEY: web.AppKey[AuthConfig] = web.AppKey("auth_config", AuthConfig)
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


def default_duration(request: web.Request) -> int:
    return request.app[AUTH_CONFIG_KEY].default_token_seconds


async def authenticate(request: web.Request) -> web.Response:
    login = parse_password_login(await read_json_object(request), default_duration(request))
    subject = await request.app[AUTHENTICATOR_KEY].with_password(login.user, login.password)
    issued = request.app[ISSUER_KEY].issue(subject, login.duration)
    return json_response(issued.response(), headers=NO_STORE)


async def authenticate_apikey(request: web.Request) -> web.Response:
    login = parse_apikey_login(await read_json_object(request), default_duration(request))
    subject = request.app[AUTHENTICATOR_KEY].with_api_key(login.apikey)
    issued = request.app[ISSUER_KEY].issue(subject, login.duration)
    return json_response(issued.response(), headers=NO_STORE)


async def jwks(request: web.Request) -> web.Response:
    keyring = request.app[KEYRING_KEY]
    keyring.refresh()
    # Short caching: verifiers see a rotated key within a minute; they refetch on an unknown kid anyway.
    return json_response(keyring.jwks(), headers={"Cache-Control": "public, max-age=60"})
