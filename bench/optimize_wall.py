"""Wall time of POST /v1/optimize/stops end to end, without the references.

The full `python -m bench optimize` needs its 60 s references (about 2.5 h on an empty cache);
this section times only our answer through the gateway, on the same seeded instances, so a
change of the request path (matrix, solver portfolio) is measured in minutes:

    python -m bench optimize_wall      # BENCH_OPTIMIZE_WALL_CITIES (munich,heidelberg), _REPEATS (3)

Per city one stack (auth, route and optimize services and the gateway as real processes,
bench.optimize.city_stack), per size and shape the median and largest of the repeats, and the
tour's duration on the instance's matrix.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from bench.optimize import WALL_GOALS_S, city_stack, end_to_end
from bench.optimize_instances import DESTINATION, ROUND_TRIP, instance, supported_sizes

CITIES = os.environ.get("BENCH_OPTIMIZE_WALL_CITIES", "munich,heidelberg").split(",")
REPEATS = int(os.environ.get("BENCH_OPTIMIZE_WALL_REPEATS", "3"))
SIZES = tuple(WALL_GOALS_S)


def city_rows(city: str) -> list[str]:
    rows = []
    sizes = [size for size in SIZES if size in supported_sizes(city)]
    with tempfile.TemporaryDirectory() as data, city_stack(city, Path(data)) as client:
        for size in sizes:
            for shape in (ROUND_TRIP, DESTINATION):
                measured = end_to_end(client, instance(city, size, shape), REPEATS)
                median, worst = statistics.median(measured.walls_s), max(measured.walls_s)
                ok = "✓" if worst <= WALL_GOALS_S[size] else "✗"
                rows.append(
                    f"| {city} | {size} | {shape} | {median:.2f} | {worst:.2f} | {WALL_GOALS_S[size]:g} | {ok} | "
                    f"{measured.method} | {measured.duration_s:.0f} |"
                )
    return rows


def run() -> str:
    rows = [row for city in CITIES for row in city_rows(city.strip())]
    return "\n".join(
        [
            "## Stop-order optimization: wall time end to end",
            "",
            f"Command: `python -m bench optimize_wall` (BENCH_OPTIMIZE_WALL_CITIES={','.join(CITIES)}, "
            f"BENCH_OPTIMIZE_WALL_REPEATS={REPEATS}). The whole POST /v1/optimize/stops through the gateway with a "
            "token (matrix from the route service, solver portfolio, tour geometry), on the seeded instances of "
            "`python -m bench optimize`, without its references; tour in seconds on the instance's matrix.",
            "",
            "| city | stops | shape | wall median (s) | wall max (s) | goal (s) | max ≤ goal | method | tour (s) |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    print(run())
