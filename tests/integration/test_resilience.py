"""Failures of the parts: Redis down and back, a service down and back, restarts keep accounts."""

from __future__ import annotations

import asyncio
import uuid

import aiohttp

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, console_ok, login

PASSWORD = "correct horse battery"


async def test_redis_down_the_platform_still_answers_and_recovers(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = f"r{uuid.uuid4().hex[:8]}@example.com"
    console_ok(platform, "add-user", email, "--password", PASSWORD)
    token = await login(http, platform, email, PASSWORD)
    headers = {"Authorization": f"Bearer {token}", **PROBLEM}

    platform.stop_process("redis")
    try:
        for _ in range(3):
            async with http.get(f"{platform.base_url}/v1/route", headers=headers) as resp:
                assert resp.status == 503  # forwarded: auth passed without Redis
                assert "RateLimit-Limit" not in resp.headers  # limits fail open
        assert await login(http, platform, email, PASSWORD)
        async with http.get(f"{platform.base_url}/health", headers=platform.internal_headers()) as resp:
            body = await resp.json()
            assert body["redis"] == "down"
            assert body["status"] == "degraded"
    finally:
        platform.start_redis()

    await asyncio.sleep(1.5)  # past the Redis back-off window
    async with http.get(f"{platform.base_url}/v1/route", headers=headers) as resp:
        assert "RateLimit-Limit" in resp.headers
    async with http.get(f"{platform.base_url}/health", headers=platform.internal_headers()) as resp:
        assert (await resp.json())["redis"] == "up"


async def test_revocation_made_while_redis_is_down_applies_when_it_returns(
    platform: Stack, http: aiohttp.ClientSession
) -> None:
    email = f"d{uuid.uuid4().hex[:8]}@example.com"
    console_ok(platform, "add-user", email, "--password", PASSWORD)
    token = await login(http, platform, email, PASSWORD)
    platform.stop_process("redis")
    try:
        console_ok(platform, "disable-user", email)
    finally:
        platform.start_redis()
    # The auth service re-publishes revocations every second here; the gateway caches 0.5 s.
    deadline = asyncio.get_running_loop().time() + 10
    status = 0
    while asyncio.get_running_loop().time() < deadline:
        async with http.get(f"{platform.base_url}/v1/route", headers={"Authorization": f"Bearer {token}"}) as resp:
            status = resp.status
        if status == 401:
            break
        await asyncio.sleep(0.3)
    assert status == 401


async def test_service_down_is_503_then_recovers_with_accounts_and_keys_kept(
    platform: Stack, http: aiohttp.ClientSession
) -> None:
    email = f"p{uuid.uuid4().hex[:8]}@example.com"
    console_ok(platform, "add-user", email, "--password", PASSWORD)
    token = await login(http, platform, email, PASSWORD)

    platform.stop_process("auth_service")
    try:
        async with http.post(
            f"{platform.base_url}/v1/authenticate", json={"user": email, "password": PASSWORD}, headers=LEGACY
        ) as resp:
            assert resp.status == 503
            assert (await resp.json())["details"][0]["code"] == "ERROR_SERVICE_UNAVAILABLE"
        async with http.get(f"{platform.base_url}/health", headers=platform.internal_headers()) as resp:
            assert resp.status == 503
            assert (await resp.json())["services"]["auth_service"]["status"] == "down"
        # Tokens are verified in the gateway, so they keep working without the auth service.
        async with http.get(f"{platform.base_url}/v1/route", headers={"Authorization": f"Bearer {token}"}) as resp:
            assert resp.status == 503
            assert "routing service" in (await resp.json(content_type=None))["detail"]
    finally:
        platform.start_process("auth_service")
        platform.wait_healthy("auth_service")

    # Accounts and signing keys survived the restart.
    assert await login(http, platform, email, PASSWORD)
    async with http.get(f"{platform.base_url}/v1/route", headers={"Authorization": f"Bearer {token}"}) as resp:
        assert resp.status == 503  # still past authentication


async def test_key_rotation_reaches_the_gateway(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = f"k{uuid.uuid4().hex[:8]}@example.com"
    console_ok(platform, "add-user", email, "--password", PASSWORD)
    old_token = await login(http, platform, email, PASSWORD)
    console_ok(platform, "rotate-key")
    # The auth service reads keys at start; restart it so it signs with the new key.
    platform.stop_process("auth_service")
    platform.start_process("auth_service")
    platform.wait_healthy("auth_service")
    new_token = await login(http, platform, email, PASSWORD)
    for token in (old_token, new_token):
        async with http.get(f"{platform.base_url}/v1/route", headers={"Authorization": f"Bearer {token}"}) as resp:
            assert resp.status == 503, await resp.text()
