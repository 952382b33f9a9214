"""A service's own port answers only callers that hold the internal credential (common.internal_auth)."""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from common import internal_auth
from common.client import ServiceClient
from common.config import REPO_ROOT, BaseConfig
from common.errors import BadGateway, InvalidParameter
from common.internal_auth import (
    INTERNAL_TOKEN_HEADER,
    require_internal_token,
    stored_internal_token,
)
from common.service import base_app, json_response, read_json

TOKEN = "s3cret-internal-token-for-tests-0123456789"
REFUSED_TYPE = "/problems/general/internal-credential-required"
LEGACY = {"Accept": "application/json"}


def service_app(token: str = TOKEN, *, internal: bool = True) -> web.Application:
    """A service like ours: base_app with one internal route, one public-looking one and one failing."""

    async def matrix(request: web.Request) -> web.Response:
        return json_response({"received": await read_json(request, check_media_type=False)})

    async def refuse(request: web.Request) -> web.Response:
        raise InvalidParameter("no such point", parameter="from")

    app = base_app(BaseConfig(service="demo_service", internal_token=token), with_redis=False, internal=internal)
    app.router.add_post("/internal/matrix", matrix)
    app.router.add_get("/v1/route", refuse)
    return app


@pytest.fixture
async def service(aiohttp_client: Any) -> TestClient:
    client: TestClient = await aiohttp_client(service_app())
    return client


async def test_a_call_without_the_credential_is_401_in_the_problem_format(service: TestClient) -> None:
    resp = await service.post("/internal/matrix", json={"sources": []})
    assert resp.status == 401
    assert resp.content_type == "application/problem+json"
    body = await resp.json(content_type=None)
    assert body["type"] == REFUSED_TYPE
    assert INTERNAL_TOKEN_HEADER in body["detail"]
    assert resp.headers["WWW-Authenticate"].startswith("Internal-Token ")


async def test_a_wrong_credential_is_401_in_the_legacy_format(service: TestClient) -> None:
    resp = await service.post(
        "/internal/matrix", json={}, headers={INTERNAL_TOKEN_HEADER: TOKEN[:-1] + "X", **LEGACY}
    )
    assert resp.status == 401
    assert resp.content_type == "application/json"
    body = await resp.json()
    assert body["details"][0]["code"] == "ERROR_INTERNAL_CREDENTIAL_REQUIRED"
    assert "wrong" in body["details"][0]["message"]


@pytest.mark.parametrize("presented", ["", TOKEN + "x", TOKEN[:10], TOKEN.upper()])
async def test_near_misses_are_refused(service: TestClient, presented: str) -> None:
    resp = await service.post("/internal/matrix", json={}, headers={INTERNAL_TOKEN_HEADER: presented})
    assert resp.status == 401


async def test_bytes_that_are_not_ascii_in_the_header_are_a_401_not_a_500(service: TestClient) -> None:
    """compare_digest raises on a str with non-ASCII characters: the check compares bytes."""
    reader, writer = await asyncio.open_connection(service.server.host, service.server.port)
    writer.write(
        b"GET /v1/route HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + INTERNAL_TOKEN_HEADER.encode()
        + b": \xff\xfe\xc3\xa9\xed\xa0\x80\r\n\r\n"
    )
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), timeout=10)
    writer.close()
    assert status_line.split()[1] == b"401", status_line


async def test_the_right_credential_reaches_the_handler(service: TestClient) -> None:
    resp = await service.post("/internal/matrix", json={"sources": [1]}, headers={INTERNAL_TOKEN_HEADER: TOKEN})
    assert resp.status == 200
    assert await resp.json() == {"received": {"sources": [1]}}
    # Past the check, the handler's own errors are answered as before.
    resp = await service.get("/v1/route", headers={INTERNAL_TOKEN_HEADER: TOKEN})
    assert resp.status == 400


async def test_health_is_open_and_metrics_and_unknown_paths_are_not(service: TestClient) -> None:
    health = await service.get("/health")
    assert health.status == 200
    assert (await health.json())["status"] == "ok"
    assert (await service.get("/metrics")).status == 401
    assert (await service.get("/metrics", headers={INTERNAL_TOKEN_HEADER: TOKEN})).status == 200
    # Refused before routing tells anything: no 404 that would map the internal paths.
    assert (await service.get("/internal/nothing-here")).status == 401


async def test_the_comparison_is_hmac_compare_digest(service: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(internal_auth.hmac, "compare_digest", spy)
    assert (await service.post("/internal/matrix", json={}, headers={INTERNAL_TOKEN_HEADER: "guess"})).status == 401
    assert (await service.post("/internal/matrix", json={}, headers={INTERNAL_TOKEN_HEADER: TOKEN})).status == 200
    assert compared == [(b"guess", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


async def test_a_refusal_is_not_logged_as_an_error(service: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        assert (await service.post("/internal/matrix", json={})).status == 401
        assert (await service.get("/metrics", headers={INTERNAL_TOKEN_HEADER: "nope"})).status == 401
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    metrics = await (await service.get("/metrics", headers={INTERNAL_TOKEN_HEADER: TOKEN})).text()
    labels = ('service="demo_service"', 'route="/internal/matrix"', 'status="401"')
    assert any(line.startswith("http_requests_total{") and all(x in line for x in labels) for line in metrics.split("\n"))


@pytest.mark.parametrize(("token", "internal"), [("", True), (TOKEN, False)])
async def test_no_check_without_a_token_or_on_a_public_port(aiohttp_client: Any, token: str, internal: bool) -> None:
    """Apps built in-process by tests (no token) and the gateway's public port answer without it."""
    client: TestClient = await aiohttp_client(service_app(token, internal=internal))
    assert (await client.post("/internal/matrix", json={})).status == 200


# ---------------------------------------------------------------- the calling side


@pytest.fixture
async def route_server() -> AsyncIterator[str]:
    server = TestServer(service_app(), host="127.0.0.1")
    await server.start_server()
    yield str(server.make_url("")).rstrip("/")
    await server.close()


async def test_the_service_client_sends_the_credential(route_server: str) -> None:
    client = ServiceClient("route service", route_server, timeout=10, internal_token=TOKEN)
    try:
        assert await client.post_json("/internal/matrix", {"a": 1}) == {"received": {"a": 1}}
    finally:
        await client.close()


async def test_a_refused_credential_is_a_502_for_the_caller_not_a_401(
    route_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = ServiceClient("route service", route_server, timeout=10, internal_token="another-secret")
    try:
        with pytest.raises(BadGateway) as refused:
            await client.post_json("/internal/matrix", {"a": 1})
    finally:
        await client.close()
    assert refused.value.status == 502
    assert any("INTERNAL_TOKEN" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)


# ---------------------------------------------------------------- configuration and the secret


DEMO_SERVICE = """
from common.config import BaseConfig
from common.service import base_app, run
run(lambda config: base_app(config, with_redis=False), BaseConfig.from_env("demo_service", port=0))
"""


def test_a_process_without_the_secret_refuses_to_start() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("INTERNAL_TOKEN", "INTERNAL_AUTH")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-c", DEMO_SERVICE], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "INTERNAL_TOKEN is not set" in result.stderr


def test_the_development_flag_allows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INTERNAL_TOKEN", raising=False)
    monkeypatch.setenv("INTERNAL_AUTH", "off")
    require_internal_token(BaseConfig.from_env("demo_service"))
    monkeypatch.setenv("INTERNAL_AUTH", "on")
    with pytest.raises(SystemExit):
        require_internal_token(BaseConfig.from_env("demo_service"))
    require_internal_token(BaseConfig(service="demo_service", internal_token=TOKEN))


def test_the_token_is_read_from_the_environment_and_kept_out_of_reprs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERNAL_TOKEN", TOKEN)
    config = BaseConfig.from_env("demo_service")
    assert config.internal_token == TOKEN
    assert TOKEN not in repr(config)


def test_the_stored_secret_is_made_once_private_and_reused(tmp_path: Path) -> None:
    first = stored_internal_token(tmp_path / "data")
    path = tmp_path / "data" / internal_auth.TOKEN_FILE
    assert len(first) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored_internal_token(tmp_path / "data") == first
    assert stored_internal_token(tmp_path / "other") != first


def test_an_empty_secret_file_is_replaced_and_made_private(tmp_path: Path) -> None:
    path = tmp_path / internal_auth.TOKEN_FILE
    path.write_text("\n")
    path.chmod(0o644)
    token = stored_internal_token(tmp_path)
    assert token and path.read_text().strip() == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
