"""Fleet routing with VROOM (pyvroom), in a solver process (no aiohttp here). VROOM itself
(`fleet.vroom`, which imports pandas) is imported only there, not in the service's process.

The problem arrives as plain data: the parsed request, which location index each vehicle end
and task uses, and one integer duration and distance matrix per vehicle kind (VROOM's
"profiles"). VROOM's ids are indexes: job j is j, shipment s picks up as J + 2s and delivers
as J + 2s + 1, a vehicle's k-th break is k; they are mapped back here, so the answer holds
indexes into the request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from common.errors import InvalidParameter
from optimize_service.fleet.model import FleetRequest, RoutePlan, Step, Unassigned
from optimize_service.fleet.problem import CHAIN, PYVRP, PYVRP_SECOND_SEED, VROOM, FleetProblem, FleetSolution

if TYPE_CHECKING:  # PyVRP itself only in solver processes
    from pyvrp.stop import StoppingCriterion

log = logging.getLogger(__name__)

# VROOM's part of the chain beside a PyVRP search: its plan is the fallback when PyVRP serves
# not every job, and the second PyVRP's start. On the bench's 100 x 5 instances VROOM's plan
# after 0.4 s was 10-15 % above the reference and PyVRP's after 1.5 s 1-3 %.
CHAIN_VROOM_SHARE = 0.25
EXPLORATION_LEVEL = 5  # VROOM's highest: 100 jobs x 5 vehicles in ~1.1 s on two threads


def pyvrp_fits(request: FleetRequest) -> bool:
    """Whether PyVRP's model (optimize_service/fleet/pyvrp.py) is the request's whole problem:
    jobs only, at most one time window each, no breaks, no skills, one priority, no limit of
    distance or stops (its distances are our costs there; maxWorkingTime is the shift's end)."""
    jobs = request.jobs
    return (
        bool(jobs)
        and not request.shipments
        and all(len(job.place.windows) == 1 and not job.skills for job in jobs)
        and all(not vehicle.breaks and not vehicle.skills for vehicle in request.vehicles)
        and all(v.limits.distance_m is None and v.limits.stops is None for v in request.vehicles)
        and len({job.priority for job in jobs}) == 1
    )


def methods_for(request: FleetRequest) -> tuple[str, ...]:
    """The searches run at once, one a process. Where PyVRP's model is the whole problem: PyVRP,
    and beside it the chain (VROOM, then PyVRP with another seed from VROOM's plan), so both
    cores search with PyVRP, ahead of VROOM level 5 by several per cent on the quality bench,
    and one PyVRP's bad seed is the other's chance: on the bench's 200 x 10 instances (10 s)
    one seed was up to 2.3 % above the reference, the better of two at most 0.5 % (docs/decisions.md,
    "Fleet routing quality"). With reloads, job release times, groups or prizes (issue 36), rules
    VROOM has not, PyVRP alone with two seeds (the parser made sure its model fits). Elsewhere
    VROOM alone (it models every rule and may leave jobs out)."""
    if request.pyvrp_rules:
        return (PYVRP, PYVRP_SECOND_SEED)
    return (PYVRP, CHAIN) if pyvrp_fits(request) else (VROOM,)


def time_limit(request: FleetRequest) -> float:
    return request.time_limit_s if request.time_limit_s is not None else request.default_time_limit_s


type StopAfter = Callable[[float], StoppingCriterion]  # seconds -> PyVRP's stop (the bench counts CPU)


# A rules request's two searches (`methods_for`) share their time in rounds: after each, both
# continue from the better plan so far (other seeds, PyVRP's history and penalties afresh),
# rather than each alone for the whole time. Scratch runs on the fleet_rules bench's 100 x 5
# instances (5 cities, the default 4 s per search in CPU seconds, the better plan against the
# cached 60 s references; shared machine, 2026-11-29), per run of the 5 cities the median and
# the max gap, each the median over runs: one round (as before) +1.31 %, max +2.17 % (3 runs);
# in the same runs 2 rounds +0.72 %, max +1.62 %; 3: +0.93 %, +1.44 %; 4: +0.83 %, +1.44 %.
# Over all runs, 4 rounds +0.91 %, max +1.44 % (8 runs; worst max +3.59 %, Monaco), 3 rounds
# +0.94 %, +1.66 % (5 runs); 6 and 8 rounds had worse maxima (+2.78 %, +2.54 %; up to +4.7 %):
# rounds of under a second start over too often. Carrying each seed's penalties over, or the
# second seed with a history of 150, were no better on the max (+1.96 %, +1.85 %; 3 runs).
# One run each at the other sizes: 200 x 10 median -1.06 %, max -0.73 % against -0.89 %, +0.45 %;
# 25 x 2 (0.6 s rounds) 0 % on four cities either way, Monaco +0.73 % against +0.22 %. The max
# of 1 % at 100 x 5 is met in one run in eight: not reached.
RULES_ROUNDS = 4


@dataclass(frozen=True)
class SearchRound:
    """One round of a rules request's searches: its seconds, the plan it starts from (none in
    the first round), its number (the seeds differ from round to round)."""

    limit_s: float
    start: FleetSolution | None
    index: int


def solve_method(
    problem: FleetProblem, method: str, stop_after: StopAfter | None = None, search_round: SearchRound | None = None
) -> FleetSolution | None:
    """One search of the portfolio, in its own solver process; None: PyVRP served not every job.
    `search_round`: a round of a rules request's searches (`portfolio`), else the whole time limit."""
    if method in (PYVRP, PYVRP_SECOND_SEED):
        from optimize_service.fleet.pyvrp import solve_pyvrp  # PyVRP only in solver processes

        this = search_round or SearchRound(time_limit(problem.request), None, 0)
        stop = None if stop_after is None else stop_after(this.limit_s)
        seed = int(method == PYVRP_SECOND_SEED) + 2 * this.index
        return solve_pyvrp(problem, this.limit_s, initial=this.start, stop=stop, seed=seed)
    if method == CHAIN:
        return solve_chain(problem, CHAIN_VROOM_SHARE, seed=1, stop_after=stop_after)
    return solve_vroom(problem)


type Work = Callable[..., FleetSolution | None]
type Call = tuple[Work, tuple[Any, ...]]  # a search to run in a process of its own: (function, arguments)
type Outcome = FleetSolution | BaseException | None  # its plan, or its failure


def portfolio(
    problem: FleetProblem, stop_after: StopAfter | None = None, work: Work = solve_method
) -> Generator[list[Call], list[Outcome], FleetSolution]:
    """The searches of `methods_for`, each in its own process at once on one core, round by
    round: yields a round's calls, is sent their outcomes in order, returns the plan kept. One
    round, but for a rules request: RULES_ROUNDS, sharing its time limit (in wall time what is
    left when each starts, so each round's setup counts; `stop_after`, the bench's CPU limit:
    equal shares), each from the better plan of the one before. The service's planner and the
    quality bench run it alike."""
    alone = replace(problem, threads=1)
    methods = methods_for(problem.request)
    if not problem.request.pyvrp_rules:
        return kept((yield [(work, (alone, method, stop_after)) for method in methods]))
    limit = time_limit(problem.request)
    began = time.perf_counter()
    best: FleetSolution | None = None
    for index in range(RULES_ROUNDS):
        rounds_left = RULES_ROUNDS - index
        left = limit * rounds_left / RULES_ROUNDS if stop_after else limit - (time.perf_counter() - began)
        search_round = SearchRound(max(0.0, left) / rounds_left, best, index)
        best = kept((yield [(work, (alone, method, stop_after, search_round)) for method in methods]), best)
    assert best is not None
    # The answer's `solver.timeLimit` is the request's, not a round's.
    return replace(best, time_limit_s=limit)


def kept(found: list[Outcome], earlier: FleetSolution | None = None) -> FleetSolution:
    """The better plan of a round's searches (and of the plan it started from); VROOM's refusal
    of its input is the answer (a 400), so is a failure of every search with no earlier plan."""
    solutions = [item for item in found if isinstance(item, FleetSolution)]
    failures = [item for item in found if isinstance(item, BaseException)]
    refusal = next((item for item in failures if isinstance(item, InvalidParameter)), None)
    if refusal is not None:
        raise refusal
    if earlier is not None:
        solutions.append(earlier)
    if not solutions and failures:
        raise failures[0]
    # One search failing leaves the other's plan (the chain's VROOM models every rule anyway).
    return better(solutions)


def solve_fleet(problem: FleetProblem) -> FleetSolution:
    """The portfolio in one process (a lane with one process, the threaded tests): VROOM for
    half the time limit, then PyVRP from VROOM's plan for the other half, the better kept."""
    if methods_for(problem.request) == (VROOM,):
        return solve_vroom(problem)
    if problem.request.pyvrp_rules:
        from optimize_service.fleet.pyvrp import solve_pyvrp

        found = solve_pyvrp(problem, time_limit(problem.request))
        if found is None:
            raise RuntimeError("PyVRP found no feasible plan")  # never seen: every job is optional there
        return found
    return solve_chain(problem, 0.5, seed=0)


def solve_chain(problem: FleetProblem, vroom_share: float, seed: int, stop_after: StopAfter | None = None) -> FleetSolution:
    """VROOM for `vroom_share` of the time limit, PyVRP from its plan for the time left."""
    request = problem.request
    limit = time_limit(request)
    first = solve_vroom(replace(problem, request=replace(request, time_limit_s=limit * vroom_share)))
    from optimize_service.fleet.pyvrp import Infeasible, solve_pyvrp

    left = max(0.0, limit - first.computing_s)
    try:
        stop = None if stop_after is None else stop_after(left)
        chained = solve_pyvrp(problem, left, initial=first, seed=seed, stop=stop)
    except Infeasible:  # never seen; VROOM's plan stands
        chained = None
    except ValueError:  # PyVRP refusing its input (a matrix it cannot take): VROOM's plan stands
        log.warning("PyVRP refused the chained problem; VROOM's plan stands", exc_info=True)
        chained = None
    # The answer's `solver.timeLimit` is the request's, not the part either search had.
    return replace(better([first, chained]), time_limit_s=limit)


def better(solutions: Sequence[FleetSolution | None]) -> FleetSolution:
    """Fewer priority points left out, then fewer wanted tasks left out, then the lower cost
    with the prizes of optional jobs left out."""
    found = [s for s in solutions if s is not None]

    def key(solution: FleetSolution) -> tuple[int, int, int]:
        return (solution.left_priority, solution.left_wanted, solution.cost + solution.left_prizes)

    return min(found, key=key)


def solve_vroom(problem: FleetProblem) -> FleetSolution:
    request = problem.request
    limit = time_limit(request)
    from optimize_service.fleet.vroom import vroom_input  # VROOM only in solver processes

    began = time.perf_counter()
    try:
        solution = vroom_input(problem).solve(
            exploration_level=EXPLORATION_LEVEL, nb_threads=max(1, problem.threads), timeout=timedelta(seconds=limit)
        )
    except Exception as exc:
        # What the parsing does not foresee: VROOM's own input checks, as a 400 naming them.
        if type(exc).__name__ != "VroomInputException":
            raise
        raise InvalidParameter(f"the solver refused the problem: {exc}") from None
    answer = solution.to_dict()
    routes = [route_plan(route, request) for route in answer["routes"]]
    # VROOM lists a shipment's pickup and delivery: one entry per shipment here.
    left = list(dict.fromkeys(unassigned(item, request) for item in answer["unassigned"]))
    return FleetSolution(
        routes=sorted(routes, key=lambda r: r.vehicle),
        unassigned=left,
        cost=int(answer["summary"]["cost"]),
        time_limit_s=limit,
        computing_s=round(time.perf_counter() - began, 3),
        left_priority=sum(priority(item, request) for item in left),
    )


def priority(item: Unassigned, request: FleetRequest) -> int:
    return request.jobs[item.task].priority if item.type == "job" else request.shipments[item.task].priority


def task_index(step_type: str, ident: int, request: FleetRequest) -> int:
    """VROOM's id of a job, pickup or delivery → the index of its job or shipment."""
    if step_type in ("pickup", "delivery"):
        return (ident - len(request.jobs)) // 2
    return ident


def route_plan(route: dict[str, Any], request: FleetRequest) -> RoutePlan:
    steps = []
    for step in route["steps"]:
        kind = step["type"]
        ident = step.get("id")
        steps.append(
            Step(
                type=kind,
                task=None if ident is None else task_index(kind, int(ident), request),
                location=step.get("location_index"),
                arrival_s=int(step["arrival"]),
                waiting_s=int(step.get("waiting_time", 0)),
                service_s=int(step.get("service", 0)) + int(step.get("setup", 0)),
                load=tuple(int(x) for x in step.get("load", ())),
                distance_m=int(step.get("distance", 0)),
                duration_s=int(step["duration"]),
            )
        )
    return RoutePlan(vehicle=int(route["vehicle"]), steps=tuple(steps), cost=int(route["cost"]))


def unassigned(item: dict[str, Any], request: FleetRequest) -> Unassigned:
    kind = "job" if item["type"] == "job" else "shipment"
    return Unassigned(kind, task_index(item["type"], int(item["id"]), request), "", "")


def warm_up_fleet() -> None:
    """Run once in each solver process at start: imports VROOM (and pandas with it, ~0.35 s),
    which the first fleet request would pay otherwise, and PyVRP's model."""
    import optimize_service.fleet.pyvrp
    import optimize_service.fleet.vroom  # noqa: F401
