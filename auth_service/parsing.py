"""The auth service's request bodies and path ids → typed requests, every violation at once:
logins (`/v1/authenticate…`), the caller's account and API keys, and administrators' users."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auth_service.config import MAX_TOKEN_SECONDS, ROLES, TIERS
from auth_service.management import UserChanges, new_user_problems
from auth_service.passwords import password_problem
from common.errors import ParameterErrors
from common.params import json_kind

# Generous bounds that still keep absurd inputs away from Argon2 and the database.
MAX_USER_LENGTH = 320
MAX_PASSWORD_LENGTH = 1024
MAX_APIKEY_LENGTH = 64


@dataclass(frozen=True)
class PasswordLogin:
    user: str
    password: str
    duration: int


@dataclass(frozen=True)
class ApiKeyLogin:
    apikey: str
    duration: int


def parse_duration(
    body: dict[str, Any], errors: ParameterErrors, default: int, maximum: int = MAX_TOKEN_SECONDS
) -> int:
    if "duration" not in body:
        return default
    value = body["duration"]
    # bool is an int subclass in Python, but `true` is not a number of seconds.
    if type(value) is not int:
        errors.add("duration", f"must be an integer number of seconds between 1 and {maximum}, got {shown(value)}")
        return default
    if not 1 <= value <= maximum:
        errors.add("duration", f"must be between 1 and {maximum} seconds, got {value}")
        return default
    return value


def parse_string(body: dict[str, Any], name: str, errors: ParameterErrors, max_length: int) -> str:
    value = body.get(name)
    if name not in body or value is None:
        errors.add(name, "is required")
        return ""
    if not isinstance(value, str):
        errors.add(name, f"must be a string, got {shown(value)}")
        return ""
    if not value.strip():
        errors.add(name, "must not be blank")
        return ""
    if len(value) > max_length:
        errors.add(name, f"must have at most {max_length} characters")
        return ""
    return value


def parse_password_login(body: dict[str, Any], default_duration: int) -> PasswordLogin:
    errors = ParameterErrors()
    user = parse_string(body, "user", errors, MAX_USER_LENGTH)
    password = parse_string(body, "password", errors, MAX_PASSWORD_LENGTH)
    duration = parse_duration(body, errors, default_duration)
    errors.raise_if_any()
    return PasswordLogin(user, password, duration)


def parse_apikey_login(body: dict[str, Any], default_duration: int) -> ApiKeyLogin:
    errors = ParameterErrors()
    apikey = parse_string(body, "apikey", errors, MAX_APIKEY_LENGTH)
    duration = parse_duration(body, errors, default_duration)
    errors.raise_if_any()
    return ApiKeyLogin(apikey, duration)


def shown(value: Any) -> str:
    """A JSON-ish rendering of a client value for messages, kept short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value[:40])
    if isinstance(value, int | float):
        return str(value)
    return json_kind(value)


# ---------------------------------------------------------------- the account console

# SQLite's INTEGER: larger ids cannot exist, and Python would otherwise pass them to SQLite.
MAX_ID = 2**63 - 1
# An API key may be made to expire at most this many days ahead (or never, when not asked).
MAX_API_KEY_DAYS = 3650
DAY_SECONDS = 86_400


@dataclass(frozen=True)
class NewUser:
    email: str
    password: str
    tier: str
    role: str


@dataclass(frozen=True)
class PasswordChange:
    current: str
    new: str
    duration: int


def parse_id(text: str, name: str) -> int:
    """A path's numeric id: a positive integer."""
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_ID:
        errors = ParameterErrors()
        errors.add(name, f"must be a positive integer, got {shown(text)}")
        errors.raise_if_any()
    return int(text)


def parse_choice(body: dict[str, Any], name: str, choices: tuple[str, ...], errors: ParameterErrors) -> str | None:
    """An optional field that is one of `choices`; None when absent."""
    if name not in body:
        return None
    value = body[name]
    if not isinstance(value, str) or value not in choices:
        errors.add(name, f"must be one of {', '.join(choices)}, got {shown(value)}")
        return None
    return value


def parse_new_user(body: dict[str, Any]) -> NewUser:
    errors = ParameterErrors()
    email = parse_string(body, "email", errors, MAX_USER_LENGTH)
    password = parse_string(body, "password", errors, MAX_PASSWORD_LENGTH)
    tier = parse_choice(body, "tier", TIERS, errors) or "standard"
    role = parse_choice(body, "role", ROLES, errors) or "user"
    if email and password:
        for field, problem in new_user_problems(email, password, tier, role):
            errors.add(field, problem)
    errors.raise_if_any()
    return NewUser(email.strip(), password, tier, role)


def parse_user_changes(body: dict[str, Any]) -> UserChanges:
    errors = ParameterErrors()
    unknown = sorted(set(body) - {"tier", "role", "disabled"})
    for name in unknown:
        errors.add(name[:40], "is not a field of a user that can be changed (tier, role, disabled)")
    if not body:
        errors.add(None, "give at least one of tier, role, disabled")
    disabled = body.get("disabled")
    if "disabled" in body and not isinstance(disabled, bool):
        errors.add("disabled", f"must be true or false, got {shown(disabled)}")
    changes = UserChanges(
        tier=parse_choice(body, "tier", TIERS, errors),
        role=parse_choice(body, "role", ROLES, errors),
        disabled=disabled if isinstance(disabled, bool) else None,
    )
    errors.raise_if_any()
    return changes


@dataclass(frozen=True)
class NewApiKey:
    expires_at: int | None  # unix seconds; None: the key never expires


def parse_new_api_key(body: dict[str, Any], now: int) -> NewApiKey:
    """`{}`, `{"expiresInDays": 90}` or `{"expiresAt": "2027-01-31T00:00:00Z"}`."""
    errors = ParameterErrors()
    for name in sorted(set(body) - {"expiresInDays", "expiresAt"}):
        errors.add(name[:40], "is not a field of a new API key (expiresInDays, expiresAt)")
    if "expiresInDays" in body and "expiresAt" in body:
        errors.add("expiresAt", "give expiresInDays or expiresAt, not both")
    expires_at = None
    if "expiresInDays" in body:
        days = body["expiresInDays"]
        if type(days) is not int or not 1 <= days <= MAX_API_KEY_DAYS:
            errors.add("expiresInDays", f"must be an integer between 1 and {MAX_API_KEY_DAYS}, got {shown(days)}")
        else:
            expires_at = now + days * DAY_SECONDS
    elif "expiresAt" in body:
        expires_at = parse_expiry_time(body["expiresAt"], now, errors)
    errors.raise_if_any()
    return NewApiKey(expires_at)


def parse_expiry_time(value: Any, now: int, errors: ParameterErrors) -> int | None:
    """An RFC 3339 time with its offset (`…Z`, `…+02:00`), after now and within MAX_API_KEY_DAYS."""
    expected = f"must be a date-time with its offset (2027-01-31T00:00:00Z), got {shown(value)}"
    if not isinstance(value, str) or not value.isascii() or len(value) > 40:
        errors.add("expiresAt", expected)
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        errors.add("expiresAt", expected)
        return None
    if moment.tzinfo is None:
        errors.add("expiresAt", expected)
        return None
    expires_at = int(moment.timestamp())
    if not now < expires_at <= now + MAX_API_KEY_DAYS * DAY_SECONDS:
        errors.add("expiresAt", f"must be in the future and at most {MAX_API_KEY_DAYS} days ahead")
        return None
    return expires_at


def parse_password_change(body: dict[str, Any], default_duration: int) -> PasswordChange:
    errors = ParameterErrors()
    current = parse_string(body, "currentPassword", errors, MAX_PASSWORD_LENGTH)
    new = parse_string(body, "newPassword", errors, MAX_PASSWORD_LENGTH)
    duration = parse_duration(body, errors, default_duration)
    problem = password_problem(new) if new else None
    if problem:
        errors.add("newPassword", problem)
    if current and new and current == new:
        errors.add("newPassword", "must differ from the current password")
    errors.raise_if_any()
    return PasswordChange(current, new, duration)
