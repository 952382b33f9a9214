"""Key rotation reaching the gateway: an unknown key id is looked up at once, not after a fixed
gap, and forged ids cannot make it hammer the auth service. A real JWKS endpoint over HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from common.client import ServiceClient
from gateway.jwks import UNKNOWN_KEY_MAX_WAITING, UNKNOWN_KEY_MIN_GAP_SECONDS, JwksRefresher
from gateway.tokens import TokenVerifier
from tests.gateway.keys import AUDIENCE, ISSUER, TestKey


class KeyServer:
    """Serves the current keys and counts the fetches."""

    def __init__(self, *keys: TestKey) -> None:
        self.keys = list(keys)
        self.fetches = 0

    async def jwks(self, _request: web.Request) -> web.Response:
        self.fetches += 1
        body: dict[str, Any] = {"keys": [key.jwk() for key in self.keys]}
        return web.json_response(body)


@pytest.fixture
async def served() -> Any:
    server = KeyServer(TestKey("k1"))
    app = web.Application()
    app.router.add_get("/jwks", server.jwks)
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    async with aiohttp.ClientSession() as session:
        verifier = TokenVerifier(ISSUER, AUDIENCE)
        endpoint = ServiceClient("JWKS endpoint", str(test_server.make_url("/jwks")), session=session)
        refresher = JwksRefresher(endpoint, verifier, refresh_seconds=300)
        await refresher.refresh()
        yield server, refresher
    await test_server.close()


async def test_a_rotated_key_is_found_right_after_a_fetch(served: Any) -> None:
    server, refresher = served
    server.keys.append(TestKey("k2"))  # rotated just after the gateway's last fetch
    started = time.monotonic()
    assert await refresher.refresh_for_unknown("k2")
    assert time.monotonic() - started <= UNKNOWN_KEY_MIN_GAP_SECONDS + 0.5
    assert server.fetches == 2


async def test_concurrent_requests_with_a_new_key_share_one_fetch(served: Any) -> None:
    server, refresher = served
    server.keys.append(TestKey("k2"))
    found = await asyncio.gather(*(refresher.refresh_for_unknown("k2") for _ in range(5)))
    assert found == [True] * 5
    assert server.fetches == 2


async def test_a_forged_id_is_looked_up_once_per_retry_period(served: Any) -> None:
    server, refresher = served
    assert not await refresher.refresh_for_unknown("forged")
    assert not await refresher.refresh_for_unknown("forged")
    assert server.fetches == 2  # the start's fetch and one lookup


async def test_a_flood_of_forged_ids_is_refused_without_waiting(served: Any) -> None:
    server, refresher = served
    started = time.monotonic()
    found = await asyncio.gather(*(refresher.refresh_for_unknown(f"forged-{i}") for i in range(40)))
    elapsed = time.monotonic() - started
    assert not any(found)
    # At most the waiting lookups ran, one fetch each, at least the gap apart.
    assert server.fetches - 1 <= UNKNOWN_KEY_MAX_WAITING
    assert elapsed <= UNKNOWN_KEY_MAX_WAITING * (UNKNOWN_KEY_MIN_GAP_SECONDS + 0.3)
