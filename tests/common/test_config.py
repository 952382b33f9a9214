"""Declarative configuration (common.config.setting): each field names its variable and its
default once; the environment's value is parsed by the default's type, clamped or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from auth_service.config import AuthConfig
from common.config import BaseConfig
from gateway.config import GatewayConfig
from geo_service.config import GeoConfig
from job_service.config import JobConfig
from optimize_service.config import OptimizeConfig
from route_service.config import RouteConfig

CONFIGS: list[type[BaseConfig]] = [AuthConfig, GatewayConfig, GeoConfig, JobConfig, OptimizeConfig, RouteConfig]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for config in CONFIGS:
        for variable in config.variables(config.SERVICE).values():
            monkeypatch.delenv(variable, raising=False)
    for variable in ("DATA_DIR", "AUTH_SERVICE_URL", "GEO_SERVICE_URL", "ROUTE_SERVICE_URL", "OPTIMIZE_SERVICE_URL", "JOB_SERVICE_URL"):  # fmt: skip
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


@pytest.mark.parametrize("config", CONFIGS, ids=lambda config: config.SERVICE)
def test_an_empty_environment_gives_the_declared_defaults(clean_env: pytest.MonkeyPatch, config: type[BaseConfig]) -> None:
    from_env = config.from_env()
    declared = config(service=config.SERVICE, port=from_env.port)  # the port's default is per service
    assert from_env == declared


def test_every_variable_is_read_once_per_service(clean_env: pytest.MonkeyPatch) -> None:
    variables = RouteConfig.variables("route_service")
    assert variables["port"] == "ROUTE_SERVICE_PORT" and variables["workers"] == "ROUTE_SERVICE_WORKERS"
    assert variables["matrix_limits"] == "ROUTE_MATRIX_CELLS"
    assert len(set(variables.values())) == len(variables)


def test_values_are_parsed_by_type_and_clamped(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("ROUTE_THREADS", "0")  # clamped to 1
    clean_env.setenv("ROUTE_LARGE_NICE", "40")  # clamped to 19
    clean_env.setenv("ROUTE_PRELOAD", "0")
    clean_env.setenv("ROUTE_INLINE_PROVIDERS", " osrm, valhalla ,,")
    clean_env.setenv("MAP_DIR", str(tmp_path))
    clean_env.setenv("ROUTE_SERVICE_PORT", "9999")
    config = RouteConfig.from_env()
    assert (config.threads, config.large_niceness, config.preload) == (1, 19, False)
    assert config.inline_providers == ("osrm", "valhalla") and config.maps_path == tmp_path
    assert config.port == 9999


def test_an_empty_path_variable_keeps_the_default_place(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_env.setenv("DATA_DIR", str(tmp_path))
    clean_env.setenv("MAP_DIR", "")
    assert RouteConfig.from_env().maps_path == tmp_path.resolve() / "maps"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("ROUTE_THREADS", "two", "ROUTE_THREADS='two' is not an integer"),
        ("JOB_LEASE_SECONDS", "soon", "JOB_LEASE_SECONDS='soon' is not a number"),
        ("JOB_LIMITS", "standard", "JOB_LIMITS item 'standard' is not tier=number"),
        ("GEO_QUERY_THREADS", "-1", "GEO_QUERY_THREADS must be at least 0"),
        ("DEFAULT_TOKEN_SECONDS", "0", "DEFAULT_TOKEN_SECONDS must be between 1 and 2592000"),
    ],
)
def test_a_bad_value_stops_the_process_naming_the_variable(
    clean_env: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    clean_env.setenv(variable, value)
    config = next(config for config in CONFIGS if variable in config.variables(config.SERVICE).values())
    with pytest.raises(SystemExit, match=f"configuration error: {message}"):
        config.from_env()


def test_a_given_value_is_checked_like_one_from_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit, match="MAX_API_KEYS_PER_ACCOUNT must be at least 1"):
        AuthConfig.from_env(max_api_keys_per_account=0)


def test_secrets_stay_out_of_the_repr(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("INTERNAL_TOKEN", "s3cret-token")
    clean_env.setenv("REDIS_URL", "redis://:pw-in-url@127.0.0.1:6390/0")
    text = repr(GatewayConfig.from_env())
    assert "s3cret-token" not in text and "pw-in-url" not in text


def test_the_gateway_takes_the_auth_services_keys_unless_told_otherwise(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("AUTH_SERVICE_URL", "http://auth:8081/")
    assert GatewayConfig.from_env().jwks_url == "http://auth:8081/.well-known/jwks.json"
    clean_env.setenv("JWKS_URL", "https://keys.example.com/jwks.json")
    assert GatewayConfig.from_env().jwks_url == "https://keys.example.com/jwks.json"
