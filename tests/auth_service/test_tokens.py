"""Token claims, the JWKS, and key rotation."""

from __future__ import annotations

import uuid
from typing import Any

import jwt
import pytest

from auth_service.accounts import AccountStore, SigningKeyRow
from auth_service.config import MAX_TOKEN_SECONDS, AuthConfig
from auth_service.keys import KeyRing, keys_to_retire, retire_expired_keys, rotate_signing_key
from auth_service.tokens import TokenIssuer, demo_subject
from tests.auth_service.helpers import PASSWORD, Client, add_user, jwks_keys, login, verify

EMAIL = "carol@example.com"


async def token_for(client: Client, config: AuthConfig, store: AccountStore) -> str:
    if store.find_user(EMAIL) is None:
        add_user(config, store, EMAIL, tier="demo")
    response = await login(client, {"user": EMAIL, "password": PASSWORD, "duration": 600})
    assert response.status == 200
    token: str = (await response.json())["token"]
    return token


async def test_claims_of_a_password_token(client: Client, config: AuthConfig, store: AccountStore) -> None:
    token = await token_for(client, config, store)
    claims = verify(token, await jwks_keys(client), config)
    user = store.user(EMAIL)
    assert set(claims) == {"sub", "email", "tier", "iat", "nbf", "exp", "jti", "iss", "aud"}
    assert claims["sub"] == f"user:{user.id}"
    assert claims["email"] == EMAIL
    assert claims["tier"] == "demo"
    assert claims["nbf"] == claims["iat"]
    assert claims["exp"] == claims["iat"] + 600
    assert claims["iss"] == "routing-api"
    assert claims["aud"] == "routing-api"
    assert uuid.UUID(hex=claims["jti"]).version == 4


async def test_each_token_has_its_own_jti(client: Client, config: AuthConfig, store: AccountStore) -> None:
    first, second = await token_for(client, config, store), await token_for(client, config, store)
    assert jwt.decode(first, options={"verify_signature": False})["jti"] != jwt.decode(
        second, options={"verify_signature": False}
    )["jti"]


async def test_header_names_eddsa_and_a_published_kid(client: Client, config: AuthConfig, store: AccountStore) -> None:
    header = jwt.get_unverified_header(await token_for(client, config, store))
    assert header["alg"] == "EdDSA"
    assert header["kid"] in await jwks_keys(client)


async def test_jwks_publishes_okp_ed25519_keys_without_private_parts(client: Client) -> None:
    response = await client.get("/.well-known/jwks.json")
    keys = (await response.json())["keys"]
    assert len(keys) == 1
    assert set(keys[0]) == {"kty", "crv", "x", "kid", "alg", "use"}
    assert (keys[0]["kty"], keys[0]["crv"], keys[0]["alg"], keys[0]["use"]) == ("OKP", "Ed25519", "EdDSA", "sig")


async def test_tampered_token_fails_verification(client: Client, config: AuthConfig, store: AccountStore) -> None:
    header, _claims, signature = (await token_for(client, config, store)).split(".")
    forged_claims = jwt.utils.base64url_encode(b'{"sub":"user:999","tier":"unlimited"}').decode()
    with pytest.raises(jwt.InvalidSignatureError):
        verify(f"{header}.{forged_claims}.{signature}", await jwks_keys(client), config)


async def test_rotation_keeps_old_tokens_verifiable(client: Client, config: AuthConfig, store: AccountStore) -> None:
    old_token = await token_for(client, config, store)
    new_key, retired = rotate_signing_key(store)
    assert retired == []
    new_token = await token_for(client, config, store)
    keys = await jwks_keys(client)
    assert jwt.get_unverified_header(new_token)["kid"] == new_key.kid
    assert jwt.get_unverified_header(old_token)["kid"] != new_key.kid
    assert verify(old_token, keys, config)["sub"] == verify(new_token, keys, config)["sub"]
    assert len(keys) == 2


def test_old_key_is_retired_once_its_last_token_expired(store: AccountStore) -> None:
    keyring = KeyRing(store)
    keyring.refresh()
    # ensure_signing_key is run by the app; here the first key comes from rotating an empty store.
    first, _ = rotate_signing_key(store, now=1_000_000)
    second, _ = rotate_signing_key(store, now=2_000_000)
    last_valid = second.created_at + MAX_TOKEN_SECONDS
    assert retire_expired_keys(store, now=last_valid) == []
    assert retire_expired_keys(store, now=last_valid + 61) == [first.kid]
    keyring.refresh()
    assert [k.kid for k in keyring.published] == [second.kid]


def test_keys_to_retire_never_retires_the_newest() -> None:
    rows = [SigningKeyRow(str(n), "", n * 10, None) for n in range(3)]
    assert keys_to_retire(rows, now=10**12) == ["0", "1"]


def test_demo_token_claims(config: AuthConfig, store: AccountStore) -> None:
    rotate_signing_key(store)
    keyring = KeyRing(store)
    issuer = TokenIssuer(
        keyring, issuer=config.jwt_issuer, audience=config.jwt_audience, default_seconds=config.default_token_seconds
    )
    issued = issuer.issue(demo_subject(), 60)
    keys: dict[str, Any] = {k.kid: k.public_key for k in keyring.published}
    claims = verify(issued.token, keys, config)
    assert claims["sub"].startswith("demo:")
    uuid.UUID(claims["sub"].removeprefix("demo:"))
    assert claims["tier"] == "demo"
    assert "akid" not in claims
