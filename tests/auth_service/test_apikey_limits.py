"""API keys: at most MAX_API_KEYS_PER_ACCOUNT active ones per account, and an optional expiry
(`expiresInDays` or `expiresAt` on creation; an expired key gives no token, and no token
outlives its key)."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from auth_service.accounts import AccountStore, User, hash_api_key, open_store
from auth_service.app import create_app
from auth_service.config import AuthConfig
from auth_service.database import SqliteDatabase
from auth_service.parsing import MAX_API_KEY_DAYS
from gateway.docs import openapi_spec
from tests.auth_service.helpers import Client, ClientFactory, add_user, login, make_config
from tests.auth_service.test_account_console import (
    OLD_USER,
    OLD_USERS_POSTGRES,
    OLD_USERS_SQLITE,
    as_user,
    call,
    codes,
)
from tests.auth_service.test_console import Console
from tests.postgres_server import PostgresServer

KEYS = "/v1/account/apikeys"
LEGACY = "application/json"
DAY = 86_400


@pytest.fixture
def dana(config: AuthConfig, store: AccountStore) -> User:
    return add_user(config, store, "dana@example.com")


@pytest.fixture
async def capped(aiohttp_client: ClientFactory, config: AuthConfig) -> Client:
    return await aiohttp_client(create_app(replace(config, max_api_keys_per_account=3)))


def unix(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp())


async def test_the_keys_of_an_account_are_capped(capped: Client, store: AccountStore, dana: User) -> None:
    made = [await call(capped, "POST", KEYS, as_user(dana)) for _ in range(3)]
    assert [status for status, _ in made] == [200, 200, 200]
    status, body = await call(capped, "POST", KEYS, as_user(dana, accept=LEGACY))
    # Before: no cap (121 keys in 0.4 s).
    assert status == 409 and codes(body) == ["AUTH_ERROR_TOO_MANY_API_KEYS"]
    assert "3 active API keys" in body["details"][0]["message"]
    assert len(store.api_keys_of_user(dana.id)) == 3
    # A revoked key leaves room for another.
    assert (await call(capped, "DELETE", f"{KEYS}/{made[0][1]['id']}", as_user(dana)))[0] == 200
    assert (await call(capped, "POST", KEYS, as_user(dana)))[0] == 200


async def test_expired_keys_do_not_count_against_the_cap(capped: Client, store: AccountStore, dana: User) -> None:
    for _ in range(3):
        store.add_api_key_for(dana.id, expires_at=int(time.time()) - 1)
    assert (await call(capped, "POST", KEYS, as_user(dana)))[0] == 200


async def test_the_console_command_is_capped_too(tmp_path: Path, database_url: str, dana: User) -> None:
    console = Console(tmp_path, database_url)
    console.env["MAX_API_KEYS_PER_ACCOUNT"] = "1"
    assert console("add-apikey", dana.email).returncode == 0
    refused = console("add-apikey", dana.email)
    assert refused.returncode == 1 and "1 active API keys" in refused.stderr


async def test_a_key_made_to_expire_in_days(client: Client, dana: User) -> None:
    status, key = await call(client, "POST", KEYS, as_user(dana), {"expiresInDays": 30})
    assert status == 200 and key["active"] is True
    assert abs(unix(key["expiresAt"]) - (time.time() + 30 * DAY)) <= 5
    listed = (await call(client, "GET", KEYS, as_user(dana)))[1]["apiKeys"]
    assert listed[0]["expiresAt"] == key["expiresAt"]


async def test_a_key_made_to_expire_at_a_time(client: Client, dana: User) -> None:
    when = datetime.fromtimestamp(int(time.time()) + 7 * DAY, UTC).isoformat()
    status, key = await call(client, "POST", KEYS, as_user(dana), {"expiresAt": when})
    assert status == 200 and unix(key["expiresAt"]) == unix(when)


async def test_without_a_body_a_key_never_expires(client: Client, dana: User) -> None:
    status, key = await call(client, "POST", KEYS, as_user(dana))
    assert status == 200 and key["expiresAt"] is None and key["active"] is True


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"expiresInDays": 0}, ["expiresInDays"]),
        ({"expiresInDays": 3651}, ["expiresInDays"]),
        ({"expiresInDays": "30"}, ["expiresInDays"]),
        ({"expiresInDays": 1.5}, ["expiresInDays"]),
        ({"expiresInDays": True}, ["expiresInDays"]),
        ({"expiresAt": "2020-01-01T00:00:00Z"}, ["expiresAt"]),
        ({"expiresAt": "2999-01-01T00:00:00Z"}, ["expiresAt"]),
        ({"expiresAt": "2030-01-01T00:00:00"}, ["expiresAt"]),  # no offset: whose midnight?
        ({"expiresAt": "tomorrow"}, ["expiresAt"]),
        ({"expiresAt": 1_900_000_000}, ["expiresAt"]),
        ({"expiresInDays": 3, "expiresAt": "2030-01-01T00:00:00Z"}, ["expiresAt"]),
        ({"expires": 3, "expiresInDays": 0}, ["expires", "expiresInDays"]),
    ],
)
async def test_bad_expiries_are_400_naming_each_field(
    client: Client, store: AccountStore, dana: User, body: dict[str, Any], named: list[str]
) -> None:
    status, problem = await call(client, "POST", KEYS, as_user(dana), body)
    assert status == 400
    assert [part.split(":")[0] for part in problem["detail"].split("; ")] == named
    assert store.api_keys_of_user(dana.id) == []


async def test_an_expired_key_gives_no_token(client: Client, store: AccountStore, dana: User) -> None:
    _, key = store.add_api_key_for(dana.id, expires_at=int(time.time()) - 1)
    response = await login(client, {"apikey": key}, path="/v1/authenticate/apikey", accept=LEGACY)
    assert response.status == 401
    assert "expired" in (await response.json())["details"][0]["message"]
    listed = (await call(client, "GET", KEYS, as_user(dana)))[1]["apiKeys"]
    assert listed[0]["active"] is False and listed[0]["revokedAt"] is None


async def test_no_token_outlives_its_key(client: Client, store: AccountStore, dana: User) -> None:
    _, key = store.add_api_key_for(dana.id, expires_at=int(time.time()) + 600)
    response = await login(client, {"apikey": key, "duration": 30 * DAY}, path="/v1/authenticate/apikey")
    assert response.status == 200
    assert 590 <= (await response.json())["expiresIn"] <= 600


async def test_the_console_command_makes_expiring_keys(tmp_path: Path, database_url: str, dana: User) -> None:
    console = Console(tmp_path, database_url)
    made = console("add-apikey", dana.email, "--expires-in-days", "7")
    assert made.returncode == 0 and "expires" in made.stderr
    listing = console("list-apikeys", dana.email).stdout
    assert listing.splitlines()[0].split() == ["id", "prefix", "created", "revoked", "expires"]
    assert console("add-apikey", dana.email, "--expires-in-days", "0").returncode == 1


# ---------------------------------------------------------------- databases made before expiries

OLD_KEYS = (
    "CREATE TABLE api_keys (id {id}, user_id BIGINT NOT NULL REFERENCES users(id), prefix TEXT NOT NULL, "
    "key_hash TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL, revoked_at BIGINT)"
)
OLD_KEY = "INSERT INTO api_keys (user_id, prefix, key_hash, created_at) VALUES (1, 'abcdef01', '{hash}', 1)"


def assert_old_key_still_works(store: AccountStore) -> None:
    try:
        old = store.find_api_key("abcdef01-0000-4000-8000-000000000000")
        assert old is not None and old.expires_at is None and old.usable(int(time.time()))
        new, _ = store.add_api_key_for(old.user_id, expires_at=int(time.time()) + DAY)
        assert new.expires_at is not None
    finally:
        store.close()


def old_key_hash() -> str:
    return hash_api_key("abcdef01-0000-4000-8000-000000000000")


def test_a_sqlite_database_from_before_expiries_gets_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.execute(OLD_USERS_SQLITE)
    db.execute(OLD_USER)
    db.execute(OLD_KEYS.format(id="INTEGER PRIMARY KEY AUTOINCREMENT"))
    db.execute(OLD_KEY.format(hash=old_key_hash()))
    db.commit()
    db.close()
    assert_old_key_still_works(AccountStore(SqliteDatabase(path)))


def test_a_postgresql_database_from_before_expiries_gets_the_column(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.new_database()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(OLD_USERS_POSTGRES)
        connection.execute(OLD_USER)
        connection.execute(OLD_KEYS.format(id="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"))
        connection.execute(OLD_KEY.format(hash=old_key_hash()))
    try:
        assert_old_key_still_works(open_store(make_config(tmp_path, database_url=url)))
    finally:
        postgres_server.drop_database(url)


def test_the_spec_documents_the_codes_limits() -> None:
    operation = openapi_spec()["paths"]["/v1/account/apikeys"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["properties"]["expiresInDays"]["maximum"] == MAX_API_KEY_DAYS
    assert f"at most {AuthConfig.max_api_keys_per_account} active keys" in operation["description"]
    login = openapi_spec()["paths"]["/v1/authenticate"]["post"]["description"]
    defaults = (AuthConfig.login_free_failures, AuthConfig.login_backoff_max_seconds)
    assert f"after {defaults[0]} failures" in login and f"up to {defaults[1]} s" in login
