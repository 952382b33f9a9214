"""docker-compose.yml and the Dockerfile stay consistent with the code and pass their checkers
(the Compose specification's schema, hadolint); Docker cannot run here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.config import DEFAULT_PORTS, REPO_ROOT
from gateway.config import UPSTREAM_ENV
from launcher.stack import deployed_services


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    return loaded


def python_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in compose["services"].items() if svc.get("command", [None])[0] == "python"}


def test_every_service_of_the_repo_and_the_gateway_has_a_container(compose: dict[str, Any]) -> None:
    for name in [*deployed_services(), "gateway"]:
        service = compose["services"].get(name)
        assert service is not None, f"{name} is missing from docker-compose.yml"
        assert service["command"] == ["python", "-m", name]


def test_every_python_container_runs_a_module_that_exists(compose: dict[str, Any]) -> None:
    for name, service in python_services(compose).items():
        module = service["command"][2]
        path = REPO_ROOT / module.replace(".", "/")
        assert path.with_suffix(".py").exists() or (path / "__main__.py").exists(), f"{name}: {module}"


def test_ports_and_health_checks_match_the_code(compose: dict[str, Any]) -> None:
    for name in [*deployed_services(), "gateway"]:
        service = compose["services"][name]
        port = DEFAULT_PORTS[name]
        env = service["environment"]
        assert env[f"{name.upper()}_PORT"] == str(port)
        assert env[f"{name.upper()}_HOST"] == "0.0.0.0"  # noqa: S104 - inside the container network
        assert f"127.0.0.1:{port}/health" in " ".join(service["healthcheck"]["test"])
    assert compose["services"]["gateway"]["ports"] == ["127.0.0.1:8080:8080"]


def test_upstream_urls_point_at_the_right_containers(compose: dict[str, Any]) -> None:
    env = compose["services"]["gateway"]["environment"]
    for name in deployed_services():
        assert env[UPSTREAM_ENV[name]] == f"http://{name}:{DEFAULT_PORTS[name]}"
    assert env["REDIS_URL"].endswith("@redis:6379/0")


def test_redis_and_a_data_volume(compose: dict[str, Any]) -> None:
    assert "redis" in compose["services"]
    assert "healthcheck" in compose["services"]["redis"]
    assert "data" in compose["volumes"]
    assert "data:/data" in compose["services"]["gateway"]["volumes"]


def test_dockerfile_copies_every_package_and_installs_the_pinned_requirements() -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[2-9]", dockerfile, re.MULTILINE)
    assert "pip install --no-cache-dir -r requirements.txt" in dockerfile
    for package in ["common", "gateway", "launcher", *deployed_services()]:
        assert f"COPY {package} ./{package}" in dockerfile, package


def test_the_internal_secret_comes_from_the_environment_with_no_default(compose: dict[str, Any]) -> None:
    """compose refuses to start without INTERNAL_TOKEN (from the shell or .env); none is in the repo."""
    for name, service in python_services(compose).items():
        assert service["environment"]["INTERNAL_TOKEN"].startswith("${INTERNAL_TOKEN:?"), name


REQUIRED_REDIS_PASSWORD = "${REDIS_PASSWORD:?"


def test_redis_requires_a_password_compose_refuses_to_start_without(compose: dict[str, Any]) -> None:
    """Both Redis servers run with `--requirepass` from REDIS_PASSWORD, which has no default
    (`${REDIS_PASSWORD:?…}`: compose stops with the message when it is unset or empty), and
    every Python container reaches them with that password inside its URLs."""
    for name, service in python_services(compose).items():
        env = service["environment"]
        for variable, host in (("REDIS_URL", "redis"), ("REDIS_CACHE_URL", "redis_cache")):
            assert env[variable].startswith("redis://:" + REQUIRED_REDIS_PASSWORD), (name, variable)
            assert env[variable].endswith(f"}}@{host}:6379/0"), (name, variable)
    for name in ("redis", "redis_cache"):
        service = compose["services"][name]
        command = service["command"]
        assert command[0] == "redis-server", name  # the image's entrypoint then drops root
        assert command[command.index("--requirepass") + 1].startswith(REQUIRED_REDIS_PASSWORD), name
        # The health check authenticates and needs PONG: redis-cli exits 0 on NOAUTH as well.
        assert service["environment"]["REDISCLI_AUTH"].startswith(REQUIRED_REDIS_PASSWORD), name
        assert service["healthcheck"]["test"] == ["CMD-SHELL", "redis-cli ping | grep -q PONG"], name
    assert "REDIS_PASSWORD=" not in (REPO_ROOT / "docker-compose.yml").read_text()  # no value in the repo


SCALABLE = ("geo_service", "route_service", "optimize_service", "job_service")


@pytest.mark.parametrize("name", SCALABLE)
def test_the_stateless_services_can_be_scaled(compose: dict[str, Any], name: str) -> None:
    """`docker compose up --scale route_service=3`: replicas need no fixed container name and no
    host port (one would clash); the gateway reaches them all by the service's name, whose
    addresses its connection pool takes in turn (tests/common/test_replicas.py)."""
    service = compose["services"][name]
    assert "container_name" not in service and "ports" not in service, name
    assert service["expose"] == [str(DEFAULT_PORTS[name])]
    assert "deploy" not in service or "replicas" not in service["deploy"], "the replica count is the operator's"


def tool(name: str) -> str:
    """A checker installed with requirements-dev.txt, beside this interpreter."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{name} is missing: it comes with requirements-dev.txt (make install)")
    return str(path)


def check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    command = [tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_docker_compose_matches_the_compose_specification(tmp_path: Path) -> None:
    """Validated against the Compose specification's JSON schema (check-jsonschema's vendored
    copy, offline); no container daemon runs here. A misspelt key fails it."""
    assert check_compose(REPO_ROOT / "docker-compose.yml").returncode == 0
    broken = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    broken["services"]["gateway"]["restart_policy"] = "always"  # belongs under deploy:
    (tmp_path / "compose.yml").write_text(yaml.safe_dump(broken))
    result = check_compose(tmp_path / "compose.yml")
    assert result.returncode == 1 and "restart_policy" in result.stdout + result.stderr


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool("hadolint"), str(path)], capture_output=True, text=True, timeout=120, check=False)


def test_the_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    """Every rule, down to its infos; an unpinned base image fails it."""
    result = hadolint(REPO_ROOT / "Dockerfile")
    assert result.returncode == 0, result.stdout
    broken = (REPO_ROOT / "Dockerfile").read_text().replace("FROM python:3.12-slim", "FROM python")
    (tmp_path / "Dockerfile").write_text(broken)
    assert "DL3006" in hadolint(tmp_path / "Dockerfile").stdout
