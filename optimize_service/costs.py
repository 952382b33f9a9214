"""What an optimization may ask and what it costs, by the caller's tier (no aiohttp here).

Two rules bound the work of one request before any of it starts (issue 29):

- **Time limit**: `timeLimit` is capped per tier (`OPTIMIZE_TIME_LIMITS`, default
  `common.tiers.DEFAULT_OPTIMIZE_SECONDS`: demo 2 s, standard 10 s, unlimited 30 s). More is a
  400 `ERROR_INVALID_PARAMETER` naming the cap (the same answer as a value beyond the API's 30 s:
  the parameter's range is the tier's); a default above the cap is cut to it.
- **Matrix cells**: the optimizer's road matrix (n x n stops, per vehicle kind for fleets) counts
  against the tier's `/v1/matrix` cells (`ROUTE_MATRIX_CELLS`: demo 1000, standard 10 000,
  unlimited 1 000 000), so a synchronous request may have at most sqrt(cells) places: demo 31,
  standard 100, unlimited 1000. Larger ones run as jobs (`?async=true`): a job's replay is bounded
  by the tier's per-request cost instead, never holds a client's connection, and its runners are
  shared fairly between accounts. More is 413 `OPTIMIZE_ERROR_TOO_MANY_STOPS` naming the cells.

Calls on nobody's behalf (no caller: internal calls and tests) have neither rule, as the
admission charges them nothing (common.admission).

The price (`common.admission.cost`, in work units of ~1 ms of one core) is the solver's seconds
on every core it runs on, plus the road matrix:

- solver: `scheduler.estimate_s` (the time limit plus the set-up measured at 0.72 s for 1000
  stops) on each process of the lane that searches at once (two on a two-core machine: the
  portfolio), x 1000;
- matrix: 0.002 units a cell. Measured (in process, OSRM many-to-many, durations and distances,
  best of 3 CPU times): 100 x 100 11.8-24.1 ms, 300 x 300 60-95 ms, 1000 x 1000 0.57-0.88 s on
  Munich and Heidelberg; the JSON hop of a 1000 x 1000 matrix added 0.13 s (orjson out, in and the
  array). So 0.7-2.4 us a cell, the small matrices dearest: 2 us a cell.

A 1000-stop request at its default 8 s on two cores: 17 500 + 2 000 = 19 500 units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from common.admission import Caller, Cost, cost
from common.errors import TooManyStops
from common.tiers import TierLimits
from optimize_service.stops.exact import EXACT_MAX_STOPS

# Work units a cell of the road matrix costs (see above: ~2 us of one core each).
UNITS_PER_CELL = 0.002
UNITS_PER_SOLVER_SECOND = 1000.0


@dataclass(frozen=True)
class Allowance:
    """What one caller's tier lets one optimization ask."""

    tier: str
    max_time_limit_s: float  # the tier's cap of timeLimit
    matrix_cells: int | None  # cells the optimizer's matrices may have; None: no bound (jobs, internal)


@dataclass(frozen=True)
class TierRules:
    """The per-tier numbers of the optimize service's configuration."""

    time_limits: TierLimits  # OPTIMIZE_TIME_LIMITS, whole seconds
    matrix_cells: TierLimits  # ROUTE_MATRIX_CELLS, shared with POST /v1/matrix

    def allowance(self, caller: Caller | None, api_max_time_limit_s: float) -> Allowance | None:
        """None on nobody's behalf: no tier bounds the request."""
        if caller is None:
            return None
        seconds, tier = self.time_limits.for_tier(caller.tier)
        cells = None if caller.job else self.matrix_cells.for_tier(caller.tier)[0]
        return Allowance(tier, min(float(seconds), api_max_time_limit_s), cells)


def check_cells(places: int, kinds: int, allowance: Allowance | None, what: str, parameter: str) -> None:
    """413 when the optimizer's matrices (places x places, one per vehicle kind) pass the tier's cells."""
    if allowance is None or allowance.matrix_cells is None:
        return
    cells = places * places * kinds
    if cells > allowance.matrix_cells:
        most = math.isqrt(allowance.matrix_cells // max(1, kinds))
        raise TooManyStops(
            f"{what} need {'a' if kinds == 1 else kinds} {places} x {places} road matrix{'' if kinds == 1 else 'es'} "
            f"({cells} cells), but the {allowance.tier} tier's synchronous requests may have "
            f"{allowance.matrix_cells} cells: at most {most} places{'' if kinds == 1 else f' with {kinds} vehicle kinds'}; "
            f"send it with ?async=true (a job) for more",
            parameter=parameter,
        )


def capped_default(default_s: float, allowance: Allowance | None) -> float | None:
    """The time limit to use instead of a default above the tier's cap (None: the default stands)."""
    if allowance is None or default_s <= allowance.max_time_limit_s:
        return None
    return allowance.max_time_limit_s


def price(solver_s: float, cores: int, cells: int, measure: str) -> Cost:
    units = solver_s * max(1, cores) * UNITS_PER_SOLVER_SECOND + cells * UNITS_PER_CELL
    return cost(units, f"{measure}: {solver_s:.2f} s of search on {max(1, cores)} core(s), {cells} matrix cells",
                heavy=True)  # fmt: skip


def cost_of_stops(stops: int, solver_s: float, parallel: int) -> Cost:
    """A stop order: an exact solve runs once, a search on each of the lane's `parallel` processes."""
    cores = 1 if stops <= EXACT_MAX_STOPS else parallel
    return price(solver_s, cores, stops * stops if stops > 1 else 0, f"{stops} stops")


def cost_of_fleet(places: int, kinds: int, time_limit_s: float, parallel: int) -> Cost:
    """Fleet routing: the portfolio's searches on the lane's processes, a matrix per vehicle kind."""
    return price(time_limit_s, parallel, places * places * kinds, f"{places} places, {kinds} vehicle kind(s)")
