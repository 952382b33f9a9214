"""POST /v1/authenticate/apikey."""

from __future__ import annotations

from typing import Any

import pytest

from auth_service.accounts import AccountStore
from auth_service.config import AuthConfig
from tests.auth_service.helpers import Client, add_user, jwks_keys, login, verify

PATH = "/v1/authenticate/apikey"
EMAIL = "bob@example.com"


@pytest.fixture
def api_key(config: AuthConfig, store: AccountStore) -> str:
    add_user(config, store, EMAIL, tier="unlimited")
    return store.add_api_key(EMAIL)[1]


async def test_api_key_gets_a_token_naming_the_key(
    client: Client, config: AuthConfig, store: AccountStore, api_key: str
) -> None:
    response = await login(client, {"apikey": api_key, "duration": 120}, path=PATH)
    assert response.status == 200
    body = await response.json()
    claims = verify(body["token"], await jwks_keys(client), config)
    key_row = store.api_keys_of(EMAIL)[0]
    user = store.user(EMAIL)
    assert claims["akid"] == str(key_row.id)
    assert claims["sub"] == f"user:{user.id}"
    assert claims["tier"] == "unlimited"
    assert claims["email"] == EMAIL
    assert body["expiresIn"] == 120


async def test_api_key_in_capitals_is_the_same_key(client: Client, api_key: str) -> None:
    assert (await login(client, {"apikey": api_key.upper()}, path=PATH)).status == 200


@pytest.mark.usefixtures("api_key")
@pytest.mark.parametrize("apikey", ["00000000-0000-4000-8000-000000000000", "not-a-key"])
async def test_unknown_key_is_401(client: Client, apikey: str) -> None:
    response = await login(client, {"apikey": apikey}, path=PATH, accept="application/json")
    assert response.status == 401
    assert (await response.json())["details"][0]["code"] == "AUTH_ERROR_INVALID_CREDENTIALS"


async def test_revoked_key_is_refused_at_once(client: Client, store: AccountStore, api_key: str) -> None:
    assert (await login(client, {"apikey": api_key}, path=PATH)).status == 200
    store.revoke_api_key(api_key[:8])
    assert (await login(client, {"apikey": api_key}, path=PATH)).status == 401


async def test_disabled_users_key_is_refused(client: Client, store: AccountStore, api_key: str) -> None:
    store.disable_user(EMAIL)
    assert (await login(client, {"apikey": api_key}, path=PATH)).status == 401


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["apikey"]),
        ({"apikey": 7, "duration": 0}, ["apikey", "duration"]),
        ({"apikey": "x" * 65}, ["apikey"]),
        ({"apikey": None, "duration": 2592001}, ["apikey", "duration"]),
    ],
)
async def test_every_invalid_field_is_reported(client: Client, body: dict[str, Any], fields: list[str]) -> None:
    response = await login(client, body, path=PATH, accept="application/json")
    assert response.status == 400
    assert [e.split(":")[0] for e in (await response.json())["errors"]] == fields


async def test_api_key_duration_defaults_to_the_configured_one(client: Client, api_key: str) -> None:
    body = await (await login(client, {"apikey": api_key}, path=PATH)).json()
    assert body["expiresIn"] == 3600
