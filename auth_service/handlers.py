"""HTTP handlers: parse the request, call the state, answer. Errors are raised, never formatted.

Logins (`/v1/authenticate…`), the signing keys, and the account console's endpoints: the
caller's own account (`/v1/account…`) and, for administrators, the users (`/v1/admin/users…`).
The page is `/console` on the gateway; `python -m auth_service.console` does the same on the server.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from auth_service.accounts import now_seconds
from auth_service.formatter import key_json, keys_json, new_key_json, private_answer, user_json, users_json
from auth_service.management import Caller, account_user, admin_user
from auth_service.parsing import (
    parse_apikey_login,
    parse_id,
    parse_new_api_key,
    parse_new_user,
    parse_password_change,
    parse_password_login,
    parse_user_changes,
)
from auth_service.passwords import Requester
from auth_service.state import STATE_KEY
from common.errors import MalformedBody
from common.internal_auth import INTERNAL_API_KEY_HEADER, INTERNAL_ISSUED_AT_HEADER, INTERNAL_SUBJECT_HEADER
from common.middleware import client_gone
from common.service import json_response, read_json

# ---------------------------------------------------------------- reading the request


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


def caller_of(request: web.Request) -> Caller:
    """The identity the gateway forwards (trusted: only it holds the internal credential)."""
    issued_at = request.headers.get(INTERNAL_ISSUED_AT_HEADER, "")
    return Caller(
        subject=request.headers.get(INTERNAL_SUBJECT_HEADER),
        issued_at=int(issued_at) if issued_at.isascii() and issued_at.isdigit() else None,
        api_key_id=request.headers.get(INTERNAL_API_KEY_HEADER),
    )


# ---------------------------------------------------------------- logins and keys


async def authenticate(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    login = parse_password_login(await read_json_object(request), state.issuer.default_seconds)
    subject = await state.authenticator.with_password(login.user, login.password, requester_of(request))
    return private_answer(state.issuer.issue(subject, login.duration).response())


async def authenticate_apikey(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    login = parse_apikey_login(await read_json_object(request), state.issuer.default_seconds)
    subject, duration = state.authenticator.with_api_key(login.apikey, login.duration)
    return private_answer(state.issuer.issue(subject, duration).response())


async def jwks(request: web.Request) -> web.Response:
    keyring = request.app[STATE_KEY].keyring
    keyring.refresh()
    # Short caching: verifiers see a rotated key within a minute; they refetch on an unknown kid anyway.
    return json_response(keyring.jwks(), headers={"Cache-Control": "public, max-age=60"})


# ---------------------------------------------------------------- the caller's account


async def get_account(request: web.Request) -> web.Response:
    return private_answer(user_json(account_user(request.app[STATE_KEY].store, caller_of(request))))


async def list_api_keys(request: web.Request) -> web.Response:
    store = request.app[STATE_KEY].store
    user = account_user(store, caller_of(request))
    return private_answer(keys_json(store.api_keys_of_user(user.id)))


async def create_api_key(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    user = account_user(state.store, caller_of(request))
    # No body (or an empty one) is a key that never expires.
    body = await read_json_object(request) if request.can_read_body else {}
    new = parse_new_api_key(body, now_seconds())
    return private_answer(new_key_json(*state.add_api_key(user, new.expires_at)))


async def revoke_api_key(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    user = account_user(state.store, caller_of(request))
    key_id = parse_id(request.match_info["keyId"], "keyId")
    return private_answer(key_json(await state.revoke_api_key(user, key_id)))


async def change_password(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    user = account_user(state.store, caller_of(request))
    change = parse_password_change(await read_json_object(request), state.issuer.default_seconds)
    return private_answer((await state.change_password(user, change, requester_of(request))).response())


# ---------------------------------------------------------------- administrators


async def list_users(request: web.Request) -> web.Response:
    store = request.app[STATE_KEY].store
    admin_user(store, caller_of(request))
    return private_answer(users_json(store.list_users()))


async def create_user(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    admin_user(state.store, caller_of(request))
    new = parse_new_user(await read_json_object(request))
    return private_answer(user_json(await state.create_user(new, requester_of(request))))


async def change_user(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    admin = admin_user(state.store, caller_of(request))
    user_id = parse_id(request.match_info["userId"], "userId")
    changes = parse_user_changes(await read_json_object(request))
    return private_answer(user_json(await state.change_user(admin, user_id, changes)))
