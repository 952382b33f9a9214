"""The route service's memory for a 1000x1000 matrix, as the optimize service asks for it
(durations only), on the real processes: every worker and its large-call child.

Before the fix one worker grew from 149 to 823 MiB for two such matrices and kept 485 MiB.
Peaks are VmHWM after a reset, summed over the processes (an upper bound of the service's
peak: they need not peak at once)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from launcher.stack import Stack
from tests.integration.monaco_points import monaco_road_points, process_tree, reset_peak, status_mib

PEAK_LIMIT_MIB = 150.0  # above idle, at the peak
KEPT_LIMIT_MIB = 30.0  # above idle, afterwards (OSRM keeps its search heaps: ~11 MiB measured)


@pytest.mark.timeout(120)
async def test_a_1000_stop_matrix_costs_little_memory_and_gives_it_back(
    full_platform: Stack, http: aiohttp.ClientSession
) -> None:
    route_url = full_platform.url("route_service")
    points = await monaco_road_points(http, route_url, 1000, full_platform.internal_headers())
    await asyncio.sleep(0.5)
    tree = process_tree(full_platform.processes["route_service"].pid)
    assert len(tree) >= 3, tree  # supervisor, worker(s), large-call child(ren)
    idle = {pid: status_mib(pid, "VmRSS") for pid in tree}
    for pid in tree:
        reset_peak(pid)
    body = {"sources": points, "destinations": points, "annotations": ["duration"]}
    for round_ in range(2):
        async with http.post(
            f"{route_url}/internal/matrix", json=body, headers=full_platform.internal_headers()
        ) as resp:
            assert resp.status == 200
            answer = await resp.json()
        assert len(answer["durations"]) == 1000 and "distances" not in answer
        del answer
        peak = sum(status_mib(pid, "VmHWM") - idle[pid] for pid in tree)
        await asyncio.sleep(0.5)
        kept = sum(status_mib(pid, "VmRSS") - idle[pid] for pid in tree)
        assert peak <= PEAK_LIMIT_MIB, f"round {round_}: peak {peak:.0f} MiB above idle"
        assert kept <= KEPT_LIMIT_MIB, f"round {round_}: {kept:.0f} MiB kept above idle"
