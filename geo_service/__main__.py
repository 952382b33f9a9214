"""`python -m geo_service`: runs the service on GEO_SERVICE_HOST:GEO_SERVICE_PORT (8082)."""

from common.service import run
from geo_service.app import create_app
from geo_service.config import GeoConfig

if __name__ == "__main__":
    run(create_app, GeoConfig.from_env("geo_service"))
