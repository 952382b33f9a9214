"""Many stops on Monaco's roads, for the integration tests that need hundreds of them: the
points of car routes between well-known places (on a road, in the network every route uses),
kept only where every other point is reachable both ways."""

from __future__ import annotations

import itertools
from pathlib import Path

import aiohttp
import numpy as np

from optimize_service.stops.reachability import unreachable_stops
from tests.optimize_service.test_app import MONACO

Point = dict[str, float]


async def monaco_road_points(
    http: aiohttp.ClientSession, route_url: str, count: int, headers: dict[str, str]
) -> list[Point]:
    """`count` distinct points (≤ ~1700: 210 routes give 1777 on the extract), in a fixed order.
    `headers`: the internal credential, as the route service's port asks for it."""
    seen: dict[tuple[float, float], None] = {}
    for (_, lat_a, lon_a), (_, lat_b, lon_b) in itertools.permutations(MONACO, 2):
        url = f"{route_url}/v1/route?from={lat_a},{lon_a}&to={lat_b},{lon_b}&steps=false"
        async with http.get(url, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            geometry = (await resp.json())["routes"][0]["geometry"]["coordinates"]
        for lon, lat in geometry[3:-3]:  # not the ends, which snap from the place itself
            seen.setdefault((round(lat, 5), round(lon, 5)), None)
        if len(seen) >= count * 1.2:
            break
    points = [{"lat": lat, "lon": lon} for lat, lon in itertools.islice(seen, count)]
    assert len(points) == count, f"only {len(points)} distinct road points"
    body = {"sources": points, "destinations": points, "annotations": ["duration"]}
    async with http.post(f"{route_url}/internal/matrix", json=body, headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        durations = np.array((await resp.json())["durations"], dtype=np.float64)
    assert not unreachable_stops(durations, 0), "some road points are not connected with the others"
    return points


def process_tree(pid: int) -> list[int]:
    """`pid` and every process below it (a service's workers and their children)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree = [pid]
    for parent in tree:
        tree.extend(parents.get(parent, []))
    return tree


def status_mib(pid: int, field: str) -> float:
    """VmRSS (resident now) or VmHWM (resident at most, since start or the last reset)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def reset_peak(pid: int) -> None:
    """VmHWM back to the current RSS (Linux ≥ 4.0)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
