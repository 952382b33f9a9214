"""Small optimizations are answered while large ones run (real processes, through the gateway).

The platform's optimize service has one small-lane and one large-lane solver process here
(tests/integration/conftest.py). Two 300-stop requests with a 3 s search occupy the large lane
for ~6.5 s, one after the other; before the lanes, a 20-stop request waited for both.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.conftest import PROBLEM, user_token
from tests.integration.monaco_points import monaco_road_points

URL = "/v1/optimize/stops"


async def optimize(
    http: aiohttp.ClientSession, stack: Stack, token: str, points: list[dict[str, float]], query: str = ""
) -> tuple[int, float, Any]:
    stops = [{"name": f"stop {i}", "coordinate": point} for i, point in enumerate(points)]
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}", **PROBLEM}
    async with http.post(f"{stack.base_url}{URL}{query}", json=stops, headers=headers) as resp:
        body = await resp.json(content_type=None)
        return resp.status, time.perf_counter() - started, body


@pytest.mark.timeout(120)
async def test_a_small_request_is_answered_while_large_ones_run(
    full_platform: Stack, http: aiohttp.ClientSession
) -> None:
    token = user_token(full_platform)
    points = await monaco_road_points(http, full_platform.url("route_service"), 620, full_platform.internal_headers())
    small = points[600:620]
    status, alone, body = await optimize(http, full_platform, token, small)
    assert status == 200 and body["solver"]["method"] == "pyvrp-ils", body
    large = [
        asyncio.create_task(optimize(http, full_platform, token, points[k * 300 : (k + 1) * 300], "?timeLimit=3"))
        for k in range(2)
    ]
    await asyncio.sleep(1.0)  # both admitted, one solving, the other waiting behind it
    answered_meanwhile = 0  # small requests answered while neither large one had ended
    while not any(task.done() for task in large) and answered_meanwhile < 3:
        status, _, body = await optimize(http, full_platform, token, small)
        assert status == 200, body
        answered_meanwhile += not any(task.done() for task in large)
    results = await asyncio.gather(*large)
    assert [status for status, _, _ in results] == [200, 200], [body for _, _, body in results]
    assert all(body["solver"]["timeLimit"] == 3 and len(body["stops"]) == 300 for _, _, body in results)
    # Queued behind a large one, the first small request would end after it: none would count.
    assert answered_meanwhile == 3, f"small requests waited for the large ones (20 stops alone: {alone:.2f} s)"
