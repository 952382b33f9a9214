"""POST /v1/authenticate: durations, error formats, credentials."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from auth_service.accounts import AccountStore
from auth_service.config import AuthConfig
from auth_service.state import STATE_KEY
from tests.auth_service.helpers import PASSWORD, Client, add_user, jwks_keys, login, verify

EMAIL = "alice@example.com"
LEGACY = "application/json"
BOTH = "application/json, application/problem+json"


@pytest.fixture
def alice(config: AuthConfig, store: AccountStore) -> None:
    add_user(config, store, EMAIL)


@pytest.mark.usefixtures("alice")
@pytest.mark.parametrize(("duration", "lifetime"), [(None, 3600), (1, 1), (2592000, 2592000)])
async def test_valid_durations_set_the_lifetime(
    client: Client, config: AuthConfig, duration: int | None, lifetime: int
) -> None:
    body: dict[str, Any] = {"user": EMAIL, "password": PASSWORD}
    if duration is not None:
        body["duration"] = duration
    response = await login(client, body)
    assert response.status == 200
    answer = await response.json()
    # Leeway: a 1-second token may have expired by the time it is checked.
    claims = verify(answer["token"], await jwks_keys(client), config, leeway=5)
    assert answer["expiresIn"] == lifetime
    assert claims["exp"] - claims["iat"] == lifetime
    expires_at = datetime.fromisoformat(answer["expiresAt"]).timestamp()
    assert abs(expires_at - (time.time() + lifetime)) <= 2


@pytest.mark.usefixtures("alice")
@pytest.mark.parametrize("duration", [0, -1, 2592001, 1.5, "60", True, None])
async def test_invalid_durations_are_400_naming_duration(client: Client, duration: Any) -> None:
    response = await login(client, {"user": EMAIL, "password": PASSWORD, "duration": duration}, accept=LEGACY)
    assert response.status == 400
    body = await response.json()
    assert [d["code"] for d in body["details"]] == ["ERROR_INVALID_PARAMETER"]
    assert body["details"][0]["message"].startswith("duration: ")


@pytest.mark.usefixtures("alice")
async def test_response_has_both_token_forms_and_is_not_cached(client: Client) -> None:
    response = await login(client, {"user": EMAIL, "password": PASSWORD})
    body = await response.json()
    assert set(body) == {"token", "authorization", "expiresIn", "expiresAt", "tokenType"}
    assert body["authorization"] == f"Bearer {body['token']}"
    assert body["tokenType"] == "Bearer"
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.usefixtures("alice")
async def test_e_mail_is_case_insensitive(client: Client) -> None:
    response = await login(client, {"user": "Alice@Example.COM", "password": PASSWORD})
    assert response.status == 200


async def test_legacy_format_lists_every_broken_field(client: Client) -> None:
    response = await login(client, {"password": 5, "duration": 0}, accept=LEGACY)
    assert response.status == 400
    assert response.content_type == "application/json"
    body = await response.json()
    assert body["status"] == 400
    assert [d["code"] for d in body["details"]] == ["ERROR_INVALID_PARAMETER"] * 3
    assert [e.split(":")[0] for e in body["errors"]] == ["user", "password", "duration"]


async def test_problem_format_joins_every_broken_field(client: Client) -> None:
    response = await login(client, {"duration": "60"}, accept=BOTH)
    assert response.status == 400
    assert response.content_type == "application/problem+json"
    body = await response.json()
    assert body["type"] == "/problems/general/invalid-parameter/"
    assert body["title"] == "Some parameters have invalid values"
    assert body["instance"] == "/v1/authenticate"
    parts = body["detail"].split("; ")
    assert [p.split(":")[0] for p in parts] == ["user", "password", "duration"]


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"),
    [
        (b"{not json", "application/json", 400, "ERROR_MALFORMED_BODY"),
        (b"[1, 2]", "application/json", 400, "ERROR_MALFORMED_BODY"),
        (b'"text"', "application/json", 400, "ERROR_MALFORMED_BODY"),
        (b'{"user": "a@b.co", "password": "x"}', "text/plain", 415, "ERROR_UNSUPPORTED_MEDIA_TYPE"),
        (b'{"user": "a@b.co", "password": "x"}', "application/x-www-form-urlencoded", 415, "ERROR_UNSUPPORTED_MEDIA_TYPE"),
    ],
)
async def test_unreadable_bodies(client: Client, body: bytes, content_type: str, status: int, code: str) -> None:
    response = await client.post(
        "/v1/authenticate", data=body, headers={"Content-Type": content_type, "Accept": LEGACY}
    )
    assert response.status == status
    assert (await response.json())["details"][0]["code"] == code


@pytest.mark.usefixtures("alice")
async def test_wrong_password_and_unknown_user_look_the_same(client: Client) -> None:
    wrong = await login(client, {"user": EMAIL, "password": "not the password"}, accept=BOTH)
    unknown = await login(client, {"user": "nobody@example.com", "password": PASSWORD}, accept=BOTH)
    assert wrong.status == unknown.status == 401
    wrong_body, unknown_body = await wrong.json(), await unknown.json()
    for body in (wrong_body, unknown_body):
        body.pop("timestamp")
    assert wrong_body == unknown_body
    assert wrong_body["type"] == "/problems/auth/invalid-credentials"
    assert wrong.headers["WWW-Authenticate"] == unknown.headers["WWW-Authenticate"]


async def test_disabled_user_is_refused_like_a_wrong_password(
    client: Client, config: AuthConfig, store: AccountStore
) -> None:
    add_user(config, store, EMAIL)
    assert (await login(client, {"user": EMAIL, "password": PASSWORD})).status == 200
    store.disable_user(EMAIL)
    response = await login(client, {"user": EMAIL, "password": PASSWORD}, accept=LEGACY)
    assert response.status == 401
    assert (await response.json())["details"][0]["code"] == "AUTH_ERROR_INVALID_CREDENTIALS"
    store.enable_user(EMAIL)
    assert (await login(client, {"user": EMAIL, "password": PASSWORD})).status == 200


@pytest.mark.parametrize("user", [42, ["a@b.co"], {"e": 1}, "", "   "])
async def test_user_must_be_a_non_blank_string(client: Client, user: Any) -> None:
    response = await login(client, {"user": user, "password": PASSWORD}, accept=LEGACY)
    assert response.status == 400
    assert (await response.json())["errors"][0].startswith("user: ")


async def test_unknown_method_is_405_in_our_format(client: Client) -> None:
    response = await client.get("/v1/authenticate", headers={"Accept": LEGACY})
    assert response.status == 405
    assert (await response.json())["details"][0]["code"] == "ERROR_METHOD_NOT_ALLOWED"


@pytest.mark.usefixtures("alice")
async def test_unknown_user_pays_for_a_password_check(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    passwords = client.app[STATE_KEY].authenticator.passwords
    checked: list[str | None] = []
    real_verify = passwords.verify

    def spy(password_hash: str | None, password: str) -> bool:
        checked.append(password_hash)
        return real_verify(password_hash, password)

    monkeypatch.setattr(passwords, "verify", spy)
    await login(client, {"user": "nobody@example.com", "password": PASSWORD})
    await login(client, {"user": EMAIL, "password": "wrong password"})
    assert checked[0] is None
    assert checked[1] is not None and checked[1].startswith("$argon2id$")
