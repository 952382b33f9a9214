"""Where the accounts live: one `Database` interface, SQLite (a file under DATA_DIR) or
PostgreSQL (`DATABASE_URL`, see `auth_service.postgres`). No account logic here.

Statements are written once, with `?` placeholders and SQL both databases understand; the
few differences are the `Database`'s attributes (`email_equals`, `insertion_order`). Rows
are dicts. A failing database raises `StoreError` (`UniqueViolation` for a duplicate), so
callers never see a driver's exceptions.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from auth_service.config import ROLES, TIERS, AuthConfig

Row = dict[str, Any]

TIER_CHECK = f"CHECK (tier IN ({', '.join(repr(t) for t in TIERS)}))"
ROLE_CHECK = f"CHECK (role IN ({', '.join(repr(r) for r in ROLES)}))"
KIND_CHECK = "CHECK (kind IN ('sub', 'akid'))"
# Columns added after the first release: (table, column, definition) for databases made before them.
ADDED_COLUMNS = (
    ("users", "role", f"TEXT NOT NULL DEFAULT 'user' {ROLE_CHECK}"),
    ("api_keys", "expires_at", "BIGINT"),
)

SQLITE_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    email TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT NOT NULL,
    tier TEXT NOT NULL {TIER_CHECK},
    disabled INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    role TEXT NOT NULL DEFAULT 'user' {ROLE_CHECK}
);
CREATE TABLE IF NOT EXISTS api_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id),
    prefix TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    expires_at INTEGER
);
CREATE INDEX IF NOT EXISTS api_keys_prefix ON api_keys(prefix);
CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys(user_id);
CREATE TABLE IF NOT EXISTS signing_keys (
    kid TEXT PRIMARY KEY,
    private_key_pem TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER
);
CREATE TABLE IF NOT EXISTS revocations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL {KIND_CHECK},
    subject TEXT NOT NULL,
    revoked_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS revocations_time ON revocations(revoked_at);
CREATE INDEX IF NOT EXISTS revocations_subject ON revocations(kind, subject, revoked_at);
"""


class StoreError(Exception):
    """The accounts database failed or cannot be reached."""


class UniqueViolation(StoreError):
    """A row would duplicate a unique value (an e-mail address, a key hash)."""


class Database(Protocol):
    """What the account store needs of a database."""

    # Where the accounts are, for logs and messages (never a password).
    description: str
    # The condition "the row's e-mail is ?, ignoring case", using the database's index.
    email_equals: str
    # A column giving the order in which rows were inserted.
    insertion_order: str

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Runs one statement (inside the open transaction, if any); its rows, if it has any."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Statements in the block commit together; one writing transaction at a time, so a
        check-then-insert cannot race another process."""
        ...

    def close(self) -> None: ...


def redacted(url: str) -> str:
    """The URL without its password, for logs and messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def location(config: AuthConfig) -> str:
    """Where this configuration's accounts are, without a password."""
    return redacted(config.database_url) if config.database_url else str(config.accounts_path)


def _create_private_file(path: Path) -> None:
    """Creates the directory (0700) and the file (0600) before SQLite opens it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


def _restrict_sidecar_files(path: Path) -> None:
    # The WAL holds recent pages (password hashes, private keys) too.
    for suffix in ("-wal", "-shm"):
        sidecar = path.with_name(path.name + suffix)
        if sidecar.exists():
            os.chmod(sidecar, 0o600)


@contextmanager
def _sqlite_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if "UNIQUE" in str(exc):
            raise UniqueViolation(str(exc)) from exc
        raise StoreError(str(exc)) from exc
    except sqlite3.Error as exc:
        raise StoreError(str(exc)) from exc


class SqliteDatabase:
    """One file; WAL mode lets the console write while the service reads. Every statement is a
    short indexed lookup, so the service runs them directly on the event loop."""

    email_equals = "email = ?"  # the column is COLLATE NOCASE
    insertion_order = "rowid"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.description = str(path)
        _create_private_file(path)
        with _sqlite_errors():
            # Autocommit; multi-statement changes use `transaction()`.
            self.connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.connection.row_factory = sqlite3.Row
            self.connection.execute("PRAGMA busy_timeout = 5000")
            self.connection.execute("PRAGMA journal_mode = WAL")
            self.connection.execute("PRAGMA foreign_keys = ON")
            self.connection.executescript(SQLITE_SCHEMA)
            self._add_missing_columns()
        _restrict_sidecar_files(path)

    def _add_missing_columns(self) -> None:
        for table, column, definition in ADDED_COLUMNS:
            present = {row["name"] for row in self.execute(f"PRAGMA table_info({table})")}
            if column not in present:
                self.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with _sqlite_errors():
            return [dict(row) for row in self.connection.execute(sql, tuple(params)).fetchall()]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        # IMMEDIATE takes the write lock up front, so check-then-insert cannot race another process.
        self.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def close(self) -> None:
        self.connection.close()
