"""The optimizer: one stop-order or fleet request from its body to the plan (no aiohttp here).

It holds what outlives a request, built once at start-up from the configuration: the route
service's client (with the provider names it has seen), the solver lanes and the tiers' bounds.
Per request, as its product's record says (`STOPS`, `FLEET`; one handler runs both): the
parsing that reports every violation at once within the caller's tier's bounds
(optimize_service.costs), the price the handler charges before any work, the plan
(`planner.plan_tour`, `fleet.planner.plan_fleet`) and its formatter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from common.admission import Caller, Cost
from common.providers import provider_name
from optimize_service.costs import (
    Allowance,
    TierRules,
    capped_default,
    check_cells,
    cost_of_fleet,
    cost_of_stops,
)
from optimize_service.fleet.formatter import fleet_body
from optimize_service.fleet.model import MAX_TIME_LIMIT_S as FLEET_MAX_TIME_LIMIT_S
from optimize_service.fleet.model import FleetPlan, FleetRequest
from optimize_service.fleet.parsing import parse_fleet_request
from optimize_service.fleet.planner import fleet_time_limit, locate, plan_fleet
from optimize_service.routing import RouteClient
from optimize_service.scheduler import Scheduler
from optimize_service.stops.exact import EXACT_MAX_STOPS
from optimize_service.stops.formatter import plan_body
from optimize_service.stops.model import MAX_TIME_LIMIT_S, OptimizeRequest, Plan
from optimize_service.stops.parsing import parse_request
from optimize_service.stops.planner import plan_tour
from optimize_service.stops.solver import default_time_limit, estimate_s


@dataclass
class Optimizer:
    routes: RouteClient
    scheduler: Scheduler  # which solver processes answer, and when (optimize_service.scheduler)
    rules: TierRules | None = None  # None: no tier bounds any request (tests of the solving alone)

    def allowance(self, caller: Caller | None, api_max_s: float = MAX_TIME_LIMIT_S) -> Allowance | None:
        return self.rules.allowance(caller, api_max_s) if self.rules is not None else None

    # ------------------------------------------------------------ stop order

    async def parse(
        self, body: Any, query: Mapping[str, str], allowance: Allowance | None, now: datetime | None = None
    ) -> OptimizeRequest:
        """Raises the request's violations (400, 413) within the tier's bounds."""
        known = await self.known_providers(query)
        request = parse_request(body, query, now or datetime.now(UTC), known, allowance)
        cap = capped_default(default_time_limit(len(request.stops)), allowance)
        if request.options.time_limit_s is None and cap is not None:
            return replace(request, options=replace(request.options, time_limit_s=cap))
        return request

    def price(self, request: OptimizeRequest) -> Cost:
        """The request's cost; OptimizerBusy (503) first when its lane has no room, so a busy
        optimizer costs the caller nothing."""
        stops, limit = len(request.stops), request.options.time_limit_s
        estimate, exact = estimate_s(stops, limit), stops <= EXACT_MAX_STOPS
        lane = self.scheduler.lane_for_work(estimate, small=exact)
        if stops > 1:
            self.scheduler.check_room(lane, estimate)
        options = request.options
        restricted = (options.avoid is not None or options.route_type != "fastest" or options.timed
                      or options.provider not in (None, "osrm"))  # fmt: skip
        solver_s = estimate if stops > 1 else 0.0
        # an exact tour is solved once, a search on each of the lane's parallel processes
        return cost_of_stops(stops, solver_s, 1 if exact else lane.parallel, options.vehicle, restricted)

    async def plan(self, request: OptimizeRequest, account: str = "") -> Plan:
        """Raises OptimizerBusy (503) or the route service's errors, naming the stops they concern."""
        return await plan_tour(request, self.routes, self.scheduler, account)

    async def known_providers(self, query: Mapping[str, str]) -> frozenset[str] | None:
        """Only a request that names a provider needs the route service's list."""
        wanted = provider_name(query.get("provider") or "")
        return await self.routes.providers.to_check(wanted) if wanted else None

    # ------------------------------------------------------------ fleet routing

    async def parse_fleet(
        self, body: Any, query: Mapping[str, str], allowance: Allowance | None, now: datetime | None = None
    ) -> FleetRequest:
        """Raises the request's violations (400, 413) within the tier's bounds (a fleet's request
        is its body: `query` is not read)."""
        fleet = parse_fleet_request(body, now or datetime.now(UTC), allowance)
        places, _ = locate(fleet)
        check_cells(len(places.points), len(fleet.profiles), allowance, f"{len(places.points)} distinct places", "jobs")
        cap = capped_default(fleet.default_time_limit_s, allowance)
        return replace(fleet, time_limit_s=cap) if fleet.time_limit_s is None and cap is not None else fleet

    def price_fleet(self, fleet: FleetRequest) -> Cost:
        """The request's cost; OptimizerBusy (503) first when its lane has no room."""
        limit = fleet_time_limit(fleet)
        lane = self.scheduler.lane_for_work(limit)
        self.scheduler.check_room(lane, limit)
        places, _ = locate(fleet)
        vehicles = [fleet.vehicles[first] for first in fleet.profiles.values()]
        profiles = [(v.kind, bool(v.truck) or fleet.avoid is not None or fleet.timed) for v in vehicles]
        return cost_of_fleet(len(places.points), profiles, limit, lane.parallel)

    async def plan_fleet(self, fleet: FleetRequest, account: str = "") -> FleetPlan:
        return await plan_fleet(fleet, self.routes, self.scheduler, account)


@dataclass(frozen=True)
class Product[Q, P]:
    """One optimize product: its parser, its price, its planner and its formatter, and the
    longest time limit its requests may ask (the tier's allowance is bounded by it)."""

    name: str
    longest_s: float
    parse: Callable[[Optimizer, Any, Mapping[str, str], Allowance | None], Awaitable[Q]]
    price: Callable[[Optimizer, Q], Cost]
    plan: Callable[[Optimizer, Q, str], Awaitable[P]]
    respond: Callable[[P], dict[str, Any]]


STOPS = Product[OptimizeRequest, Plan]("stop order", MAX_TIME_LIMIT_S, Optimizer.parse, Optimizer.price, Optimizer.plan, plan_body)
FLEET = Product[FleetRequest, FleetPlan](
    "fleet plan", FLEET_MAX_TIME_LIMIT_S, Optimizer.parse_fleet, Optimizer.price_fleet, Optimizer.plan_fleet, fleet_body
)
