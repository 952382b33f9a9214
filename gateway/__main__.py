"""`python -m gateway`: runs the gateway on GATEWAY_HOST:GATEWAY_PORT (8080)."""

from common.service import run
from gateway.app import create_app
from gateway.config import GatewayConfig

if __name__ == "__main__":
    run(create_app, GatewayConfig.from_env("gateway"))
