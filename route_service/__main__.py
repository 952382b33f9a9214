"""`python -m route_service`: runs the service on ROUTE_SERVICE_HOST:ROUTE_SERVICE_PORT (8083)."""

from common.service import run
from route_service.app import create_app
from route_service.config import RouteConfig

if __name__ == "__main__":
    run(create_app, RouteConfig.from_env("route_service"))
