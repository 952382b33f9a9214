"""Test signing keys and token minting, independent of the auth service's code."""

from __future__ import annotations

import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ISSUER = "routing-api"
AUDIENCE = "routing-api"


class TestKey:
    __test__ = False

    def __init__(self, kid: str = "k1") -> None:
        self.kid = kid
        self.private = Ed25519PrivateKey.generate()

    def jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = jwt.algorithms.OKPAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        jwk.update({"kid": self.kid, "alg": "EdDSA", "use": "sig"})
        return jwk

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "sub": "user:1",
            "tier": "standard",
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            "jti": uuid.uuid4().hex,
            "iss": ISSUER,
            "aud": AUDIENCE,
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, **overrides: Any) -> str:
        return jwt.encode(self.claims(**overrides), self.private, algorithm="EdDSA", headers={"kid": self.kid})


def jwks(*keys: TestKey) -> dict[str, Any]:
    return {"keys": [k.jwk() for k in keys]}
