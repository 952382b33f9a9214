"""A fleet problem as the solver processes receive it, and a solution as they return it: plain
data shared by the portfolio (`fleet.solver`) and its searches (`fleet.vroom`, `fleet.pyvrp`)
and the reasons for what is left out (`fleet.reasons`). Its own module, so that none of those
imports another's (issue 31: no import cycles)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optimize_service.fleet.model import FleetRequest, RoutePlan, Unassigned

VROOM, PYVRP = "vroom", "pyvrp"
# A search of the portfolio, not an answer's method: VROOM for fleet.solver.CHAIN_VROOM_SHARE of the time
# limit, then PyVRP (another seed) from VROOM's plan; it answers "vroom" or "pyvrp".
CHAIN = "vroom-then-pyvrp"
# PyVRP with another seed, beside PYVRP where only PyVRP models the request (reloads, groups, …).
PYVRP_SECOND_SEED = "pyvrp-second-seed"
# A matrix cell with no road: longer than any shift (31 days), so VROOM never uses it.
NO_ROAD_S = 10_000_000
NO_ROAD_M = 100_000_000


@dataclass(frozen=True)
class Locations:
    """Index into the problem's distinct points of every vehicle end and task."""

    vehicle_starts: tuple[int, ...]
    vehicle_ends: tuple[int | None, ...]
    jobs: tuple[int, ...]
    pickups: tuple[int, ...]
    deliveries: tuple[int, ...]
    depots: tuple[int, ...] = ()  # the request's named depots (reloads)
    currents: tuple[int | None, ...] = ()  # per vehicle: where it is in a day under way (None: not given)


@dataclass(frozen=True)
class FleetProblem:
    request: FleetRequest
    locations: Locations
    durations_s: dict[str, np.ndarray]  # per road profile (FleetVehicle.profile), integer seconds, no-road cells NO_ROAD_S
    distances_m: dict[str, np.ndarray]
    threads: int = 1


@dataclass(frozen=True)
class FleetSolution:
    routes: list[RoutePlan]
    unassigned: list[Unassigned]  # reasons filled in later (fleet.reasons)
    cost: int
    time_limit_s: float
    computing_s: float
    method: str = "vroom"
    left_priority: int = 0  # the priorities of the wanted tasks left out, summed
    left_optional: int = 0  # optional jobs (with a prize) left out: skipping them paid
    left_prizes: int = 0  # their prizes, summed (in the vehicles' cost unit)

    @property
    def left_wanted(self) -> int:
        return len(self.unassigned) - self.left_optional
