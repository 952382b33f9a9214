"""JWT verification against the auth service's published keys (no I/O here).

Only EdDSA is accepted: `alg: none`, HMAC with the public key as secret and every other
algorithm are refused before any signature check.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import jwt

from common.errors import Unauthorized

ALLOWED_ALGORITHMS = ["EdDSA"]
REQUIRED_CLAIMS = ["sub", "iat", "exp", "jti", "iss", "aud"]
TIME_CLAIMS = ("iat", "nbf", "exp")
# Fixed by the API contract (README): no token lives longer than 30 days.
MAX_TOKEN_SECONDS = 2_592_000
# A time claim at or past this (the year 2286) is absurd: no clock of ours is there.
MAX_TIME_CLAIM = 10_000_000_000


@dataclass(frozen=True)
class Identity:
    """Who is calling, as the gateway tells the services."""

    subject: str
    tier: str
    jti: str
    issued_at: int
    expires_at: int
    api_key_id: str | None = None
    email: str | None = None


class UnknownKey(Exception):
    """The token names a key id the verifier has not loaded (yet): refresh the JWKS."""


class TokenVerifier:
    def __init__(self, issuer: str, audience: str, *, leeway_seconds: float = 5, cache_size: int = 10_000) -> None:
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway_seconds
        self._keys: dict[str, Any] = {}
        # Verified tokens, so a busy client does not pay a signature check per request.
        self._verified: OrderedDict[str, Identity] = OrderedDict()
        self._cache_size = cache_size

    @property
    def key_ids(self) -> list[str]:
        return sorted(self._keys)

    def load_jwks(self, jwks: dict[str, Any]) -> None:
        keys: dict[str, Any] = {}
        for entry in jwks.get("keys", []):
            if entry.get("kty") != "OKP" or entry.get("crv") != "Ed25519" or not entry.get("kid"):
                continue
            keys[str(entry["kid"])] = jwt.PyJWK.from_dict(entry, algorithm="EdDSA").key
        self._keys = keys
        self._verified.clear()  # a rotation may have retired a key

    def verify(self, token: str) -> Identity:
        cached = self._verified.get(token)
        if cached is not None:
            if cached.expires_at + self.leeway < time.time():
                self._verified.pop(token, None)
                raise Unauthorized("the token has expired; request a new one")
            return cached
        identity = self._verify_signed(token)
        self._verified[token] = identity
        if len(self._verified) > self._cache_size:
            self._verified.popitem(last=False)
        return identity

    def _verify_signed(self, token: str) -> Identity:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthorized("the token is malformed") from exc
        if header.get("alg") not in ALLOWED_ALGORITHMS:
            raise Unauthorized("the token's signing algorithm is not accepted")
        key = self._keys.get(str(header.get("kid")))
        if key is None:
            raise UnknownKey(str(header.get("kid")))
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=ALLOWED_ALGORITHMS,
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": REQUIRED_CLAIMS},
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("the token has expired; request a new one") from exc
        except jwt.PyJWTError as exc:
            raise Unauthorized("the token is invalid") from exc
        problem = time_claims_problem(claims, time.time(), self.leeway)
        if problem:
            raise Unauthorized(f"the token is invalid: {problem}")
        return identity_from_claims(claims)


def time_claims_problem(claims: dict[str, Any], now: float, leeway: float) -> str | None:
    """What is wrong with the token's times, beyond what the JWT library checks, or None.

    The library takes `exp: "9999999999"` or `exp: 1e308` (it only needs `int()` to work):
    a token signed with such times would never expire. Only JSON integers in a real range
    pass, and no token may claim a longer life than the platform issues."""
    for name in TIME_CLAIMS:
        if name not in claims:
            continue
        value = claims[name]
        # bool is an int in Python, but `true` is not a time.
        if type(value) is not int or not 0 < value < MAX_TIME_CLAIM:
            return f"its {name} claim is not a time in whole seconds"
    issued, expires = claims["iat"], claims["exp"]
    if issued > now + leeway:
        return "it was issued in the future"
    if not issued < expires <= issued + MAX_TOKEN_SECONDS + leeway:
        return f"it must expire after it was issued and within {MAX_TOKEN_SECONDS} s"
    if claims.get("nbf", issued) > expires:
        return "it is valid only after it expires"
    return None


def identity_from_claims(claims: dict[str, Any]) -> Identity:
    try:
        return Identity(
            subject=str(claims["sub"]),
            tier=str(claims.get("tier", "standard")),
            jti=str(claims["jti"]),
            issued_at=int(claims["iat"]),
            expires_at=int(claims["exp"]),
            api_key_id=str(claims["akid"]) if claims.get("akid") else None,
            email=str(claims["email"]) if claims.get("email") else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise Unauthorized("the token's claims are invalid") from exc


def bearer_token(header_value: str | None) -> str:
    if not header_value:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <token>'")
    scheme, _, token = header_value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be 'Bearer <token>'")
    # A JWT is printable ASCII; other bytes (not UTF-8, they arrive as surrogates) would
    # fail inside the JWT library instead of as a 401.
    if not token.isascii() or not token.strip().isprintable():
        raise Unauthorized("the token is malformed")
    return token.strip()
