"""The accounts database: persistence, file modes, API key storage and revocation records, on
SQLite and PostgreSQL (the `config` fixture); file modes and WAL are SQLite's own."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from auth_service.accounts import AccountError, AccountStore, open_store
from auth_service.app import create_app
from auth_service.config import AuthConfig
from auth_service.database import StoreError, location
from auth_service.keys import KeyRing, ensure_signing_key
from tests.auth_service.helpers import Client, ClientFactory, add_user, login, make_config


def test_accounts_and_keys_survive_reopening(config: AuthConfig) -> None:
    store = open_store(config)
    add_user(config, store, "dave@example.com")
    _, key = store.add_api_key("dave@example.com")
    ensure_signing_key(store)
    kid = store.signing_keys()[0].kid
    store.close()

    reopened = open_store(config)
    try:
        assert reopened.user("dave@example.com").tier == "standard"
        assert reopened.find_api_key(key) is not None
        assert [k.kid for k in reopened.signing_keys()] == [kid]
    finally:
        reopened.close()


async def test_restarted_service_keeps_users_and_signing_key(aiohttp_client: ClientFactory, config: AuthConfig) -> None:
    first = await aiohttp_client(create_app(config))
    jwks_before = await (await first.get("/.well-known/jwks.json")).json()
    await first.close()
    store = open_store(config)
    add_user(config, store, "erin@example.com")
    store.close()

    second: Client = await aiohttp_client(create_app(config))
    assert await (await second.get("/.well-known/jwks.json")).json() == jwks_before
    assert (await login(second, {"user": "erin@example.com", "password": "correct horse battery"})).status == 200


def test_database_file_and_directory_are_private(tmp_path: Path) -> None:
    config = make_config(tmp_path, db_path=tmp_path / "nested" / "dir" / "accounts.db")
    open_store(config).close()
    assert stat.S_IMODE(config.accounts_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.accounts_path.parent.stat().st_mode) == 0o700


def test_database_uses_wal(tmp_path: Path) -> None:
    store = open_store(make_config(tmp_path))
    try:
        assert store.db.execute("PRAGMA journal_mode") == [{"journal_mode": "wal"}]
    finally:
        store.close()


def test_default_path_is_under_the_data_dir(tmp_path: Path) -> None:
    assert make_config(tmp_path).accounts_path == tmp_path / "auth" / "accounts.sqlite3"


def test_db_path_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTH_DB_PATH", str(tmp_path / "elsewhere.sqlite3"))
    monkeypatch.setenv("DEFAULT_TOKEN_SECONDS", "120")
    config = AuthConfig.from_env("auth_service")
    assert config.accounts_path == tmp_path / "elsewhere.sqlite3"
    assert config.default_token_seconds == 120
    assert config.port == 8081


def test_e_mail_is_unique_ignoring_case(config: AuthConfig, store: AccountStore) -> None:
    add_user(config, store, "Frank@example.com")
    with pytest.raises(AccountError, match="exists already"):
        add_user(config, store, "frank@EXAMPLE.com")


@pytest.mark.parametrize("email", ["frank", "frank@", "@example.com", "fr ank@example.com", "frank@example"])
def test_e_mail_shape_is_checked(config: AuthConfig, store: AccountStore, email: str) -> None:
    with pytest.raises(AccountError, match="not an e-mail address"):
        add_user(config, store, email)


def test_api_key_is_stored_only_as_its_hash(config: AuthConfig, store: AccountStore) -> None:
    add_user(config, store, "gina@example.com")
    row, key = store.add_api_key("gina@example.com")
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert row.prefix == key[:8]
    assert key not in dump(store)


def test_revoking_records_a_revocation(config: AuthConfig, store: AccountStore) -> None:
    add_user(config, store, "hank@example.com")
    row, key = store.add_api_key("hank@example.com")
    _, revocation = store.revoke_api_key(key)
    assert (revocation.kind, revocation.subject) == ("akid", str(row.id))
    assert revocation.redis_key == f"revoked:akid:{row.id}"
    assert store.revocations_since(0) == [revocation]
    assert store.find_api_key(key).revoked_at is not None  # type: ignore[union-attr]


def test_ambiguous_and_unknown_prefixes_are_refused(config: AuthConfig, store: AccountStore) -> None:
    user = add_user(config, store, "ivy@example.com")
    for key_hash in ("a" * 64, "b" * 64):
        store.db.execute(
            "INSERT INTO api_keys (user_id, prefix, key_hash, created_at) VALUES (?, 'abcd1234', ?, 0)",
            (user.id, key_hash),
        )
    with pytest.raises(AccountError, match="2 active API keys start with"):
        store.revoke_api_key("abcd")
    with pytest.raises(AccountError, match="no active API key"):
        store.revoke_api_key("ffff")
    with pytest.raises(AccountError, match="not the start of an API key"):
        store.revoke_api_key("zz%")


def test_disabling_records_the_subject_revocation(config: AuthConfig, store: AccountStore) -> None:
    user = add_user(config, store, "jack@example.com")
    revocation = store.disable_user("jack@example.com")
    assert revocation.redis_key == f"revoked:sub:user:{user.id}"
    assert store.user("jack@example.com").disabled


def test_two_stores_make_only_one_first_key(config: AuthConfig) -> None:
    first, second = open_store(config), open_store(config)
    try:
        ensure_signing_key(first)
        ensure_signing_key(second)
        keyring = KeyRing(second)
        keyring.refresh()
        assert len(keyring.published) == 1
    finally:
        first.close()
        second.close()


def dump(store: AccountStore) -> str:
    """Every value of every table, as text."""
    tables = ("users", "api_keys", "signing_keys", "revocations")
    return "\n".join(str(row) for table in tables for row in store.db.execute(f"SELECT * FROM {table}"))  # noqa: S608


def test_database_url_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://accounts:secret@db.internal:5432/accounts")
    monkeypatch.setenv("DATABASE_POOL_SIZE", "8")
    config = AuthConfig.from_env("auth_service")
    assert (config.database_url, config.database_pool_size) == ("postgresql://accounts:secret@db.internal:5432/accounts", 8)
    assert location(config) == "postgresql://accounts:***@db.internal:5432/accounts"


def test_a_database_url_that_is_not_postgresql_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "mysql://db/accounts")
    with pytest.raises(SystemExit, match="DATABASE_URL must start with postgresql://"):
        AuthConfig.from_env("auth_service")


def test_an_unreachable_postgresql_is_a_store_error(tmp_path: Path) -> None:
    # Nothing listens on port 1: refused at once.
    config = make_config(tmp_path, database_url="postgresql://accounts:secret@127.0.0.1:1/accounts")
    with pytest.raises(StoreError) as caught:
        open_store(config)
    assert "secret" not in str(caught.value)
