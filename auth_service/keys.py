"""Ed25519 signing keys: made, rotated, retired and published as a JWK set.

The private keys live only in the accounts database. The newest non-retired key signs;
older ones stay published so tokens they signed still verify, until none of those tokens
can be valid any more.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from auth_service.accounts import AccountStore, SigningKeyRow, now_seconds
from auth_service.config import MAX_TOKEN_SECONDS

ALGORITHM = "EdDSA"
# Clock skew allowed to verifiers, so a key is retired only after its last token surely expired.
RETIREMENT_LEEWAY_SECONDS = 60


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private_key: Ed25519PrivateKey
    created_at: int

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_x(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return _b64url(raw)


def thumbprint(public_key: Ed25519PublicKey) -> str:
    """The RFC 7638 JWK thumbprint: a stable kid derived from the key itself."""
    canonical = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": public_x(public_key)}, separators=(",", ":"))
    return _b64url(hashlib.sha256(canonical.encode()).digest())


def public_jwk(key: SigningKey) -> dict[str, Any]:
    x = public_x(key.public_key)
    return {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": key.kid, "alg": ALGORITHM, "use": "sig"}


def _load(row: SigningKeyRow) -> SigningKey:
    private_key = serialization.load_pem_private_key(row.private_key_pem.encode(), password=None)
    if not isinstance(private_key, Ed25519PrivateKey):
        raise ValueError(f"signing key {row.kid} is not an Ed25519 key")
    return SigningKey(row.kid, private_key, row.created_at)


def create_signing_key(store: AccountStore, created_at: int | None = None) -> SigningKey:
    private_key = Ed25519PrivateKey.generate()
    pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    key = SigningKey(thumbprint(private_key.public_key()), private_key, created_at or now_seconds())
    store.add_signing_key(key.kid, pem, key.created_at)
    return key


def ensure_signing_key(store: AccountStore) -> None:
    """Makes the first key on first start (under the write lock, so two processes make one)."""
    with store.transaction():
        if not store.signing_keys():
            create_signing_key(store)


def keys_to_retire(rows: list[SigningKeyRow], now: int) -> list[str]:
    """Keys replaced by a newer one long enough ago that every token they signed has expired.

    A key stops signing when its successor is made; its last token then lives at most
    MAX_TOKEN_SECONDS longer.
    """
    ordered = sorted(rows, key=lambda r: r.created_at)
    retire = []
    for older, successor in itertools.pairwise(ordered):
        if now >= successor.created_at + MAX_TOKEN_SECONDS + RETIREMENT_LEEWAY_SECONDS:
            retire.append(older.kid)
    return retire


def retire_expired_keys(store: AccountStore, now: int | None = None) -> list[str]:
    now = now if now is not None else now_seconds()
    retired = keys_to_retire(store.signing_keys(), now)
    for kid in retired:
        store.retire_signing_key(kid, now)
    return retired


def rotate_signing_key(store: AccountStore, now: int | None = None) -> tuple[SigningKey, list[str]]:
    """Makes a new active key; returns it and the kids retired on the way."""
    now = now if now is not None else now_seconds()
    with store.transaction():
        # A second later than the newest key at least, so "newest" is never a tie.
        newest = max((r.created_at for r in store.signing_keys()), default=0)
        key = create_signing_key(store, max(now, newest + 1))
    return key, retire_expired_keys(store, now)


class KeyRing:
    """The published keys as loaded objects, re-read from the database on `refresh()`.

    Refreshing is one small query; PEMs are parsed only for keys not seen before. It picks up
    keys the console rotated while the service runs.
    """

    def __init__(self, store: AccountStore) -> None:
        self.store = store
        self._loaded: dict[str, SigningKey] = {}
        self.published: list[SigningKey] = []

    def refresh(self) -> None:
        rows = self.store.signing_keys()
        self._loaded = {row.kid: self._loaded.get(row.kid) or _load(row) for row in rows}
        self.published = sorted(self._loaded.values(), key=lambda k: k.created_at)

    @property
    def active(self) -> SigningKey:
        if not self.published:
            raise RuntimeError("no signing key: the database has none that is not retired")
        return self.published[-1]

    def jwks(self) -> dict[str, Any]:
        return {"keys": [public_jwk(key) for key in reversed(self.published)]}
