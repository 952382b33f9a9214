"""Issuing JWTs signed with the active Ed25519 key."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt

from auth_service.accounts import now_seconds
from auth_service.keys import ALGORITHM, KeyRing


@dataclass(frozen=True)
class TokenSubject:
    """Whom a token is for: `sub`, `tier`, and `email`/`akid` when known."""

    sub: str
    tier: str
    email: str | None = None
    api_key_id: int | None = None


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires_in: int
    expires_at: int

    def response(self) -> dict[str, Any]:
        """The body of both authentication endpoints."""
        return {
            "token": self.token,
            "authorization": f"Bearer {self.token}",
            "expiresIn": self.expires_in,
            "expiresAt": datetime.fromtimestamp(self.expires_at, UTC).isoformat().replace("+00:00", "Z"),
            "tokenType": "Bearer",
        }


class TokenIssuer:
    def __init__(self, keys: KeyRing, *, issuer: str, audience: str, default_seconds: int) -> None:
        """`default_seconds`: a token's lifetime when the login names none (DEFAULT_TOKEN_SECONDS)."""
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.default_seconds = default_seconds

    def claims(self, subject: TokenSubject, duration: int, now: int) -> dict[str, Any]:
        claims: dict[str, Any] = {
            "sub": subject.sub,
            "tier": subject.tier,
            "iat": now,
            "nbf": now,
            "exp": now + duration,
            "jti": uuid.uuid4().hex,
            "iss": self.issuer,
            "aud": self.audience,
        }
        if subject.email is not None:
            claims["email"] = subject.email
        if subject.api_key_id is not None:
            claims["akid"] = str(subject.api_key_id)
        return claims

    def issue(self, subject: TokenSubject, duration: int, now: int | None = None) -> IssuedToken:
        # Picks up a key rotated by the console since the last token.
        self.keys.refresh()
        key = self.keys.active
        issued_at = now if now is not None else now_seconds()
        claims = self.claims(subject, duration, issued_at)
        token = jwt.encode(claims, key.private_key, algorithm=ALGORITHM, headers={"kid": key.kid, "typ": "JWT"})
        return IssuedToken(token, duration, claims["exp"])


def demo_subject() -> TokenSubject:
    return TokenSubject(sub=f"demo:{uuid.uuid4()}", tier="demo")
