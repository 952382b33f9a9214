"""The account console's endpoints (`/v1/account…`, `/v1/admin/users…`) as the gateway calls
them: the caller's identity in the internal headers. Who may call what, every bad input as a
clear 4xx in both error formats, and the effects on logins and tokens."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from auth_service.accounts import AccountStore, User, open_store
from auth_service.config import AuthConfig
from auth_service.database import SqliteDatabase
from common.internal_auth import INTERNAL_API_KEY_HEADER, INTERNAL_ISSUED_AT_HEADER, INTERNAL_SUBJECT_HEADER
from tests.auth_service.helpers import PASSWORD, Client, add_user, jwks_keys, login, make_config, verify
from tests.postgres_server import PostgresServer

LEGACY = "application/json"
BOTH = "application/json, application/problem+json"
NEW_PASSWORD = "a brand new passphrase"


def as_user(user: User | None, *, issued_at: int | None = None, api_key_id: str | None = None,
            accept: str = BOTH, subject: str | None = None) -> dict[str, str]:  # fmt: skip
    """The headers the gateway sets for a token of `user` (issued now unless told)."""
    headers = {"Accept": accept}
    if user is not None or subject is not None:
        headers[INTERNAL_SUBJECT_HEADER] = subject or (user.subject if user else "")
        headers[INTERNAL_ISSUED_AT_HEADER] = str(issued_at if issued_at is not None else int(time.time()) + 1)
    if api_key_id is not None:
        headers[INTERNAL_API_KEY_HEADER] = api_key_id
    return headers


async def call(client: Client, method: str, path: str, headers: dict[str, str], body: Any = None) -> tuple[int, Any]:
    kwargs: dict[str, Any] = {} if body is None else {"json": body}
    response = await client.request(method, path, headers=headers, **kwargs)
    return response.status, await response.json()


def codes(body: dict[str, Any]) -> list[str]:
    return [d["code"] for d in body["details"]]


def fields(body: dict[str, Any]) -> list[str]:
    """The fields a problem detail names, in order."""
    return [part.split(":")[0] for part in body["detail"].split("; ")]


@pytest.fixture
def alice(config: AuthConfig, store: AccountStore) -> User:
    return add_user(config, store, "alice@example.com")


@pytest.fixture
def bob(config: AuthConfig, store: AccountStore) -> User:
    return add_user(config, store, "bob@example.com")


@pytest.fixture
def admin(config: AuthConfig, store: AccountStore) -> User:
    user = add_user(config, store, "root@example.com", tier="unlimited")
    return store.set_role(user.id, "admin")


# ---------------------------------------------------------------- who may call


async def test_the_account_of_the_caller(client: Client, alice: User) -> None:
    response = await client.get("/v1/account", headers=as_user(alice))
    assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
    body = await response.json()
    assert body == {
        "id": alice.id,
        "email": "alice@example.com",
        "tier": "standard",
        "role": "user",
        "disabled": False,
        "createdAt": body["createdAt"],
    }
    assert body["createdAt"].endswith("Z")


@pytest.mark.parametrize(
    ("headers", "status", "code", "words"),
    [
        ({}, 401, "ERROR_UNAUTHORIZED", "no caller"),
        ({INTERNAL_SUBJECT_HEADER: "demo:1f0a"}, 403, "ERROR_FORBIDDEN", "demo token"),
        ({INTERNAL_SUBJECT_HEADER: "user:abc"}, 401, "ERROR_UNAUTHORIZED", "no longer exists"),
        ({INTERNAL_SUBJECT_HEADER: "user:99999"}, 401, "ERROR_UNAUTHORIZED", "no longer exists"),
        ({INTERNAL_SUBJECT_HEADER: "user:1", INTERNAL_API_KEY_HEADER: "4"}, 403, "ERROR_FORBIDDEN", "API key"),
    ],
)
@pytest.mark.usefixtures("alice")
async def test_callers_without_a_password_session_are_refused(
    client: Client, headers: dict[str, str], status: int, code: str, words: str
) -> None:
    for path in ("/v1/account", "/v1/account/apikeys", "/v1/admin/users"):
        got, body = await call(client, "GET", path, {"Accept": LEGACY, **headers})
        assert got == status and codes(body) == [code] and words in body["errors"][0], path
    got, body = await call(client, "POST", "/v1/account/apikeys", {"Accept": BOTH, **headers})
    assert got == status and words in body["detail"]


async def test_disabled_accounts_and_revoked_tokens_are_401(client: Client, store: AccountStore, alice: User) -> None:
    before = int(time.time()) - 5
    revocation = store.change_password(alice.id, alice.password_hash)
    status, body = await call(client, "GET", "/v1/account", as_user(alice, issued_at=revocation.revoked_at))
    assert status == 401 and "revoked" in body["detail"]
    assert (await call(client, "GET", "/v1/account", as_user(alice, issued_at=before)))[0] == 401
    assert (await call(client, "GET", "/v1/account", as_user(alice)))[0] == 200
    store.disable_user_id(alice.id)
    status, body = await call(client, "GET", "/v1/account", as_user(alice, issued_at=int(time.time()) + 5))
    assert status == 401 and "disabled" in body["detail"]


@pytest.mark.usefixtures("admin")
async def test_administration_needs_the_admin_role(client: Client, alice: User, bob: User) -> None:
    requests = [
        ("GET", "/v1/admin/users", None),
        ("POST", "/v1/admin/users", {"email": "eve@example.com", "password": PASSWORD}),
        ("PATCH", f"/v1/admin/users/{bob.id}", {"tier": "unlimited"}),
        ("PATCH", f"/v1/admin/users/{alice.id}", {"role": "admin"}),
    ]
    for method, path, body in requests:
        status, answer = await call(client, method, path, as_user(alice, accept=LEGACY), body)
        assert status == 403 and codes(answer) == ["ERROR_FORBIDDEN"], path
        status, answer = await call(client, method, path, as_user(alice), body)
        assert status == 403 and answer["type"] == "/problems/general/forbidden"
        assert "administrator" in answer["detail"]


# ---------------------------------------------------------------- API keys


async def test_a_key_is_shown_once_listed_by_prefix_and_revoked(client: Client, alice: User) -> None:
    status, made = await call(client, "POST", "/v1/account/apikeys", as_user(alice))
    assert status == 200 and made["active"] is True and made["revokedAt"] is None
    assert made["prefix"] == made["apikey"][:8] and len(made["apikey"]) == 36
    token = await login(client, {"apikey": made["apikey"]}, path="/v1/authenticate/apikey")
    assert token.status == 200

    status, listed = await call(client, "GET", "/v1/account/apikeys", as_user(alice))
    assert status == 200 and [k["id"] for k in listed["apiKeys"]] == [made["id"]]
    assert "apikey" not in listed["apiKeys"][0] and made["apikey"] not in str(listed)

    status, revoked = await call(client, "DELETE", f"/v1/account/apikeys/{made['id']}", as_user(alice))
    assert status == 200 and revoked["active"] is False and revoked["revokedAt"].endswith("Z")
    again = await login(client, {"apikey": made["apikey"]}, path="/v1/authenticate/apikey")
    assert again.status == 401
    # Revoking twice answers the key unchanged.
    status, twice = await call(client, "DELETE", f"/v1/account/apikeys/{made['id']}", as_user(alice))
    assert status == 200 and twice == revoked


async def test_another_users_key_is_404_like_an_unknown_one(client: Client, alice: User, bob: User) -> None:
    _, made = await call(client, "POST", "/v1/account/apikeys", as_user(bob))
    for key_id in (made["id"], 424242):
        status, body = await call(client, "DELETE", f"/v1/account/apikeys/{key_id}", as_user(alice, accept=LEGACY))
        assert status == 404 and codes(body) == ["ERROR_NOT_FOUND"]
        assert body["errors"] == [f"keyId: you have no API key with id {key_id}"]
    status, body = await call(client, "DELETE", f"/v1/account/apikeys/{made['id']}", as_user(alice))
    assert status == 404 and body["type"] == "/problems/general/not-found"
    assert (await login(client, {"apikey": made["apikey"]}, path="/v1/authenticate/apikey")).status == 200


@pytest.mark.parametrize("key_id", ["abc", "0", "-1", "1e3", "1.5", "99999999999999999999999", "%C3%A9", "%20"])
async def test_key_ids_must_be_positive_integers(client: Client, alice: User, key_id: str) -> None:
    status, body = await call(client, "DELETE", f"/v1/account/apikeys/{key_id}", as_user(alice, accept=LEGACY))
    assert status == 400 and codes(body) == ["ERROR_INVALID_PARAMETER"]
    assert body["errors"][0].startswith("keyId: must be a positive integer")


async def test_a_disabled_account_makes_no_key_and_its_tokens_cannot_ask(
    client: Client, store: AccountStore, alice: User
) -> None:
    store.disable_user_id(alice.id)
    status, _ = await call(client, "POST", "/v1/account/apikeys", as_user(alice, issued_at=int(time.time()) + 5))
    assert status == 401
    assert store.api_keys_of_user(alice.id) == []


# ---------------------------------------------------------------- the password


async def test_changing_the_password_revokes_earlier_tokens_and_gives_a_new_one(
    client: Client, config: AuthConfig, store: AccountStore, alice: User
) -> None:
    issued = int(time.time())
    body = {"currentPassword": PASSWORD, "newPassword": NEW_PASSWORD, "duration": 900}
    response = await client.post("/v1/account/password", json=body, headers=as_user(alice, issued_at=issued))
    assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
    answer = await response.json()
    claims = verify(answer["token"], await jwks_keys(client), config)
    assert claims["sub"] == alice.subject and claims["exp"] - claims["iat"] == 900
    revoked_at = store.latest_revocation("sub", alice.subject)
    assert revoked_at is not None and issued <= revoked_at < claims["iat"]
    # The earlier token is refused, the new one works; the old password no longer logs in.
    assert (await call(client, "GET", "/v1/account", as_user(alice, issued_at=issued)))[0] == 401
    assert (await call(client, "GET", "/v1/account", as_user(alice, issued_at=claims["iat"])))[0] == 200
    assert (await login(client, {"user": "alice@example.com", "password": PASSWORD})).status == 401
    assert (await login(client, {"user": "alice@example.com", "password": NEW_PASSWORD})).status == 200


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, ["currentPassword", "newPassword"]),
        ({"currentPassword": "wrong password", "newPassword": NEW_PASSWORD}, ["currentPassword"]),
        ({"currentPassword": PASSWORD, "newPassword": "short"}, ["newPassword"]),
        ({"currentPassword": PASSWORD, "newPassword": PASSWORD}, ["newPassword"]),
        ({"currentPassword": PASSWORD, "newPassword": "        "}, ["newPassword"]),
        ({"currentPassword": 7, "newPassword": ["x"], "duration": 0}, ["currentPassword", "newPassword", "duration"]),
        ({"currentPassword": PASSWORD, "newPassword": "x" * 5000}, ["newPassword"]),
    ],
)
async def test_bad_password_changes_name_every_field(
    client: Client, store: AccountStore, alice: User, body: dict[str, Any], named: list[str]
) -> None:
    status, answer = await call(client, "POST", "/v1/account/password", as_user(alice), body)
    assert status == 400 and answer["type"] == "/problems/general/invalid-parameter/"
    assert fields(answer) == named
    status, legacy = await call(client, "POST", "/v1/account/password", as_user(alice, accept=LEGACY), body)
    assert status == 400 and set(codes(legacy)) == {"ERROR_INVALID_PARAMETER"}
    assert store.latest_revocation("sub", alice.subject) is None


@pytest.mark.parametrize(
    ("data", "content_type", "status", "code"),
    [
        (b"{not json", "application/json", 400, "ERROR_MALFORMED_BODY"),
        (b"[]", "application/json", 400, "ERROR_MALFORMED_BODY"),
        (b'{"currentPassword": "x"}', "text/plain", 415, "ERROR_UNSUPPORTED_MEDIA_TYPE"),
    ],
)
async def test_unreadable_bodies_are_4xx(
    client: Client, alice: User, admin: User, data: bytes, content_type: str, status: int, code: str
) -> None:
    for user, method, path in [
        (alice, "POST", "/v1/account/password"),
        (admin, "POST", "/v1/admin/users"),
        (admin, "PATCH", f"/v1/admin/users/{alice.id}"),
    ]:
        headers = {**as_user(user, accept=LEGACY), "Content-Type": content_type}
        response = await client.request(method, path, data=data, headers=headers)
        assert response.status == status, path
        assert codes(await response.json()) == [code]


# ---------------------------------------------------------------- administrators


async def test_an_admin_creates_a_user_who_can_log_in(client: Client, admin: User) -> None:
    body = {"email": " Grace@Example.com ", "password": "a long passphrase", "tier": "demo"}
    status, user = await call(client, "POST", "/v1/admin/users", as_user(admin), body)
    assert status == 200 and user["email"] == "Grace@Example.com" and user["tier"] == "demo"
    assert user["role"] == "user" and user["disabled"] is False
    assert (await login(client, {"user": "grace@example.com", "password": "a long passphrase"})).status == 200
    status, listed = await call(client, "GET", "/v1/admin/users", as_user(admin))
    assert status == 200 and [u["email"] for u in listed["users"]] == ["root@example.com", "Grace@Example.com"]
    assert listed["users"][0]["role"] == "admin" and listed["users"][1]["activeApiKeys"] == 0
    status, again = await call(client, "POST", "/v1/admin/users", as_user(admin, accept=LEGACY), body)
    assert status == 409 and codes(again) == ["ERROR_CONFLICT"] and again["errors"][0].startswith("email: ")


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, ["email", "password"]),
        ({"email": "not-an-address", "password": "short", "tier": "gold", "role": "root"},
         ["tier", "role", "email", "password"]),
        ({"email": "x" * 400 + "@example.com", "password": PASSWORD}, ["email"]),
        ({"email": {"$ne": None}, "password": PASSWORD, "tier": {"$gt": ""}}, ["email", "tier"]),
        ({"email": "eve@example.com", "password": PASSWORD, "role": None}, ["role"]),
        ({"email": "eve@example.com'; DROP TABLE users; --", "password": PASSWORD}, ["email"]),
        ({"email": "eve@example.com\u0000", "password": PASSWORD}, ["email"]),
    ],
)
async def test_bad_new_users_name_every_field(
    client: Client, store: AccountStore, admin: User, body: dict[str, Any], named: list[str]
) -> None:
    status, answer = await call(client, "POST", "/v1/admin/users", as_user(admin), body)
    assert status == 400 and fields(answer) == named, answer
    status, legacy = await call(client, "POST", "/v1/admin/users", as_user(admin, accept=LEGACY), body)
    assert status == 400 and len(legacy["details"]) == len(named)
    assert [u.email for u in store.list_users()] == ["root@example.com"]


async def test_a_new_tier_revokes_the_users_earlier_tokens(
    client: Client, config: AuthConfig, store: AccountStore, admin: User, bob: User
) -> None:
    issued = int(time.time())
    status, user = await call(client, "PATCH", f"/v1/admin/users/{bob.id}", as_user(admin), {"tier": "unlimited"})
    assert status == 200 and user["tier"] == "unlimited" and user["email"] == "bob@example.com"
    assert store.latest_revocation("sub", bob.subject) is not None
    assert (await call(client, "GET", "/v1/account", as_user(bob, issued_at=issued)))[0] == 401
    token = await (await login(client, {"user": "bob@example.com", "password": PASSWORD})).json()
    assert verify(token["token"], await jwks_keys(client), config)["tier"] == "unlimited"


async def test_disable_enable_and_roles(client: Client, store: AccountStore, admin: User, bob: User) -> None:
    path = f"/v1/admin/users/{bob.id}"
    status, user = await call(client, "PATCH", path, as_user(admin), {"disabled": True})
    assert status == 200 and user["disabled"] is True
    assert (await login(client, {"user": "bob@example.com", "password": PASSWORD})).status == 401
    status, user = await call(client, "PATCH", path, as_user(admin), {"disabled": False, "role": "admin"})
    assert status == 200 and user["disabled"] is False and user["role"] == "admin"
    assert (await login(client, {"user": "bob@example.com", "password": PASSWORD})).status == 200
    assert store.user_by_id(bob.id).is_admin


@pytest.mark.parametrize(
    ("path", "body", "status", "named"),
    [
        ("/v1/admin/users/{admin}", {"disabled": True}, 400, ["disabled"]),
        ("/v1/admin/users/{admin}", {"role": "user", "disabled": True}, 400, ["disabled", "role"]),
        ("/v1/admin/users/{bob}", {}, 400, [""]),
        ("/v1/admin/users/{bob}", {"email": "x@y.zz", "tier": "gold"}, 400, ["email", "tier"]),
        ("/v1/admin/users/{bob}", {"disabled": "yes"}, 400, ["disabled"]),
        ("/v1/admin/users/{bob}", {"disabled": None, "role": 1}, 400, ["disabled", "role"]),
        ("/v1/admin/users/123456", {"tier": "demo"}, 404, ["userId"]),
        ("/v1/admin/users/bob", {"tier": "demo"}, 400, ["userId"]),
        ("/v1/admin/users/0", {"tier": "demo"}, 400, ["userId"]),
    ],
)
async def test_bad_user_changes(
    client: Client, store: AccountStore, admin: User, bob: User, path: str, body: Any, status: int, named: list[str]
) -> None:
    url = path.format(admin=admin.id, bob=bob.id)
    got, answer = await call(client, "PATCH", url, as_user(admin), body)
    assert got == status, answer
    assert [f if ":" in answer["detail"] else "" for f in fields(answer)] == named
    got, legacy = await call(client, "PATCH", url, as_user(admin, accept=LEGACY), body)
    assert got == status and len(legacy["details"]) == len(named)
    assert store.user_by_id(bob.id).tier == "standard" and not store.user_by_id(admin.id).disabled


# ---------------------------------------------------------------- the store


OLD_USERS_SQLITE = (
    "CREATE TABLE users (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL UNIQUE COLLATE NOCASE, "
    "password_hash TEXT NOT NULL, tier TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL)"
)
OLD_USERS_POSTGRES = (
    "CREATE TABLE users (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, email TEXT NOT NULL, "
    "password_hash TEXT NOT NULL, tier TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0, created_at BIGINT NOT NULL)"
)
OLD_USER = "INSERT INTO users (email, password_hash, tier, created_at) VALUES ('old@example.com', 'h', 'demo', 1)"


def assert_old_user_gets_a_role(store: AccountStore) -> None:
    try:
        assert store.user("old@example.com").role == "user"
        assert store.set_role(store.user("old@example.com").id, "admin").is_admin
    finally:
        store.close()


def test_a_database_from_before_roles_gets_the_role_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.execute(OLD_USERS_SQLITE)
    db.execute(OLD_USER)
    db.commit()
    db.close()
    assert_old_user_gets_a_role(AccountStore(SqliteDatabase(path)))


def test_a_postgresql_database_from_before_roles_gets_the_role_column(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.new_database()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(OLD_USERS_POSTGRES)
        connection.execute(OLD_USER)
    try:
        assert_old_user_gets_a_role(open_store(make_config(tmp_path, database_url=url)))
    finally:
        postgres_server.drop_database(url)
