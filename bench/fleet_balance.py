"""What fair shares cost (issue 36, item 4): POST /v1/optimize/routes with and without
`objective: {"balance": "duration"}` on the fleet bench's seeded 100 jobs x 5 vehicles of every
shared city (bench.fleet's instances: one depot, 8 h shifts, capacities and windows that bind),
each city on its own platform and all five on one platform serving the merged map.

Per request: the longest route's working time (leaving the depot to coming back), the sum of
every route's working time, the driving time, the jobs left out and the wall time, through the
gateway (real processes), each answer checked by the independent feasibility checker on the
platform's own road matrix (POST /v1/matrix at the request's startTime, as the planner asks for it:
without departureTime another provider answers, and bench.fleet's pool matrix differs too). The balanced plan's cost is its
driving and working time against the cheapest plan's, in the same run.

    python -m bench fleet_balance
    BENCH_BALANCE_CITIES=monaco python -m bench fleet_balance   # a quick run
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.fleet import BENCH_CITIES, fleet_instance, platform_roads
from bench.optimize import SMALL_SIZE, city_stack, http, merged_stack
from bench.optimize_instances import ROUND_TRIP, instance
from optimize_service.fleet.check import check_feasible

CITIES = [c for c in os.environ.get("BENCH_BALANCE_CITIES", ",".join(BENCH_CITIES)).split(",") if c]
BALANCED = {"objective": {"balance": "duration"}}


def working_s(route: dict[str, Any]) -> float:
    steps = route["steps"]
    return (datetime.fromisoformat(steps[-1]["arrival"]) - datetime.fromisoformat(steps[0]["departure"])).total_seconds()


def measured(client: Any, city: str) -> list[str]:
    """The city's two rows: the cheapest plan and the balanced one."""
    inst = fleet_instance(city, 100, 5)
    url, headers = client.stack.base_url + "/v1/optimize/routes", {"Authorization": f"Bearer {client.token}"}
    http(url, inst.body, headers)  # warms the solver processes
    roads = platform_roads(client, inst.body)
    rows, cheapest = [], None
    for name, extra in (("cheapest", {}), ("balanced", BALANCED)):
        body = {**inst.body, **extra}
        answer = http(url, body, headers)
        assert answer.status == 200, (answer.status, answer.body)
        check_feasible(body, answer.body, roads)
        routes = answer.body["routes"]
        longest, work = max(working_s(r) for r in routes), sum(working_s(r) for r in routes)
        driving = sum(r["duration"] for r in routes)
        left = len(answer.body["unassigned"])
        if cheapest is None:
            cheapest = (longest, work, driving)
        ratios = f"{longest / cheapest[0]:.2f}x | {work / cheapest[1]:.2f}x | {driving / cheapest[2]:.2f}x"
        rows.append(f"| {city} | {name} | {len(routes)} | {left} | {longest / 3600:.2f} | {work / 3600:.2f} | "
                    f"{driving / 3600:.2f} | {ratios} | {answer.wall_s:.2f} |")  # fmt: skip
    return rows


def run() -> str:
    rows: list[str] = []
    for city in CITIES:
        with tempfile.TemporaryDirectory() as data, city_stack(city, Path(data)) as client:
            rows += measured(client, city)
    with tempfile.TemporaryDirectory() as data, merged_stack(Path(data), instance(CITIES[0], SMALL_SIZE, ROUND_TRIP)) as client:
        rows += [row.replace(f"| {city} |", f"| {city} (merged map) |", 1) for city in CITIES for row in measured(client, city)]
    return "\n".join(
        [
            "## Fair shares: what balancing the routes costs (issue 36, item 4)",
            "",
            f"Command: `python -m bench fleet_balance` (BENCH_BALANCE_CITIES={','.join(CITIES)}).",
            "",
            "POST /v1/optimize/routes through the gateway, bench.fleet's seeded 100 jobs x 5 vehicles, default "
            "time limit, one request each after a warm-up; every answer passed the feasibility checker. Hours; "
            "ratios against the cheapest plan of the same city in the same run.",
            "",
            "| city | plan | routes | left out | longest route (h) | work, all routes (h) | driving (h) | "
            "longest / cheapest | work / cheapest | driving / cheapest | wall (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
