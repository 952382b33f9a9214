"""The optimize service's aiohttp application (its state and solver lanes: optimize_service.state).

Each request is priced and charged to its account before any work (optimize_service.costs,
common.admission: budgets and heavy slots in the state Redis), within its tier's bounds.
"""

from __future__ import annotations

from aiohttp import web

from common.service import HEALTH_CHECKS_KEY, base_app
from optimize_service.config import OptimizeConfig
from optimize_service.handlers import handler
from optimize_service.optimizer import FLEET, STOPS
from optimize_service.state import solver_health, state_context


def create_app(config: OptimizeConfig) -> web.Application:
    # The state Redis holds the accounts' work budgets and heavy slots (common.admission).
    app = base_app(config)
    app.cleanup_ctx.append(state_context(config))
    app[HEALTH_CHECKS_KEY].append(solver_health(config))
    app.router.add_post("/v1/optimize/stops", handler(STOPS))
    app.router.add_post("/v1/optimize/routes", handler(FLEET))
    return app
