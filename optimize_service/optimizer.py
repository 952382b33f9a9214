"""The optimizer: one stop-order request from its body to the plan (no aiohttp here).

It holds what outlives a request, built once at start-up from the configuration: the route
service's client (with the provider names it has seen) and the solver lanes. Per request: the
provider names when the request names one, the parsing that reports every violation at once,
then the plan (`planner.plan_tour`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from common.providers import provider_name
from optimize_service.model import Plan
from optimize_service.parsing import parse_request
from optimize_service.planner import plan_tour
from optimize_service.routing import RouteClient
from optimize_service.scheduler import Scheduler


@dataclass
class Optimizer:
    routes: RouteClient
    scheduler: Scheduler  # which solver processes answer, and when (optimize_service.scheduler)

    async def solve(self, body: Any, query: Mapping[str, str], now: datetime | None = None) -> Plan:
        """Raises the request's violations (400, 413), OptimizerBusy (503) or the route
        service's errors, naming the stops they concern."""
        known = await self.known_providers(query)
        request = parse_request(body, query, now or datetime.now(UTC), known)
        return await plan_tour(request, self.routes, self.scheduler)

    async def known_providers(self, query: Mapping[str, str]) -> frozenset[str] | None:
        """Only a request that names a provider needs the route service's list."""
        wanted = provider_name(query.get("provider") or "")
        return await self.routes.providers.to_check(wanted) if wanted else None
