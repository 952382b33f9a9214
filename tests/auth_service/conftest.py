"""Fixtures of the auth service tests: a fresh accounts database per test, cheap Argon2.

Every test that uses `config` (and so `store`, `client`) runs twice: on SQLite and on
PostgreSQL (a fresh database of the session's server, dropped after the test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from auth_service.accounts import AccountStore, open_store
from auth_service.app import create_app
from auth_service.config import AuthConfig
from tests.auth_service.helpers import Client, ClientFactory, make_config
from tests.postgres_server import PostgresServer


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """"" for SQLite, else the URL of a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield ""
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.new_database()
    yield url
    server.drop_database(url)


@pytest.fixture
def config(tmp_path: Path, database_url: str) -> AuthConfig:
    return make_config(tmp_path, database_url=database_url)


@pytest.fixture
def store(config: AuthConfig) -> Iterator[AccountStore]:
    store = open_store(config)
    yield store
    store.close()


@pytest.fixture
async def client(aiohttp_client: ClientFactory, config: AuthConfig) -> Client:
    return await aiohttp_client(create_app(config))
