"""Configuration of the auth service, from the environment (see `BaseConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from common.config import BaseConfig, env_int, env_str
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
    # None: `<data_dir>/auth/accounts.sqlite3` (see `accounts_path`); unused with `database_url`.
    db_path: Path | None = None
    # postgresql://user:password@host:port/dbname: the accounts on PostgreSQL; "" keeps SQLite.
    database_url: str = ""
    # Connections each process keeps to PostgreSQL at most.
    database_pool_size: int = 4
    jwt_issuer: str = "routing-api"
    jwt_audience: str = "routing-api"
    default_token_seconds: int = 3600
    revocation_sync_seconds: int = 10
    # argon2-cffi's defaults (RFC 9106's second recommendation); tests lower them.
    argon2_time_cost: int = 3
    argon2_memory_kib: int = 65_536
    argon2_parallelism: int = 4
    # Password hashes running at once in each process; 0: one per CPU the process may use.
    password_hash_slots: int = 0
    # Hashes that may wait per slot; beyond, 503 AUTH_ERROR_BUSY with Retry-After at once.
    password_hash_queue_per_slot: int = QUEUE_PER_SLOT
    # Failed logins of one account (from any address) before its back-off starts (auth_service.throttle).
    login_free_failures: int = 5
    # The back-off doubles with each further failure, from 1 s up to this.
    login_backoff_max_seconds: int = 60
    # An account's failures are forgotten after this long without one.
    login_failure_window_seconds: int = 900
    # Failed logins from one client address (any accounts) before its back-off starts; 0: none.
    # More than an account's: people behind one office address mistype (auth_service.throttle).
    login_address_free_failures: int = 10
    # Active (not revoked, not expired) API keys one account may hold.
    max_api_keys_per_account: int = 20

    @property
    def auth_dir(self) -> Path:
        return self.data_dir / "auth"

    @property
    def accounts_path(self) -> Path:
        return self.db_path if self.db_path is not None else self.auth_dir / "accounts.sqlite3"

    @property
    def demo_credentials_path(self) -> Path:
        return self.auth_dir / "demo-credentials.txt"

    @classmethod
    def from_env(cls, service: str = "auth_service", **overrides: Any) -> Self:
        db_path = env_str("AUTH_DB_PATH", "")
        values: dict[str, Any] = {
            "db_path": Path(db_path) if db_path else None,
            "database_url": env_str("DATABASE_URL", ""),
            "database_pool_size": env_int("DATABASE_POOL_SIZE", 4),
            "jwt_issuer": env_str("JWT_ISSUER", "routing-api"),
            "jwt_audience": env_str("JWT_AUDIENCE", "routing-api"),
            "default_token_seconds": env_int("DEFAULT_TOKEN_SECONDS", 3600),
            "revocation_sync_seconds": env_int("REVOCATION_SYNC_SECONDS", 10),
            "argon2_time_cost": env_int("ARGON2_TIME_COST", 3),
            "argon2_memory_kib": env_int("ARGON2_MEMORY_KIB", 65_536),
            "argon2_parallelism": env_int("ARGON2_PARALLELISM", 4),
            "password_hash_slots": env_int("PASSWORD_HASH_SLOTS", 0),
            "password_hash_queue_per_slot": env_int("PASSWORD_HASH_QUEUE_PER_SLOT", QUEUE_PER_SLOT),
            "login_free_failures": env_int("LOGIN_FREE_FAILURES", 5),
            "login_backoff_max_seconds": env_int("LOGIN_BACKOFF_MAX_SECONDS", 60),
            "login_failure_window_seconds": env_int("LOGIN_FAILURE_WINDOW_SECONDS", 900),
            "login_address_free_failures": env_int("LOGIN_ADDRESS_FREE_FAILURES", 10),
            "max_api_keys_per_account": env_int("MAX_API_KEYS_PER_ACCOUNT", 20),
        }
        values.update(overrides)
        config = super().from_env(service, **values)
        config.validate()
        return config

    def validate(self) -> None:
        if not 1 <= self.default_token_seconds <= MAX_TOKEN_SECONDS:
            raise SystemExit(f"configuration error: DEFAULT_TOKEN_SECONDS must be between 1 and {MAX_TOKEN_SECONDS}")
        if self.database_url and not self.database_url.startswith(("postgresql://", "postgres://")):
            raise SystemExit("configuration error: DATABASE_URL must start with postgresql:// (or be unset for SQLite)")
        if self.database_pool_size < 1:
            raise SystemExit("configuration error: DATABASE_POOL_SIZE must be at least 1")
        if self.revocation_sync_seconds < 1:
            raise SystemExit("configuration error: REVOCATION_SYNC_SECONDS must be at least 1")
        at_least = {
            "PASSWORD_HASH_SLOTS": (self.password_hash_slots, 0),
            "PASSWORD_HASH_QUEUE_PER_SLOT": (self.password_hash_queue_per_slot, 0),
            "LOGIN_FREE_FAILURES": (self.login_free_failures, 1),
            "LOGIN_BACKOFF_MAX_SECONDS": (self.login_backoff_max_seconds, 1),
            "LOGIN_FAILURE_WINDOW_SECONDS": (self.login_failure_window_seconds, 1),
            "LOGIN_ADDRESS_FREE_FAILURES": (self.login_address_free_failures, 0),
            "MAX_API_KEYS_PER_ACCOUNT": (self.max_api_keys_per_account, 1),
        }
        for name, (value, minimum) in at_least.items():
            if value < minimum:
                raise SystemExit(f"configuration error: {name} must be at least {minimum}")
