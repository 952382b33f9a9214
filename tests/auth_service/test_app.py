"""Health and the application's wiring."""

from __future__ import annotations

from aiohttp import web

from auth_service.state import STATE_KEY
from tests.auth_service.helpers import Client


async def test_health_reports_the_accounts_database(client: Client) -> None:
    response = await client.get("/health")
    assert response.status == 200
    body = await response.json()
    assert body["service"] == "auth_service"
    assert body["checks"]["accounts_db"] == "up"
    # Redis is unreachable in these tests: degraded, still ready.
    assert body["checks"]["redis"] == "down"


async def test_health_is_503_when_the_database_is_unreadable(client: Client) -> None:
    app: web.Application = client.app
    app[STATE_KEY].store.close()
    response = await client.get("/health")
    assert response.status == 503
    assert (await response.json())["checks"]["accounts_db"] == "down"


async def test_unknown_path_is_404_problem_json(client: Client) -> None:
    response = await client.get("/v1/nothing")
    assert response.status == 404
    assert response.content_type == "application/problem+json"


async def test_jwks_may_be_cached_briefly(client: Client) -> None:
    response = await client.get("/.well-known/jwks.json")
    assert response.headers["Cache-Control"] == "public, max-age=60"
