"""Fixtures of the auth service tests: a fresh accounts database per test, cheap Argon2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from auth_service.accounts import AccountStore
from auth_service.app import create_app
from auth_service.config import AuthConfig
from tests.auth_service.helpers import Client, ClientFactory, make_config


@pytest.fixture
def config(tmp_path: Path) -> AuthConfig:
    return make_config(tmp_path)


@pytest.fixture
def store(config: AuthConfig) -> Iterator[AccountStore]:
    store = AccountStore(config.accounts_path)
    yield store
    store.close()


@pytest.fixture
async def client(aiohttp_client: ClientFactory, config: AuthConfig) -> Client:
    return await aiohttp_client(create_app(config))
