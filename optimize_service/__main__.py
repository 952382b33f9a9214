"""`python -m optimize_service`: runs the service on OPTIMIZE_SERVICE_HOST:OPTIMIZE_SERVICE_PORT (8084)."""

from common.service import run
from optimize_service.app import create_app
from optimize_service.config import OptimizeConfig

if __name__ == "__main__":
    run(create_app, OptimizeConfig.from_env("optimize_service"))
