"""The accounts: users, API keys, signing keys and revocations, in SQLite or PostgreSQL.

One `AccountStore` per process, over a `Database` (`auth_service.database`): PostgreSQL when
DATABASE_URL is set, else SQLite under DATA_DIR (`open_store`). Every statement is a short
indexed lookup, so the service calls the store directly on the event loop.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
import uuid
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace

from auth_service.config import ROLES, TIERS, AuthConfig
from auth_service.database import Database, Row, SqliteDatabase, UniqueViolation

API_KEY_PREFIX_LENGTH = 8
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
MAX_EMAIL_LENGTH = 254
_KEY_PREFIX = re.compile(r"^[0-9a-f-]{1,36}$")
# The condition "this API key has not expired" at the time given as its parameter.
ACTIVE_KEY = "(expires_at IS NULL OR expires_at > ?)"


class AccountError(Exception):
    """A console-level problem with an account operation (unknown user, duplicate, …)."""


class DuplicateUser(AccountError):
    """A user with that e-mail address exists already."""


class ApiKeyLimit(AccountError):
    """The user has as many active API keys as one account may."""


@dataclass(frozen=True)
class User:
    id: int
    email: str
    password_hash: str
    tier: str
    disabled: bool
    created_at: int
    role: str = "user"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def subject(self) -> str:
        """The JWT `sub` of this user's tokens."""
        return f"user:{self.id}"


@dataclass(frozen=True)
class ApiKey:
    id: int
    user_id: int
    prefix: str
    key_hash: str
    created_at: int
    revoked_at: int | None
    expires_at: int | None = None  # None: the key never expires

    def usable(self, now: int) -> bool:
        """Not revoked and not expired: it can be exchanged for tokens."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


@dataclass(frozen=True)
class UserSummary:
    id: int
    email: str
    tier: str
    disabled: bool
    active_keys: int
    created_at: int
    role: str = "user"


@dataclass(frozen=True)
class Revocation:
    kind: str  # "sub" or "akid"
    subject: str
    revoked_at: int

    @property
    def redis_key(self) -> str:
        return f"revoked:{self.kind}:{self.subject}"


@dataclass(frozen=True)
class SigningKeyRow:
    kid: str
    private_key_pem: str
    created_at: int
    retired_at: int | None


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_api_key() -> str:
    return str(uuid.uuid4())


def email_problem(email: str) -> str | None:
    # Control characters would pass the pattern (NUL, escapes) and end up in listings and logs.
    if len(email) > MAX_EMAIL_LENGTH or not _EMAIL.match(email) or not email.isprintable():
        return f"{email!r} is not an e-mail address"
    return None


def tier_problem(tier: str) -> str | None:
    return None if tier in TIERS else f"the tier must be one of {', '.join(TIERS)}"


def role_problem(role: str) -> str | None:
    return None if role in ROLES else f"the role must be one of {', '.join(ROLES)}"


def now_seconds() -> int:
    # Floor: every token issued before this moment has an `iat` <= this value.
    return int(time.time())


class AccountStore:
    def __init__(self, db: Database, *, max_api_keys: int | None = None) -> None:
        """`max_api_keys`: active API keys one user may hold (None: no cap)."""
        self.db = db
        self.max_api_keys = max_api_keys

    @property
    def description(self) -> str:
        return self.db.description

    def close(self) -> None:
        self.db.close()

    def transaction(self) -> AbstractContextManager[None]:
        return self.db.transaction()

    def ping(self) -> None:
        self.db.execute("SELECT count(*) AS users FROM users")

    # ------------------------------------------------------------ users

    def add_user(self, email: str, password_hash: str, tier: str = "standard", role: str = "user") -> User:
        email = email.strip()
        problem = email_problem(email) or tier_problem(tier) or role_problem(role)
        if problem:
            raise AccountError(problem)
        try:
            rows = self.db.execute(
                "INSERT INTO users (email, password_hash, tier, disabled, created_at, role) "
                "VALUES (?, ?, ?, 0, ?, ?) RETURNING *",
                (email, password_hash, tier, now_seconds(), role),
            )
        except UniqueViolation as exc:
            raise DuplicateUser(f"a user with the e-mail {email} exists already") from exc
        return _user(rows[0])

    def find_user(self, email: str) -> User | None:
        rows = self.db.execute(f"SELECT * FROM users WHERE {self.db.email_equals}", (email.strip(),))  # noqa: S608
        return _user(rows[0]) if rows else None

    def user(self, email: str) -> User:
        user = self.find_user(email)
        if user is None:
            raise AccountError(f"no user with the e-mail {email}")
        return user

    def user_by_id(self, user_id: int) -> User:
        rows = self.db.execute("SELECT * FROM users WHERE id = ?", (user_id,))
        if not rows:
            raise AccountError(f"no user with id {user_id}")
        return _user(rows[0])

    def set_password_hash(self, user_id: int, password_hash: str) -> None:
        self.db.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))

    def change_password(self, user_id: int, password_hash: str) -> Revocation:
        """The new hash, and every token issued to the user so far revoked (other sessions end)."""
        with self.transaction():
            self.db.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))
            return self._record_revocation("sub", self.user_by_id(user_id).subject)

    def set_tier(self, user_id: int, tier: str) -> tuple[User, Revocation]:
        """The new tier; the user's earlier tokens (which carry the old tier) are revoked."""
        problem = tier_problem(tier)
        if problem:
            raise AccountError(problem)
        with self.transaction():
            user = self.user_by_id(user_id)
            self.db.execute("UPDATE users SET tier = ? WHERE id = ?", (tier, user.id))
            return self.user_by_id(user.id), self._record_revocation("sub", user.subject)

    def set_role(self, user_id: int, role: str) -> User:
        """Roles are read from here at every request, so no token needs revoking."""
        problem = role_problem(role)
        if problem:
            raise AccountError(problem)
        self.db.execute("UPDATE users SET role = ? WHERE id = ?", (role, self.user_by_id(user_id).id))
        return self.user_by_id(user_id)

    def list_users(self) -> list[UserSummary]:
        rows = self.db.execute(
            """SELECT u.id, u.email, u.tier, u.role, u.disabled, u.created_at,
                      count(k.id) FILTER (
                          WHERE k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)
                      ) AS active_keys
               FROM users u LEFT JOIN api_keys k ON k.user_id = u.id
               GROUP BY u.id ORDER BY u.id""",
            (now_seconds(),),
        )
        return [
            UserSummary(
                r["id"], r["email"], r["tier"], bool(r["disabled"]), r["active_keys"], r["created_at"], r["role"]
            )
            for r in rows
        ]

    def disable_user(self, email: str) -> Revocation:
        """Disables the user and records the revocation of every token issued to them so far."""
        return self.disable_user_id(self.user(email).id)

    def disable_user_id(self, user_id: int) -> Revocation:
        with self.transaction():
            user = self.user_by_id(user_id)
            self.db.execute("UPDATE users SET disabled = 1 WHERE id = ?", (user.id,))
            return self._record_revocation("sub", user.subject)

    def enable_user(self, email: str) -> User:
        return self.enable_user_id(self.user(email).id)

    def enable_user_id(self, user_id: int) -> User:
        # Tokens revoked while disabled stay revoked: their `iat` is before the revocation.
        user = self.user_by_id(user_id)
        self.db.execute("UPDATE users SET disabled = 0 WHERE id = ?", (user.id,))
        return self.user_by_id(user.id)

    # ------------------------------------------------------------ API keys

    def add_api_key(self, email: str, *, expires_at: int | None = None) -> tuple[ApiKey, str]:
        """Makes a key for the user; returns its row and the key itself (shown once, never stored)."""
        return self.add_api_key_for(self.user(email).id, expires_at=expires_at)

    def add_api_key_for(self, user_id: int, *, expires_at: int | None = None) -> tuple[ApiKey, str]:
        """`expires_at`: unix seconds after which the key gives no token (None: never). Refused
        (ApiKeyLimit) when the user has `max_api_keys` usable keys already."""
        key = new_api_key()
        # One writer at a time: two requests cannot both pass the count and exceed the cap.
        with self.transaction():
            user = self.user_by_id(user_id)
            if user.disabled:
                raise AccountError(f"the user {user.email} is disabled")
            now = now_seconds()
            cap = self.max_api_keys
            if cap is not None and self.active_api_key_count(user.id, now) >= cap:
                raise ApiKeyLimit(
                    f"the account has {cap} active API keys, as many as one account may: revoke one first"
                )
            rows = self.db.execute(
                "INSERT INTO api_keys (user_id, prefix, key_hash, created_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?) RETURNING *",
                (user.id, key[:API_KEY_PREFIX_LENGTH], hash_api_key(key), now, expires_at),
            )
        return _api_key(rows[0]), key

    def active_api_key_count(self, user_id: int, now: int) -> int:
        rows = self.db.execute(
            f"SELECT count(*) AS n FROM api_keys WHERE user_id = ? AND revoked_at IS NULL AND {ACTIVE_KEY}",  # noqa: S608
            (user_id, now),
        )
        return int(rows[0]["n"])

    def find_api_key(self, key: str) -> ApiKey | None:
        """The stored key matching `key`, revoked or not; compares hashes in constant time."""
        wanted = hash_api_key(key)
        rows = self.db.execute("SELECT * FROM api_keys WHERE prefix = ?", (key[:API_KEY_PREFIX_LENGTH],))
        found = None
        for row in rows:
            if hmac.compare_digest(row["key_hash"], wanted):
                found = _api_key(row)
        return found

    def revoke_api_key(self, key_or_prefix: str) -> tuple[ApiKey, Revocation]:
        """Revokes the one active key that starts with `key_or_prefix` (or is that whole key)."""
        with self.transaction():
            rows = self._active_keys_matching(key_or_prefix.strip().lower())
            if not rows:
                raise AccountError(f"no active API key starts with {key_or_prefix!r}")
            if len(rows) > 1:
                ids = ", ".join(str(r["id"]) for r in rows)
                raise AccountError(
                    f"{len(rows)} active API keys start with {key_or_prefix!r} (ids {ids}); give more characters"
                )
            return self._revoke(_api_key(rows[0]))

    def revoke_user_api_key(self, user_id: int, key_id: int) -> tuple[ApiKey, Revocation | None] | None:
        """Revokes the user's key `key_id`; None when the user has no such key (another user's
        key is "no such key" too). A key revoked before is returned as it is, without a revocation."""
        with self.transaction():
            rows = self.db.execute("SELECT * FROM api_keys WHERE id = ? AND user_id = ?", (key_id, user_id))
            if not rows:
                return None
            key = _api_key(rows[0])
            return (key, None) if key.revoked_at is not None else self._revoke(key)

    def _revoke(self, key: ApiKey) -> tuple[ApiKey, Revocation]:
        """Inside a transaction: marks the key revoked and records the revocation of its tokens."""
        revocation = self._record_revocation("akid", str(key.id))
        self.db.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ?", (revocation.revoked_at, key.id))
        return replace(key, revoked_at=revocation.revoked_at), revocation

    def _active_keys_matching(self, text: str) -> list[Row]:
        if not _KEY_PREFIX.match(text):
            raise AccountError(f"{text!r} is not the start of an API key (hexadecimal digits and dashes)")
        if len(text) == len(new_api_key()):
            return self.db.execute(
                "SELECT * FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL", (hash_api_key(text),)
            )
        if len(text) > API_KEY_PREFIX_LENGTH:
            raise AccountError(f"give the first {API_KEY_PREFIX_LENGTH} characters of the key or the whole key")
        # Only hex digits and dashes reach here, so the pattern holds no LIKE wildcards.
        return self.db.execute(
            "SELECT * FROM api_keys WHERE prefix LIKE ? AND revoked_at IS NULL ORDER BY id", (text + "%",)
        )

    def api_keys_of(self, email: str) -> list[ApiKey]:
        return self.api_keys_of_user(self.user(email).id)

    def api_keys_of_user(self, user_id: int) -> list[ApiKey]:
        rows = self.db.execute("SELECT * FROM api_keys WHERE user_id = ? ORDER BY id", (user_id,))
        return [_api_key(r) for r in rows]

    # ------------------------------------------------------------ revocations

    def _record_revocation(self, kind: str, subject: str) -> Revocation:
        revocation = Revocation(kind, subject, now_seconds())
        self.db.execute(
            "INSERT INTO revocations (kind, subject, revoked_at) VALUES (?, ?, ?)",
            (revocation.kind, revocation.subject, revocation.revoked_at),
        )
        return revocation

    def latest_revocation(self, kind: str, subject: str) -> int | None:
        """When the subject's tokens were last revoked (unix seconds), or None."""
        row = self.db.execute(
            "SELECT max(revoked_at) AS at FROM revocations WHERE kind = ? AND subject = ?", (kind, subject)
        )[0]
        return int(row["at"]) if row["at"] is not None else None

    def revocations_since(self, since: int) -> list[Revocation]:
        """The latest revocation of each subject made at or after `since`."""
        rows = self.db.execute(
            """SELECT kind, subject, max(revoked_at) AS revoked_at FROM revocations
               WHERE revoked_at >= ? GROUP BY kind, subject""",
            (since,),
        )
        return [Revocation(r["kind"], r["subject"], r["revoked_at"]) for r in rows]

    # ------------------------------------------------------------ signing keys

    def signing_keys(self, *, include_retired: bool = False) -> list[SigningKeyRow]:
        where = "" if include_retired else "WHERE retired_at IS NULL"
        order = self.db.insertion_order
        rows = self.db.execute(f"SELECT * FROM signing_keys {where} ORDER BY created_at, {order}")  # noqa: S608
        return [SigningKeyRow(r["kid"], r["private_key_pem"], r["created_at"], r["retired_at"]) for r in rows]

    def add_signing_key(self, kid: str, private_key_pem: str, created_at: int) -> None:
        self.db.execute(
            "INSERT INTO signing_keys (kid, private_key_pem, created_at) VALUES (?, ?, ?)",
            (kid, private_key_pem, created_at),
        )

    def retire_signing_key(self, kid: str, retired_at: int) -> None:
        self.db.execute("UPDATE signing_keys SET retired_at = ? WHERE kid = ?", (retired_at, kid))


def _user(row: Row) -> User:
    return User(
        row["id"],
        row["email"],
        row["password_hash"],
        row["tier"],
        bool(row["disabled"]),
        row["created_at"],
        row["role"],
    )


def _api_key(row: Row) -> ApiKey:
    return ApiKey(
        row["id"],
        row["user_id"],
        row["prefix"],
        row["key_hash"],
        row["created_at"],
        row["revoked_at"],
        row["expires_at"],
    )


def open_database(config: AuthConfig) -> Database:
    """PostgreSQL when DATABASE_URL is set, else SQLite at `config.accounts_path`. Here, not in
    `database`, which `postgres` builds on: neither module imports the other both ways."""
    if config.database_url:
        # Imported here: only PostgreSQL deployments load the driver.
        from auth_service.postgres import PostgresDatabase

        return PostgresDatabase(config.database_url, pool_size=config.database_pool_size)
    return SqliteDatabase(config.accounts_path)


def open_store(config: AuthConfig) -> AccountStore:
    """The accounts of this configuration: PostgreSQL when DATABASE_URL is set, else SQLite."""
    return AccountStore(open_database(config), max_api_keys=config.max_api_keys_per_account)
