"""`python -m auth_service`: runs the service on AUTH_SERVICE_HOST:AUTH_SERVICE_PORT (8081)."""

from auth_service.app import create_app
from auth_service.config import AuthConfig
from common.service import run

if __name__ == "__main__":
    run(create_app, AuthConfig.from_env("auth_service"))
