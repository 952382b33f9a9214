"""Token verification refuses everything but a valid, unexpired EdDSA token of ours."""

from __future__ import annotations

import base64
import time

import orjson
import pytest
from cryptography.hazmat.primitives import serialization

from common.errors import Unauthorized
from gateway.tokens import TokenVerifier, UnknownKey, bearer_token
from tests.gateway.keys import AUDIENCE, ISSUER, TestKey, jwks


@pytest.fixture
def key() -> TestKey:
    return TestKey("k1")


@pytest.fixture
def verifier(key: TestKey) -> TokenVerifier:
    verifier = TokenVerifier(ISSUER, AUDIENCE)
    verifier.load_jwks(jwks(key))
    return verifier


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_valid_token_gives_the_identity(verifier: TokenVerifier, key: TestKey) -> None:
    identity = verifier.verify(key.token(sub="user:7", tier="demo", akid="42"))
    assert (identity.subject, identity.tier, identity.api_key_id) == ("user:7", "demo", "42")


def test_alg_none_is_refused(verifier: TokenVerifier, key: TestKey) -> None:
    header = b64(orjson.dumps({"alg": "none", "typ": "JWT", "kid": "k1"}))
    payload = b64(orjson.dumps(key.claims()))
    with pytest.raises(Unauthorized):
        verifier.verify(f"{header}.{payload}.")


def test_hmac_with_the_public_key_as_secret_is_refused(verifier: TokenVerifier, key: TestKey) -> None:
    public = key.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    header = b64(orjson.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}))
    forged_payload = b64(orjson.dumps(key.claims()))
    import hashlib
    import hmac

    signature = hmac.new(public, f"{header}.{forged_payload}".encode(), hashlib.sha256).digest()
    with pytest.raises(Unauthorized):
        verifier.verify(f"{header}.{forged_payload}.{b64(signature)}")


def test_tampered_payload_is_refused(verifier: TokenVerifier, key: TestKey) -> None:
    header, _, signature = key.token().split(".")
    payload = b64(orjson.dumps(key.claims(tier="unlimited")))
    with pytest.raises(Unauthorized, match="invalid"):
        verifier.verify(f"{header}.{payload}.{signature}")


def test_token_signed_by_another_key_with_our_kid_is_refused(verifier: TokenVerifier) -> None:
    impostor = TestKey("k1")
    with pytest.raises(Unauthorized):
        verifier.verify(impostor.token())


def test_expired_token_is_refused(verifier: TokenVerifier, key: TestKey) -> None:
    past = int(time.time()) - 3600
    with pytest.raises(Unauthorized, match="expired"):
        verifier.verify(key.token(iat=past - 60, nbf=past - 60, exp=past))


def test_cached_token_expires_too(verifier: TokenVerifier, key: TestKey) -> None:
    token = key.token(exp=int(time.time()) + 1)
    verifier.verify(token)
    verifier.leeway = 0
    time.sleep(1.1)
    with pytest.raises(Unauthorized, match="expired"):
        verifier.verify(token)


@pytest.mark.parametrize(
    "overrides",
    [{"iss": "someone-else"}, {"aud": "another-api"}, {"sub": None}, {"jti": None}, {"exp": None}, {"iat": None}],
    ids=["issuer", "audience", "no-sub", "no-jti", "no-exp", "no-iat"],
)
def test_wrong_or_missing_claims_are_refused(
    verifier: TokenVerifier, key: TestKey, overrides: dict[str, object]
) -> None:
    with pytest.raises(Unauthorized):
        verifier.verify(key.token(**overrides))


@pytest.mark.parametrize("garbage", ["", "abc", "a.b.c", "....", "eyJhbGciOiJFZERTQSJ9.e30"])
def test_malformed_tokens_are_refused(verifier: TokenVerifier, garbage: str) -> None:
    with pytest.raises((Unauthorized, UnknownKey)):
        verifier.verify(garbage)


def test_unknown_kid_asks_for_a_refresh(verifier: TokenVerifier) -> None:
    with pytest.raises(UnknownKey):
        verifier.verify(TestKey("k2").token())


def test_rotation_keeps_old_keys_that_stay_published(key: TestKey) -> None:
    verifier = TokenVerifier(ISSUER, AUDIENCE)
    new = TestKey("k2")
    verifier.load_jwks(jwks(key, new))
    assert verifier.verify(key.token()).subject == "user:1"
    assert verifier.verify(new.token()).subject == "user:1"
    verifier.load_jwks(jwks(new))  # k1 retired
    with pytest.raises(UnknownKey):
        verifier.verify(key.token())


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer ", "Basic abc", "Token abc"])
def test_authorization_header_must_be_bearer(header: str | None) -> None:
    with pytest.raises(Unauthorized):
        bearer_token(header)


def test_bearer_scheme_is_case_insensitive() -> None:
    assert bearer_token("bearer abc.def.ghi") == "abc.def.ghi"


@pytest.mark.parametrize(
    "raw", [b"Bearer \xff\xfe\x80", b"Bearer abc.\xc3\xa9t\xc3\xa9.def", b"Bearer abc\x7f.def.ghi"]
)
def test_a_token_of_other_than_printable_ascii_is_refused_before_the_jwt_library(
    raw: bytes, verifier: TokenVerifier
) -> None:
    # aiohttp hands over header bytes that are not UTF-8 as surrogates, which PyJWT cannot encode.
    header = raw.decode("utf-8", "surrogateescape")
    with pytest.raises(Unauthorized, match="malformed"):
        verifier.verify(bearer_token(header))


# Read when the module is collected: a session may reach these tests many minutes later, so
# every time meant to be in the future is a day ahead (10 minutes ahead expired in a long run).
NOW = int(time.time())


@pytest.mark.parametrize(
    "overrides",
    [
        {"exp": str(NOW + 86_400)},
        {"exp": 1e308},
        {"exp": float(NOW + 86_400)},
        {"exp": 10**30},
        {"iat": str(NOW)},
        {"iat": 1e308, "exp": 1e308},
        {"iat": float(NOW)},
        {"nbf": str(NOW)},
        {"nbf": 1.5},
        {"nbf": False},
        {"iat": NOW + 86_400, "nbf": NOW - 10, "exp": NOW + 2 * 86_400},
        {"iat": NOW - 10, "exp": NOW - 10 + 2_592_000 + 3600},
        {"iat": 1, "nbf": 1, "exp": NOW + 86_400},
        {"iat": NOW, "nbf": NOW + 2 * 86_400, "exp": NOW + 86_400},
    ],
    ids=[
        "exp-string",
        "exp-1e308",
        "exp-float",
        "exp-huge-int",
        "iat-string",
        "iat-and-exp-1e308",
        "iat-float",
        "nbf-string",
        "nbf-float",
        "nbf-bool",
        "iat-in-the-future",
        "longer-than-30-days",
        "issued-in-1970-valid-for-decades",
        "nbf-after-exp",
    ],
)
def test_absurd_or_non_integer_times_are_refused(
    verifier: TokenVerifier, key: TestKey, overrides: dict[str, object]
) -> None:
    with pytest.raises(Unauthorized, match="invalid"):
        verifier.verify(key.token(**overrides))


@pytest.mark.parametrize("lifetime", [1, 3600, 2_592_000])
def test_every_lifetime_the_platform_issues_passes(verifier: TokenVerifier, key: TestKey, lifetime: int) -> None:
    now = int(time.time())
    assert verifier.verify(key.token(iat=now, nbf=now, exp=now + lifetime)).expires_at == now + lifetime
