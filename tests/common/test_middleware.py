"""Every error of an app goes through the shared middleware: typed, aiohttp's own, and crashes."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from common.config import BaseConfig
from common.errors import InvalidParameter
from common.internal_auth import INTERNAL_TOKEN_HEADER
from common.service import HEALTH_CHECKS_KEY, base_app, json_response

PROBLEM = {"Accept": "application/json, application/problem+json"}
LEGACY = {"Accept": "application/json"}


async def ok(request: web.Request) -> web.Response:
    return json_response({"ok": True})


async def invalid(request: web.Request) -> web.Response:
    raise InvalidParameter("must be positive", parameter="limit")


async def crash(request: web.Request) -> web.Response:
    raise RuntimeError("secret internal path /srv/app/db.sqlite")


async def read_body(request: web.Request) -> web.Response:
    return json_response({"size": len(await request.read())})


@pytest.fixture
async def client(aiohttp_client: Any) -> TestClient:
    config = BaseConfig(service="test", max_body_bytes=1000)
    app = base_app(config, with_redis=False)
    app.router.add_get("/ok", ok)
    app.router.add_get("/invalid", invalid)
    app.router.add_get("/crash", crash)
    app.router.add_post("/body", read_body)
    return await aiohttp_client(app)


async def test_request_id_is_generated_and_echoed(client: TestClient) -> None:
    generated = await client.get("/ok")
    assert len(generated.headers["X-Request-ID"]) == 32
    echoed = await client.get("/ok", headers={"X-Request-ID": "abc-123"})
    assert echoed.headers["X-Request-ID"] == "abc-123"


async def test_hostile_request_id_is_replaced(client: TestClient) -> None:
    resp = await client.get("/ok", headers={"X-Request-ID": "x" * 500})
    assert resp.headers["X-Request-ID"] != "x" * 500
    resp = await client.get("/ok", headers={"X-Request-ID": "a b<script>"})
    assert "<" not in resp.headers["X-Request-ID"]


async def test_typed_error_in_problem_format(client: TestClient) -> None:
    resp = await client.get("/invalid?limit=-1", headers=PROBLEM)
    assert resp.status == 400
    assert resp.content_type == "application/problem+json"
    body = await resp.json(content_type=None)
    assert body["detail"] == "limit: must be positive"
    assert body["instance"] == "/invalid?limit=-1"
    assert resp.headers["X-Request-ID"]


async def test_typed_error_in_legacy_format(client: TestClient) -> None:
    resp = await client.get("/invalid", headers=LEGACY)
    assert resp.content_type == "application/json"
    body = await resp.json()
    assert body["details"][0]["code"] == "ERROR_INVALID_PARAMETER"


async def test_unknown_path_is_a_404_in_our_format(client: TestClient) -> None:
    resp = await client.get("/nope", headers=LEGACY)
    assert resp.status == 404
    assert (await resp.json())["details"][0]["code"] == "ERROR_NOT_FOUND"


async def test_wrong_method_is_a_405_with_allow(client: TestClient) -> None:
    resp = await client.post("/ok")
    assert resp.status == 405
    assert "GET" in resp.headers["Allow"]
    body = await resp.json(content_type=None)
    assert body["type"] == "/problems/general/method-not-allowed"


async def test_oversized_body_is_a_413_in_our_format(client: TestClient) -> None:
    resp = await client.post("/body", data=b"x" * 5000, headers=LEGACY)
    assert resp.status == 413
    assert (await resp.json())["details"][0]["code"] == "ERROR_PAYLOAD_TOO_LARGE"


async def test_crash_is_a_500_without_internals_and_is_logged(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        resp = await client.get("/crash", headers={"X-Request-ID": "req-42"})
    assert resp.status == 500
    text = await resp.text()
    assert "/srv/app" not in text and "Traceback" not in text and "RuntimeError" not in text
    assert (await resp.json(content_type=None))["type"] == "/problems/general/internal-error"
    assert any("unhandled error" in r.getMessage() for r in caplog.records)


async def test_health_and_metrics(client: TestClient) -> None:
    assert (await client.get("/health")).status == 200
    await client.get("/ok")
    metrics = await (await client.get("/metrics")).text()
    assert 'http_requests_total{method="GET",route="/ok",service="test",status="200"}' in metrics


@pytest.mark.parametrize("ready", [True, False], ids=["ready", "unready"])
async def test_health_shows_internals_only_to_a_holder_of_the_credential(aiohttp_client: Any, ready: bool) -> None:
    """The campaign read a key id, dataset hashes and an internal URL from services' /health
    without a token; probes need only the status code, which stays the same for everyone."""
    token = "health-test-internal-token-0123456789"

    async def dataset(app: web.Application) -> dict[str, Any]:
        return {"ready": ready, "dataset": "sha256:0123abcd", "upstream": "http://route-service:8083"}

    app = base_app(BaseConfig(service="demo_service", internal_token=token), with_redis=False)
    app[HEALTH_CHECKS_KEY].append(dataset)
    client: TestClient = await aiohttp_client(app)
    status = 200 if ready else 503
    anonymous = await client.get("/health")
    assert anonymous.status == status
    assert await anonymous.json() == {"service": "demo_service", "status": "ok" if ready else "unavailable"}
    wrong = await client.get("/health", headers={INTERNAL_TOKEN_HEADER: "guess"})
    assert wrong.status == status and "checks" not in await wrong.json()
    ours = await client.get("/health", headers={INTERNAL_TOKEN_HEADER: token})
    assert ours.status == status
    assert (await ours.json())["checks"]["dataset"] == "sha256:0123abcd"
