"""The state Redis killed (SIGKILL) and started again under a running gateway: requests keep being
answered during the outage (limits fail open, nobody waits), rate limiting applies again within
a second of Redis accepting connections, and the gateway logs the outage once at each end."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import PROBLEM

pytestmark = pytest.mark.timeout(120)


async def statuses(http: aiohttp.ClientSession, url: str, headers: dict[str, str], count: int) -> list[int]:
    answers = []
    for _ in range(count):
        async with http.get(url, headers=headers) as resp:
            answers.append(resp.status)
    return answers


async def limited(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> bool:
    """Whether Redis decided this request's rate limit (the gateway fails open without it)."""
    async with http.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=5)) as resp:
        return "RateLimit-Limit" in resp.headers or resp.status == 429


def gateway_log_lines(stack: Stack, since: int, text: str) -> list[str]:
    log = (stack.log_dir / "gateway.log").read_bytes()[since:].decode(errors="replace")
    return [line for line in log.splitlines() if text in line]


async def metric(http: aiohttp.ClientSession, stack: Stack, line_start: str) -> float:
    async with http.get(f"{stack.base_url}/metrics", headers=stack.internal_headers()) as resp:
        text = await resp.text()
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start)]
    assert len(values) == 1, (line_start, values)
    return values[0]


async def test_rate_limits_apply_again_once_the_gateway_sees_the_state_redis_back(
    platform: Stack, http: aiohttp.ClientSession
) -> None:
    """Events, not a stopwatch: the gateway fails open while Redis is down, its background probe
    notices the new server (one log line), and the very next requests are limited again. How
    soon the probe looks (twice a second) and that calls never wait on a dead Redis are counted
    in tests/common/test_redis_outages.py and test_redis.py."""
    # demo: 2 requests/s, bursts of 5 (TEST_ENV); the upstream is not deployed, so a request that
    # passes the limit is a quick 503 and one that does not is a 429.
    headers = {"Authorization": f"Bearer {platform.login('demo')}", **PROBLEM}
    url = f"{platform.base_url}/v1/route"
    log_start = (platform.log_dir / "gateway.log").stat().st_size
    assert 429 in await statuses(http, url, headers, 8)

    platform.processes["redis"].kill()
    platform.processes["redis"].wait(timeout=5)
    during = [await limited(http, url, headers) for _ in range(30)]
    async with http.get(f"{platform.base_url}/health", headers=platform.internal_headers()) as resp:
        assert (await resp.json())["redis"] == "down"
    assert await metric(http, platform, 'redis_available{role="state"}') == 0

    platform.start_redis()  # returns once the new server accepts connections
    deadline = time.monotonic() + 30  # a guard against a hang, not a speed goal
    while not gateway_log_lines(platform, log_start, "redis (state) reachable again"):
        assert time.monotonic() < deadline, "the gateway never saw the state Redis back"
        await asyncio.sleep(0.05)
    first = await limited(http, url, headers)
    after = await statuses(http, url, headers, 8)

    assert not any(during), "limits cannot apply while Redis is down: the gateway fails open"
    assert first, "the first request after the gateway saw Redis back was not limited"
    assert 429 in after, "the limit is enforced again, not only reported"
    assert await metric(http, platform, 'redis_available{role="state"}') == 1
    assert await metric(http, platform, 'redis_outages_total{role="state"}') == 1
    assert len(gateway_log_lines(platform, log_start, "redis (state) unreachable")) == 1
    assert len(gateway_log_lines(platform, log_start, "redis (state) reachable again")) == 1
