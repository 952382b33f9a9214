"""A throwaway PostgreSQL server for the tests: Debian's `postgresql` (installed with apt-get
when missing and we may), `initdb` into a temporary directory, `pg_ctl` on a free loopback
port with a random password, stopped and removed at the end.

`PostgresServer.start()` raises `PostgresUnavailable` with the reason when it cannot run here;
the fixture turns that into a skip that says why.
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


def bin_dir() -> Path | None:
    """The directory of `initdb` and `pg_ctl`: on PATH, else Debian's newest version."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    return versions[-1].parent if versions else None


def install_postgresql() -> None:
    """apt-get install postgresql (Debian); raises PostgresUnavailable saying why it cannot."""
    if shutil.which("apt-get") is None:
        raise PostgresUnavailable("PostgreSQL is not installed and there is no apt-get to install it")
    if os.geteuid() != 0:
        raise PostgresUnavailable("PostgreSQL is not installed; installing it needs root (apt-get install postgresql)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "postgresql"]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
        if result.returncode != 0:
            raise PostgresUnavailable(f"{' '.join(command)} failed: {result.stderr.strip()[-500:]}")


def _server_user() -> str | None:
    """initdb refuses root: as root the server runs as Debian's `postgres` user."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SUPERUSER)
    except KeyError as exc:
        raise PostgresUnavailable("running as root and there is no 'postgres' user to run the server") from exc
    return SUPERUSER


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
        if binaries is None:
            install_postgresql()
            binaries = bin_dir()
        if binaries is None:
            raise PostgresUnavailable("apt-get installed postgresql but no initdb/pg_ctl was found")
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
        binaries = bin_dir()
        try:
            if binaries is not None and (self.data / "postmaster.pid").exists():
                self._pg_ctl(binaries, _server_user(), "stop", "-m", "fast", "-w")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
