"""Every JSON answer of the auth service: tokens, keys, accounts. Nothing here reads a request."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from auth_service.accounts import ApiKey, User, UserSummary, now_seconds
from common.service import json_response

# Tokens, keys and account data are credentials or personal: no cache may keep them (RFC 6749
# section 5.1).
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def private_answer(body: Any) -> web.Response:
    return json_response(body, headers=NO_STORE)


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


def new_key_json(key: ApiKey, secret: str) -> dict[str, Any]:
    # The key itself is in this answer only: stored as a hash, never shown again.
    return {**key_json(key), "apikey": secret}


def users_json(users: list[UserSummary]) -> dict[str, Any]:
    return {"users": [user_json(user) for user in users]}


def keys_json(keys: list[ApiKey]) -> dict[str, Any]:
    return {"apiKeys": [key_json(key) for key in keys]}
