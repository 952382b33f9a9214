"""Validation of the authentication request bodies, reporting every broken field at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auth_service.config import MAX_TOKEN_SECONDS
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
