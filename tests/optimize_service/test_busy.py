"""A full queue over HTTP: 503 OPTIMIZE_ERROR_BUSY with Retry-After, in both error formats,
while small problems are still answered (real route service on Monaco, solver in threads)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp.test_utils import TestClient

from optimize_service.state import STATE_KEY
from optimize_service.stops.solver import estimate_s
from tests.optimize_service.test_app import LEGACY, PROBLEM, URL, stops

Client = TestClient[Any, Any]


async def post(client: Client, body: Any, query: str, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    response = await client.post(
        f"{URL}{query}", data=orjson.dumps(body), headers={"Content-Type": "application/json", **headers}
    )
    return response.status, dict(response.headers), await response.json(content_type=None)


async def test_a_full_large_lane_answers_503_with_retry_after(client: Client) -> None:
    large = client.app[STATE_KEY].optimizer.scheduler.large
    assert large.queue_size is not None
    # The lane's own admissions: one request solving for 6 s, the queue full behind it (1000
    # stops asking for 6 s each: at the default 8 s, four already fill OPTIMIZE_QUEUE_SECONDS).
    held = [large.admit(estimate_s(1000, 6.0)) for _ in range(large.queue_size + 1)]
    held[0].started = large.clock()
    try:
        status, headers, legacy = await post(client, stops(15), "?timeLimit=5", LEGACY)  # 5 s: large
        assert status == 503, legacy
        assert legacy["details"][0]["code"] == "OPTIMIZE_ERROR_BUSY" and legacy["status"] == 503
        retry = int(headers["Retry-After"])
        # Room after the one solving (~4.25 s left) and one more of the queue: ≤ 9 s.
        assert 4 <= retry <= 9
        status, headers, problem = await post(client, stops(15), "?timeLimit=5", PROBLEM)
        assert status == 503 and headers["Content-Type"].startswith("application/problem+json")
        assert problem["type"] == "/problems/optimize/busy" and problem["title"] == "The optimizer is busy"
        assert problem["detail"].startswith(f"{large.queue_size + 1} large optimizations hold about ")
        assert 4 <= int(headers["Retry-After"]) <= 9
        # A small problem has its own lane.
        status, _, body = await post(client, stops(15), "?timeLimit=0.3", PROBLEM)
        assert status == 200 and body["solver"]["method"] == "pyvrp-ils" and body["solver"]["timeLimit"] == 0.3
    finally:
        for job in held:
            large.release(job)
    status, _, body = await post(client, stops(15), "?timeLimit=1.5", PROBLEM)
    assert status == 200 and body["solver"]["timeLimit"] == 1.5
    assert not large.jobs


async def test_health_reports_the_lanes(client: Client) -> None:
    response = await client.get("/health")
    lanes = (await response.json())["checks"]["lanes"]
    assert set(lanes) == {"small", "large"} and lanes["large"]["queueSize"] == 4
    assert lanes["small"]["admitted"] == 0
