"""Helpers of the auth service tests."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import jwt
from aiohttp.test_utils import TestClient

from auth_service.accounts import AccountStore, User
from auth_service.config import AuthConfig
from auth_service.passwords import passwords_for

# Nothing listens on port 1: Redis calls fail at once instead of waiting for a timeout.
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"
PASSWORD = "correct horse battery"
ClientFactory = Callable[..., Awaitable[TestClient[Any, Any]]]
Client = TestClient[Any, Any]


def make_config(data_dir: Path, **overrides: Any) -> AuthConfig:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "db_path": None,
        "database_url": "",
        "redis_url": UNREACHABLE_REDIS,
        # Far cheaper than production, so a test's logins take microseconds.
        "argon2_time_cost": 1,
        "argon2_memory_kib": 8,
        "argon2_parallelism": 1,
        **overrides,
    }
    return AuthConfig.from_env("auth_service", **values)


def add_user(
    config: AuthConfig, store: AccountStore, email: str, password: str = PASSWORD, tier: str = "standard"
) -> User:
    return store.add_user(email, passwords_for(config).hash(password), tier)


async def jwks_keys(client: Client) -> dict[str, Any]:
    """kid -> public key, as a verifier builds it from the published JWKS."""
    response = await client.get("/.well-known/jwks.json")
    assert response.status == 200
    return {str(jwk.key_id): jwk.key for jwk in jwt.PyJWKSet.from_dict(await response.json()).keys}


def verify(token: str, keys: dict[str, Any], config: AuthConfig, *, leeway: int = 0) -> dict[str, Any]:
    """The claims after checking signature, expiry, issuer and audience as a verifier does."""
    kid = jwt.get_unverified_header(token)["kid"]
    claims: dict[str, Any] = jwt.decode(
        token, keys[kid], algorithms=["EdDSA"], audience=config.jwt_audience, issuer=config.jwt_issuer, leeway=leeway
    )
    return claims


async def login(client: Client, body: Any, *, accept: str | None = None, path: str = "/v1/authenticate") -> Any:
    headers = {"Accept": accept} if accept else {}
    return await client.post(path, json=body, headers=headers)


def with_redis(config: AuthConfig, redis_url: str) -> AuthConfig:
    return replace(config, redis_url=redis_url)
