"""The account console, run as the operator runs it: a subprocess on a fresh data directory,
with the accounts in SQLite there or in a fresh PostgreSQL database (DATABASE_URL)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import jwt
import pytest
import redis

from auth_service.accounts import AccountStore, open_store
from auth_service.config import AuthConfig
from auth_service.console import DEMO_EMAIL, ensure_demo_user, read_demo_credentials
from auth_service.keys import KeyRing
from auth_service.passwords import passwords_for
from common.config import REPO_ROOT
from tests.auth_service.helpers import UNREACHABLE_REDIS, make_config


class Console:
    def __init__(self, data_dir: Path, database_url: str, redis_url: str = UNREACHABLE_REDIS) -> None:
        self.config = make_config(data_dir, redis_url=redis_url, database_url=database_url)
        self.env = {
            **os.environ,
            "DATA_DIR": str(data_dir),
            "REDIS_URL": redis_url,
            "ARGON2_TIME_COST": "1",
            "ARGON2_MEMORY_KIB": "8",
            "ARGON2_PARALLELISM": "1",
            "DATABASE_URL": database_url,
        }
        self.env.pop("AUTH_DB_PATH", None)

    def __call__(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "auth_service.console", *args],
            cwd=REPO_ROOT,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
            # No controlling terminal, so getpass reads the password from stdin.
            start_new_session=True,
        )

    def store(self) -> AccountStore:
        return open_store(self.config)


@pytest.fixture
def console(tmp_path: Path, database_url: str) -> Console:
    return Console(tmp_path, database_url)


def assert_fails(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, result
    assert result.stderr.splitlines()[-1].startswith("error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_add_user_then_list_users(console: Console) -> None:
    result = console("add-user", "nina@example.com", "--password", "long enough", "--tier", "unlimited")
    assert result.returncode == 0, result.stderr
    assert console("add-apikey", "nina@example.com").returncode == 0
    listing = console("list-users").stdout.splitlines()
    assert listing[0].split() == ["id", "email", "tier", "disabled", "keys", "created", "role"]
    assert listing[1].split()[:5] == ["1", "nina@example.com", "unlimited", "no", "1"]
    store = console.store()
    try:
        user = store.user("nina@example.com")
        assert passwords_for(console.config).verify(user.password_hash, "long enough")
    finally:
        store.close()


def test_add_user_asks_for_the_password_twice(console: Console) -> None:
    assert console("add-user", "olga@example.com", stdin="long enough\nlong enough\n").returncode == 0
    assert_fails(console("add-user", "pat@example.com", stdin="long enough\ndifferent\n"), "the two passwords differ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add-user", "not-an-email", "--password", "long enough"), "is not an e-mail address"),
        (("add-user", "quinn@example.com", "--password", "short"), "at least 8 characters"),
        (("add-apikey", "nobody@example.com"), "no user with the e-mail"),
        (("disable-user", "nobody@example.com"), "no user with the e-mail"),
        (("revoke-apikey", "12345678"), "no active API key starts with"),
        (("demo-token", "--duration", "86401"), "between 1 and 86400"),
    ],
)
def test_friendly_errors(console: Console, args: tuple[str, ...], message: str) -> None:
    assert_fails(console(*args), message)


def test_duplicate_user_is_refused(console: Console) -> None:
    assert console("add-user", "rita@example.com", "--password", "long enough").returncode == 0
    assert_fails(console("add-user", "RITA@example.com", "--password", "long enough"), "exists already")


def test_api_key_is_printed_once_and_revoked_by_prefix(console: Console) -> None:
    console("add-user", "sam@example.com", "--password", "long enough")
    key = console("add-apikey", "sam@example.com").stdout.strip()
    assert len(key) == 36
    revoked = console("revoke-apikey", key[:8])
    assert revoked.returncode == 0
    assert "revoked" in revoked.stdout
    assert "Redis" in revoked.stderr  # unreachable here: says so, still succeeds
    store = console.store()
    try:
        assert store.find_api_key(key).revoked_at is not None  # type: ignore[union-attr]
    finally:
        store.close()
    assert_fails(console("revoke-apikey", key[:8]), "no active API key")


def test_ambiguous_prefix_is_refused(console: Console) -> None:
    console("add-user", "tom@example.com", "--password", "long enough")
    store = console.store()
    try:
        for key_hash in ("1" * 64, "2" * 64):
            store.db.execute(
                "INSERT INTO api_keys (user_id, prefix, key_hash, created_at) VALUES (1, 'feedbeef', ?, 0)", (key_hash,)
            )
    finally:
        store.close()
    assert_fails(console("revoke-apikey", "feed"), "2 active API keys start with 'feed'")


def test_disable_and_enable_user_publish_to_redis(tmp_path: Path, database_url: str, redis_server: str) -> None:
    console = Console(tmp_path, database_url, redis_server)
    console("add-user", "uma@example.com", "--password", "long enough")
    client = redis.Redis.from_url(redis_server)
    client.delete("revoked:sub:user:1")
    result = console("disable-user", "uma@example.com")
    assert result.returncode == 0, result.stderr
    assert "published" in result.stdout
    assert client.get("revoked:sub:user:1") is not None
    assert "yes" in console("list-users").stdout.splitlines()[1].split()
    assert console("enable-user", "uma@example.com").returncode == 0
    assert "no" in console("list-users").stdout.splitlines()[1].split()
    client.close()


def test_demo_token_verifies_with_the_published_key(console: Console) -> None:
    result = console("demo-token", "--duration", "900")
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    store = console.store()
    try:
        keyring = KeyRing(store)
        keyring.refresh()
        claims = jwt.decode(token, keyring.active.public_key, algorithms=["EdDSA"], audience="routing-api")
    finally:
        store.close()
    assert claims["sub"].startswith("demo:")
    assert claims["tier"] == "demo"
    assert claims["exp"] - claims["iat"] == 900


def test_rotate_key_adds_a_published_key(console: Console) -> None:
    first = jwt.get_unverified_header(console("demo-token").stdout.strip())["kid"]
    result = console("rotate-key")
    assert result.returncode == 0
    second = jwt.get_unverified_header(console("demo-token").stdout.strip())["kid"]
    assert first != second
    assert second in result.stdout
    store = console.store()
    try:
        assert {k.kid for k in store.signing_keys()} == {first, second}
    finally:
        store.close()


def test_no_command_is_a_usage_error(console: Console) -> None:
    result = console()
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_ensure_demo_user_creates_once_and_keeps_the_password(config: AuthConfig) -> None:
    email, password = ensure_demo_user(config)
    assert email == DEMO_EMAIL and password
    assert ensure_demo_user(config) == (DEMO_EMAIL, None)
    assert read_demo_credentials(config) == (DEMO_EMAIL, password)
    assert stat.S_IMODE(config.demo_credentials_path.stat().st_mode) == 0o600
    store = open_store(config)
    try:
        assert passwords_for(config).verify(store.user(DEMO_EMAIL).password_hash, password)
    finally:
        store.close()


def test_admins_are_made_by_add_user_admin_or_set_role(console: Console) -> None:
    result = console("add-user", "ada@example.com", "--password", "long enough", "--admin")
    assert result.returncode == 0 and "role admin" in result.stdout, result.stderr
    console("add-user", "bea@example.com", "--password", "long enough")
    assert console("set-role", "bea@example.com", "admin").returncode == 0
    assert console("set-role", "ada@example.com", "user").returncode == 0
    rows = [line.split() for line in console("list-users").stdout.splitlines()[1:]]
    assert [(row[1], row[-1]) for row in rows] == [("ada@example.com", "user"), ("bea@example.com", "admin")]
    assert_fails(console("set-role", "nobody@example.com", "admin"), "no user with the e-mail nobody@example.com")
    assert console("set-role", "bea@example.com", "root").returncode == 2  # not a choice: usage error


def test_set_tier_changes_the_tier_and_revokes_earlier_tokens(console: Console) -> None:
    console("add-user", "cy@example.com", "--password", "long enough")
    result = console("set-tier", "cy@example.com", "unlimited")
    assert result.returncode == 0, result.stderr
    assert "unlimited" in result.stdout and "revoked" in result.stdout
    assert "Redis" in result.stderr  # unreachable here: recorded, published later
    store = console.store()
    try:
        user = store.user("cy@example.com")
        assert user.tier == "unlimited" and store.latest_revocation("sub", user.subject) is not None
    finally:
        store.close()


def test_add_user_refuses_control_characters(console: Console) -> None:
    assert_fails(console("add-user", "eve@example.com\x1b[2J", "--password", "long enough"), "not an e-mail address")


def test_an_unreachable_database_is_one_line_without_the_password(tmp_path: Path) -> None:
    console = Console(tmp_path, "postgresql://accounts:hunter2secret@127.0.0.1:1/accounts")
    result = console("list-users")
    assert_fails(result, "cannot open the accounts database postgresql://accounts:***@127.0.0.1:1/accounts")
    assert "hunter2secret" not in result.stderr
