"""Configuration of the auth service, from the environment (see `BaseConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from common.config import BaseConfig, optional_path, setting
from common.tiers import TIERS as TIERS  # re-exported: the accounts check tiers against it

# Fixed by the API contract: no token may live longer than 30 days.
MAX_TOKEN_SECONDS = 2_592_000
# Demo tokens are for trying the API, so they are kept short.
MAX_DEMO_TOKEN_SECONDS = 86_400
# "admin" accounts manage other accounts from /console (and the API under /v1/admin).
ROLES = ("user", "admin")
# Password hashes waiting per hashing slot before logins are refused with 503: with Argon2's
# defaults (~0.2 CPU-s a hash) the last one waits about a second, far inside the gateway's 10 s.
QUEUE_PER_SLOT = 4


@dataclass
class AuthConfig(BaseConfig):
    SERVICE: ClassVar[str] = "auth_service"
    # None: `<data_dir>/auth/accounts.sqlite3` (see `accounts_path`); unused with `database_url`.
    db_path: Path | None = setting("AUTH_DB_PATH", "", parse=optional_path)
    # postgresql://user:password@host:port/dbname: the accounts on PostgreSQL; "" keeps SQLite.
    database_url: str = setting("DATABASE_URL", "", secret=True)
    # Connections each process keeps to PostgreSQL at most.
    database_pool_size: int = setting("DATABASE_POOL_SIZE", 4, at_least=1)
    jwt_issuer: str = setting("JWT_ISSUER", "routing-api")
    jwt_audience: str = setting("JWT_AUDIENCE", "routing-api")
    default_token_seconds: int = setting("DEFAULT_TOKEN_SECONDS", 3600, at_least=1, at_most=MAX_TOKEN_SECONDS)
    revocation_sync_seconds: int = setting("REVOCATION_SYNC_SECONDS", 10, at_least=1)
    # argon2-cffi's defaults (RFC 9106's second recommendation); tests lower them.
    argon2_time_cost: int = setting("ARGON2_TIME_COST", 3)
    argon2_memory_kib: int = setting("ARGON2_MEMORY_KIB", 65_536)
    argon2_parallelism: int = setting("ARGON2_PARALLELISM", 4)
    # Password hashes running at once in each process; 0: one per CPU the process may use.
    password_hash_slots: int = setting("PASSWORD_HASH_SLOTS", 0, at_least=0)
    # Hashes that may wait per slot; beyond, 503 AUTH_ERROR_BUSY with Retry-After at once.
    password_hash_queue_per_slot: int = setting("PASSWORD_HASH_QUEUE_PER_SLOT", QUEUE_PER_SLOT, at_least=0)
    # Failed logins of one account (from any address) before its back-off starts (auth_service.throttle).
    login_free_failures: int = setting("LOGIN_FREE_FAILURES", 5, at_least=1)
    # The back-off doubles with each further failure, from 1 s up to this.
    login_backoff_max_seconds: int = setting("LOGIN_BACKOFF_MAX_SECONDS", 60, at_least=1)
    # An account's failures are forgotten after this long without one.
    login_failure_window_seconds: int = setting("LOGIN_FAILURE_WINDOW_SECONDS", 900, at_least=1)
    # Failed logins from one client address (any accounts) before its back-off starts; 0: none.
    # More than an account's: people behind one office address mistype (auth_service.throttle).
    login_address_free_failures: int = setting("LOGIN_ADDRESS_FREE_FAILURES", 10, at_least=0)
    # Active (not revoked, not expired) API keys one account may hold.
    max_api_keys_per_account: int = setting("MAX_API_KEYS_PER_ACCOUNT", 20, at_least=1)

    @property
    def auth_dir(self) -> Path:
        return self.data_dir / "auth"

    @property
    def accounts_path(self) -> Path:
        return self.db_path if self.db_path is not None else self.auth_dir / "accounts.sqlite3"

    @property
    def demo_credentials_path(self) -> Path:
        return self.auth_dir / "demo-credentials.txt"

    def validate(self) -> None:
        if self.database_url and not self.database_url.startswith(("postgresql://", "postgres://")):
            raise SystemExit("configuration error: DATABASE_URL must start with postgresql:// (or be unset for SQLite)")
