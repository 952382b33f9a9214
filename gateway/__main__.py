from common.service import run
from gateway.app import create_app
from gateway.config import GatewayConfig

if __name__ == "__main__":
    run(create_app, GatewayConfig.load())
