"""The PostgreSQL test server says why it cannot run instead of failing (its tests then skip)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.postgres_server import PostgresUnavailable, install_postgresql


def test_without_apt_get_the_reason_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(PostgresUnavailable, match="no apt-get to install it"):
        install_postgresql()


def test_without_root_the_reason_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(PostgresUnavailable, match="needs root"):
        install_postgresql()
