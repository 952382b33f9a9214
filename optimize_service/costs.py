"""What an optimization may ask and what it costs, by the caller's tier (no aiohttp here).

Two rules bound the work of one request before any of it starts (issue 29):

- **Time limit**: `timeLimit` is capped per tier (`OPTIMIZE_TIME_LIMITS`, default
  `common.tiers.DEFAULT_OPTIMIZE_SECONDS`: demo 2 s, standard 10 s, unlimited 30 s). More is a
  400 `ERROR_INVALID_PARAMETER` naming the cap (the same answer as a value beyond the API's 30 s:
  the parameter's range is the tier's); a default above the cap is cut to it.
- **Matrix cells**: the optimizer's road matrix (n x n stops, per vehicle kind for fleets) counts
  against the tier's `/v1/matrix` cells (`ROUTE_MATRIX_CELLS`: demo 1000, standard 10 000,
  unlimited 1 000 000), so a synchronous request may have at most sqrt(cells) places: demo 31,
  standard 100, unlimited 1000. Larger ones run as jobs (`?async=true`), whose cells are what the
  tier's per-request cost pays for at the dearest engine's price (`job_cells`: demo 50 000,
  standard 600 000, unlimited 10 000 000; never fewer than the synchronous cells): its
  matrices alone then fit the cap whichever engine computes them, and the optimizer's memory is
  bounded (a cell is two int64 in the solver's arrays, more as JSON on the way). More is 413
  `OPTIMIZE_ERROR_TOO_MANY_STOPS` naming the cells.

Calls on nobody's behalf (no caller: internal calls and tests) have neither rule, as the
admission charges them nothing (common.admission).

The price (`common.admission.cost`, in work units of ~1 ms of one core) is the solver's seconds
on every core it runs on, plus the road matrix:

- solver: `stops.solver.estimate_s` (the time limit plus the set-up measured at 0.72 s for 1000
  stops) on each process of the lane that searches at once (two on a two-core machine: the
  portfolio), x 1000;
- matrix, by the engine the route service computes it on (route_service.providers.registry):
  OSRM's CH for car and truck (the import's default OSRM_VEHICLES) without truck dimensions or
  avoid areas, 0.002 units a cell (in process, durations and distances, best of 3 CPU times:
  100 x 100 11.8-24.1 ms, 300 x 300 60-95 ms, 1000 x 1000 0.57-0.88 s on Munich and Heidelberg;
  the JSON hop of a 1000 x 1000 matrix added 0.13 s: 0.7-2.4 us a cell). Every other kind (a
  truck's dimensions, an avoid area, bicycle, pedestrian) goes to Valhalla (issue 56), a Dijkstra
  a source (TimeDistanceMatrix), its cost the map's, not the cells' (larger fleets pay more than
  they use, smaller maps too): at 100 places the dearest map's 30 ms a source (Heidelberg; 9-10
  on Munich, Helsinki and Monaco), 0.3 units a cell; a bicycle's or pedestrian's 45 ms: 0.45
  (route_service.costs). So do matrices at a time (a request's explicit startTime): priced as
  Valhalla's, though the route service answers them with OSRM where no road with rules by time
  is near (an upper bound).

A 1000-stop request at its default 8 s on two cores: 17 500 + 2 000 = 19 500 units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from common.admission import Caller, Cost, CostBudgets, cost
from common.errors import TooManyStops
from common.params import short
from common.tiers import TierLimits
from common.vehicles import VEHICLE_TABLE

# Work units of a road matrix, by engine (see above).
UNITS_PER_CELL = 0.002  # OSRM
UNITS_PER_OSRM_POINT = 0.2  # OSRM's per-point share, as route_service.costs.MATRIX_POINT_UNITS
UNITS_PER_VALHALLA_CELL = 0.3  # Valhalla, motor vehicles
UNITS_PER_VALHALLA_CELL_UNMOTORIZED = 0.45  # Valhalla, a bicycle or a pedestrian
# The vehicles OSRM is built for by default (route_service.importing.importer.DEFAULT_OSRM_VEHICLES):
# a deployment that builds more pays Valhalla's price for them, an upper bound.
OSRM_VEHICLES = frozenset({"car", "truck"})
UNITS_PER_SOLVER_SECOND = 1000.0
# What a job's cells are sized at: 0.1 units a cell (the dearest engine's price when jobs were
# capped, issue 55). Valhalla's is 3x that: a job at the cap with restricted matrices is refused
# by its price (413 cost too high) rather than by its cells.
JOB_CELL_UNITS = 0.1


def matrix_units(vehicle: str, restricted: bool, places: int) -> float:
    """A places x places matrix on the engine that computes it: OSRM for its vehicles unless
    `restricted` (truck dimensions, an avoid area, a route type or provider OSRM does not serve,
    a start time), else Valhalla."""
    if vehicle in OSRM_VEHICLES and not restricted:
        return places * places * UNITS_PER_CELL + 2 * places * UNITS_PER_OSRM_POINT
    motorized = VEHICLE_TABLE[vehicle].motorized if vehicle in VEHICLE_TABLE else False
    return places * places * (UNITS_PER_VALHALLA_CELL if motorized else UNITS_PER_VALHALLA_CELL_UNMOTORIZED)


def job_cells(budgets: CostBudgets, tier: str, synchronous: int) -> int | None:
    """A job's cells: what the tier's per-request cost pays at the dearest engine (None: no cap)."""
    per_request = budgets.for_tier(tier).per_request
    return max(synchronous, int(per_request / JOB_CELL_UNITS)) if per_request else None


@dataclass(frozen=True)
class Allowance:
    """What one caller's tier lets one optimization ask."""

    tier: str
    max_time_limit_s: float  # the tier's cap of timeLimit
    matrix_cells: int | None  # cells the optimizer's matrices may have; None: no bound
    job: bool = False  # a job's (matrix_cells: job_cells)


@dataclass(frozen=True)
class TierRules:
    """The per-tier numbers of the optimize service's configuration."""

    time_limits: TierLimits  # OPTIMIZE_TIME_LIMITS, whole seconds
    matrix_cells: TierLimits  # ROUTE_MATRIX_CELLS, shared with POST /v1/matrix
    budgets: CostBudgets | None = None  # COST_BUDGETS: a job's cells; None: jobs have no cell cap

    def allowance(self, caller: Caller | None, api_max_time_limit_s: float) -> Allowance | None:
        """None on nobody's behalf: no tier bounds the request."""
        if caller is None:
            return None
        seconds, tier = self.time_limits.for_tier(caller.tier)
        cells: int | None = self.matrix_cells.for_tier(caller.tier)[0]
        if caller.job:
            cells = job_cells(self.budgets, caller.tier, cells or 0) if self.budgets is not None else None
        return Allowance(tier, min(float(seconds), api_max_time_limit_s), cells, caller.job)


def check_cells(places: int, kinds: int, allowance: Allowance | None, what: str, parameter: str) -> None:
    """413 when the optimizer's matrices (places x places, one per vehicle kind) pass the tier's cells."""
    if allowance is None or allowance.matrix_cells is None:
        return
    cells = places * places * kinds
    if cells > allowance.matrix_cells:
        most = math.isqrt(allowance.matrix_cells // max(1, kinds))
        if allowance.job:
            who, why, hint = "jobs", " (what its per-request cost pays for at 0.1 units a cell)", "split it"
        else:
            who, why, hint = "synchronous requests", "", "send it with ?async=true (a job) for more"
        raise TooManyStops(
            f"{what} need {'a' if kinds == 1 else kinds} {places} x {places} road matrix{'' if kinds == 1 else 'es'} "
            f"({cells} cells), but the {allowance.tier} tier's {who} may have {allowance.matrix_cells} cells"
            f"{why}: at most {most} places{'' if kinds == 1 else f' with {kinds} vehicle kinds'}; {hint}",
            parameter=parameter,
        )


def tier_cap_message(least: float, allowance: Allowance, raw: Any) -> str:
    """The range of `timeLimit` as the caller's tier narrows it (OPTIMIZE_TIME_LIMITS)."""
    return (
        f"must be a number of seconds between {least} and {allowance.max_time_limit_s:g}, the most the "
        f"{allowance.tier} tier allows, got {short(raw)}"
    )


def capped_default(default_s: float, allowance: Allowance | None) -> float | None:
    """The time limit to use instead of a default above the tier's cap (None: the default stands)."""
    if allowance is None or default_s <= allowance.max_time_limit_s:
        return None
    return allowance.max_time_limit_s


def price(solver_s: float, cores: int, cells: int, matrix_units: float, measure: str) -> Cost:
    units = solver_s * max(1, cores) * UNITS_PER_SOLVER_SECOND + matrix_units
    return cost(units, f"{measure}: {solver_s:.2f} s of search on {max(1, cores)} core(s), {cells} matrix cells",
                heavy=True)  # fmt: skip


def cost_of_stops(stops: int, solver_s: float, cores: int, vehicle: str = "car", restricted: bool = False) -> Cost:
    """A stop order whose solve keeps `cores` processes busy (an exact solve one, a search each of
    the lane's parallel ones)."""
    if stops <= 1:
        return price(solver_s, cores, 0, 0.0, f"{stops} stops")
    return price(solver_s, cores, stops * stops, matrix_units(vehicle, restricted, stops), f"{stops} stops")


def cost_of_fleet(places: int, profiles: list[tuple[str, bool]], time_limit_s: float, parallel: int) -> Cost:
    """Fleet routing: the portfolio's searches on the lane's processes, and a matrix per road
    profile ((vehicle, restricted) each) on the engine that computes it (`matrix_units`)."""
    units = sum(matrix_units(vehicle, restricted, places) for vehicle, restricted in profiles)
    return price(time_limit_s, parallel, places * places * len(profiles), units,
                 f"{places} places, {len(profiles)} road profile(s)")  # fmt: skip
