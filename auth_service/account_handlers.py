"""The account console's endpoints: the caller's own account (`/v1/account…`) and, for
administrators, the users (`/v1/admin/users…`). Read the request, call the domain
(`auth_service.management`, the account store), answer; errors are raised, never formatted.
The page is `/console` on the gateway; `python -m auth_service.console` does the same on the server.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from auth_service.account_validation import (
    parse_id,
    parse_new_api_key,
    parse_new_user,
    parse_password_change,
    parse_user_changes,
)
from auth_service.accounts import (
    AccountError,
    ApiKey,
    ApiKeyLimit,
    DuplicateUser,
    Revocation,
    User,
    UserSummary,
    now_seconds,
)
from auth_service.handlers import (
    AUTHENTICATOR_KEY,
    ISSUER_KEY,
    NO_STORE,
    STORE_KEY,
    read_json_object,
    requester_of,
)
from auth_service.management import Caller, account_user, admin_user, apply_changes, check_own_changes
from auth_service.revocation import publish_revocations
from auth_service.tokens import TokenSubject
from common.errors import Conflict, InvalidParameter, NotFound, TooManyApiKeys
from common.internal_auth import INTERNAL_API_KEY_HEADER, INTERNAL_ISSUED_AT_HEADER, INTERNAL_SUBJECT_HEADER
from common.service import REDIS_KEY, json_response

# ---------------------------------------------------------------- the answers' shapes


def iso_time(unix: int | None) -> str | None:
    return datetime.fromtimestamp(unix, UTC).isoformat().replace("+00:00", "Z") if unix else None


def user_json(user: User | UserSummary) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": user.id,
        "email": user.email,
        "tier": user.tier,
        "role": user.role,
        "disabled": user.disabled,
        "createdAt": iso_time(user.created_at),
    }
    if isinstance(user, UserSummary):
        body["activeApiKeys"] = user.active_keys
    return body


def key_json(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "prefix": key.prefix,
        "createdAt": iso_time(key.created_at),
        "revokedAt": iso_time(key.revoked_at),
        "expiresAt": iso_time(key.expires_at),
        "active": key.usable(now_seconds()),
    }


def answer(body: Any) -> web.Response:
    # Account data and keys: no cache may keep them.
    return json_response(body, headers=NO_STORE)


# ---------------------------------------------------------------- helpers


def caller_of(request: web.Request) -> Caller:
    """The identity the gateway forwards (trusted: only it holds the internal credential)."""
    issued_at = request.headers.get(INTERNAL_ISSUED_AT_HEADER, "")
    return Caller(
        subject=request.headers.get(INTERNAL_SUBJECT_HEADER),
        issued_at=int(issued_at) if issued_at.isascii() and issued_at.isdigit() else None,
        api_key_id=request.headers.get(INTERNAL_API_KEY_HEADER),
    )


async def publish(request: web.Request, revocations: list[Revocation]) -> None:
    """To Redis now; when it is down the service's sync loop publishes them once it is back."""
    if revocations:
        await request.app[REDIS_KEY].call(lambda client: publish_revocations(client, revocations), fallback=0)


WALL_CLOCK_MARGIN_S = 0.01


async def after_second(unix: int) -> None:
    """Waits until the clock has passed `unix` (at most a second): a token issued then has an
    `iat` after a revocation made at `unix`, which covers tokens with `iat <= unix`."""
    # 10 ms beyond, defensively: asyncio sleeps on the monotonic clock, `iat` comes from the wall
    # clock (NTP may slew it), and a token issued still at `unix` would be revoked at birth.
    delay = unix + 1 - time.time()
    if delay > 0:
        await asyncio.sleep(delay + WALL_CLOCK_MARGIN_S)


# ---------------------------------------------------------------- the caller's account


async def get_account(request: web.Request) -> web.Response:
    return answer(user_json(account_user(request.app[STORE_KEY], caller_of(request))))


async def list_api_keys(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    user = account_user(store, caller_of(request))
    return answer({"apiKeys": [key_json(key) for key in store.api_keys_of_user(user.id)]})


async def create_api_key(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    user = account_user(store, caller_of(request))
    # No body (or an empty one) is a key that never expires.
    body = await read_json_object(request) if request.can_read_body else {}
    new = parse_new_api_key(body, now_seconds())
    try:
        key, secret = store.add_api_key_for(user.id, expires_at=new.expires_at)
    except ApiKeyLimit as exc:
        raise TooManyApiKeys(str(exc)) from exc
    # The key itself is in this answer only: stored as a hash, never shown again.
    return answer({**key_json(key), "apikey": secret})


async def revoke_api_key(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    user = account_user(store, caller_of(request))
    key_id = parse_id(request.match_info["keyId"], "keyId")
    revoked = store.revoke_user_api_key(user.id, key_id)
    if revoked is None:  # unknown, or another user's: the same answer, so ids tell nothing
        raise NotFound(f"you have no API key with id {key_id}", parameter="keyId")
    key, revocation = revoked
    await publish(request, [revocation] if revocation else [])
    return answer(key_json(key))


async def change_password(request: web.Request) -> web.Response:
    store, issuer = request.app[STORE_KEY], request.app[ISSUER_KEY]
    passwords = request.app[AUTHENTICATOR_KEY].passwords
    user = account_user(store, caller_of(request))
    change = parse_password_change(await read_json_object(request), issuer.default_seconds)
    if not await passwords.verify_in_thread(user.password_hash, change.current, requester_of(request)):
        raise InvalidParameter("is not the account's password", parameter="currentPassword")
    new_hash = await passwords.hash_in_thread(change.new, requester_of(request))
    revocation = store.change_password(user.id, new_hash)
    await publish(request, [revocation])
    # Every earlier token is revoked, this session's too: it goes on with a new one.
    await after_second(revocation.revoked_at)
    subject = TokenSubject(sub=user.subject, tier=user.tier, email=user.email)
    return answer(issuer.issue(subject, change.duration).response())


# ---------------------------------------------------------------- administrators


async def list_users(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    admin_user(store, caller_of(request))
    return answer({"users": [user_json(user) for user in store.list_users()]})


async def create_user(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    admin_user(store, caller_of(request))
    new = parse_new_user(await read_json_object(request))
    passwords = request.app[AUTHENTICATOR_KEY].passwords
    password_hash = await passwords.hash_in_thread(new.password, requester_of(request))
    try:
        user = store.add_user(new.email, password_hash, new.tier, new.role)
    except DuplicateUser as exc:
        raise Conflict(str(exc), parameter="email") from exc
    return answer(user_json(user))


async def change_user(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    admin = admin_user(store, caller_of(request))
    user_id = parse_id(request.match_info["userId"], "userId")
    changes = parse_user_changes(await read_json_object(request))
    try:
        target = store.user_by_id(user_id)
    except AccountError as exc:
        raise NotFound(f"there is no user with id {user_id}", parameter="userId") from exc
    check_own_changes(admin, target, changes)
    user, revocations = apply_changes(store, target, changes)
    await publish(request, revocations)
    return answer(user_json(user))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/account", get_account)
    app.router.add_get("/v1/account/apikeys", list_api_keys)
    app.router.add_post("/v1/account/apikeys", create_api_key)
    app.router.add_delete("/v1/account/apikeys/{keyId}", revoke_api_key)
    app.router.add_post("/v1/account/password", change_password)
    app.router.add_get("/v1/admin/users", list_users)
    app.router.add_post("/v1/admin/users", create_user)
    app.router.add_patch("/v1/admin/users/{userId}", change_user)
