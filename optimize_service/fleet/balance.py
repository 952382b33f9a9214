"""Fair shares (issue 36, item 4): the longest route as short as the fleet allows (no aiohttp here).

Neither VROOM nor PyVRP minimises the longest route. So the plan is searched again with every
route's working time bounded (its shift ended early, as `maxWorkingTime` does): first the
cheapest plan, then bounds halfway between the longest route kept and the cheapest plan's work
shared by the whole fleet (a balanced plan works about as much in all, so its longest route is
not below that mean), keeping a bounded plan only when it leaves no more tasks out. `python -m bench fleet_balance`
measures what the balance costs in total time.
"""

from __future__ import annotations

from dataclasses import replace

from optimize_service.fleet.model import FleetVehicle, RoutePlan, Window, breaks_over, working_shift
from optimize_service.fleet.problem import FleetProblem, FleetSolution

FIRST_SHARE = 0.4  # of the request's time limit: the cheapest plan; the rest for the bounded rounds
ROUNDS = 2
CLOSE_ENOUGH_S = 60  # a bound this near the mean is not worth a round


def working_s(route: RoutePlan) -> int:
    """From leaving the start to arriving at the end."""
    return route.steps[-1].arrival_s - route.steps[0].arrival_s


def longest_s(solution: FleetSolution) -> int:
    return max((working_s(route) for route in solution.routes), default=0)


def mean_s(solution: FleetSolution, vehicles: int) -> int:
    """The work shared by every vehicle of the fleet: no plan's longest route is below it."""
    return sum(working_s(route) for route in solution.routes) // max(1, vehicles)


def bounded(problem: FleetProblem, bound_s: int, time_limit_s: float) -> FleetProblem:
    """The problem with every route's working time at most `bound_s` (never shorter than its
    breaks need), searched for `time_limit_s`."""
    request = problem.request
    vehicles = tuple(replace(v, shift=bounded_shift(v, bound_s)) for v in request.vehicles)
    return replace(problem, request=replace(request, vehicles=vehicles, time_limit_s=time_limit_s))


def bounded_shift(vehicle: FleetVehicle, bound_s: int) -> Window:
    """The shift under the bound, never ending before its breaks can be over (the parser made sure they fit the shift)."""
    breaks_end, _ = breaks_over(vehicle.breaks, vehicle.shift.start_s)
    return working_shift(vehicle.shift, max(bound_s, breaks_end - vehicle.shift.start_s))


def next_bound(low_s: int, high_s: int) -> int | None:
    """Halfway between what no plan beats and the longest route kept; None when near enough."""
    return None if high_s - low_s <= CLOSE_ENOUGH_S else (low_s + high_s) // 2


def keeps_the_tasks(found: FleetSolution, first: FleetSolution) -> bool:
    """A bounded plan is kept only if it leaves out no more tasks, nor more priority."""
    return len(found.unassigned) <= len(first.unassigned) and found.left_priority <= first.left_priority
