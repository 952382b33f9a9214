"""The platform end to end over real HTTP: tokens, 401s, error formats, limits, revocation."""

from __future__ import annotations

import asyncio
import base64
import sqlite3
import time
import uuid
from contextlib import closing

import aiohttp
import orjson
import psycopg
import pytest

from launcher.stack import Stack
from tests.integration.conftest import LEGACY, PROBLEM, console_ok, login, run_console

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def platform(accounts_platform: Stack) -> Stack:
    """On SQLite and on PostgreSQL (tests/integration/conftest.py)."""
    return accounts_platform


def new_user(platform: Stack, tier: str = "standard") -> str:
    email = f"u{uuid.uuid4().hex[:10]}@example.com"
    console_ok(platform, "add-user", email, "--password", PASSWORD, "--tier", tier)
    return email


def auth(token: str, accept: dict[str, str] = PROBLEM) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **accept}


def test_the_accounts_are_stored_where_the_configuration_says(platform: Stack) -> None:
    """The PostgreSQL run really keeps its accounts there, and the SQLite one in its file."""
    email = new_user(platform)
    url = platform.extra_env.get("DATABASE_URL")
    if url:
        with psycopg.connect(url) as connection:
            rows = connection.execute("SELECT count(*) FROM users WHERE email = %s", (email,)).fetchall()
    else:
        with closing(sqlite3.connect(platform.data_dir / "auth" / "accounts.sqlite3")) as connection:
            rows = connection.execute("SELECT count(*) FROM users WHERE email = ?", (email,)).fetchall()
    assert rows == [(1,)]


async def test_password_login_gives_a_working_token(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = new_user(platform)
    async with http.post(
        f"{platform.base_url}/v1/authenticate", json={"user": email, "password": PASSWORD, "duration": 120}
    ) as resp:
        assert resp.status == 200
        body = await resp.json()
    assert body["authorization"] == f"Bearer {body['token']}"
    # A valid token gets past the gateway: the routing service is not deployed here, so 503.
    async with http.get(f"{platform.base_url}/v1/route?from=1,1&to=1,1", headers=auth(body["token"])) as resp:
        assert resp.status == 503
        assert (await resp.json(content_type=None))["type"] == "/problems/general/service-unavailable"


async def test_apikey_login_gives_a_working_token(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = new_user(platform)
    key = console_ok(platform, "add-apikey", email).split()[-1]
    uuid.UUID(key)
    async with http.post(f"{platform.base_url}/v1/authenticate/apikey", json={"apikey": key}) as resp:
        assert resp.status == 200
        token = (await resp.json())["token"]
    async with http.get(f"{platform.base_url}/v1/geocoder?address=x", headers=auth(token)) as resp:
        assert resp.status == 503


async def test_wrong_password_and_unknown_user_are_the_same_401(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = new_user(platform)
    answers = []
    for user, password in ((email, "wrong password!"), ("nobody@example.com", PASSWORD)):
        async with http.post(
            f"{platform.base_url}/v1/authenticate", json={"user": user, "password": password}, headers=LEGACY
        ) as resp:
            answers.append((resp.status, (await resp.json())["details"]))
    assert answers[0] == answers[1]
    assert answers[0][0] == 401


@pytest.mark.parametrize("duration", [0, -1, 2592001, 1.5, "60", True])
async def test_bad_duration_is_400_naming_duration(
    platform: Stack, http: aiohttp.ClientSession, duration: object
) -> None:
    async with http.post(
        f"{platform.base_url}/v1/authenticate",
        json={"user": "a@example.com", "password": "x", "duration": duration},
        headers=LEGACY,
    ) as resp:
        assert resp.status == 400
        body = await resp.json()
    assert body["details"][0]["code"] == "ERROR_INVALID_PARAMETER"
    assert "duration" in body["details"][0]["message"]


async def test_maximum_duration_is_accepted(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = new_user(platform)
    token = await login(http, platform, email, PASSWORD, duration=2592000)
    payload = orjson.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert payload["exp"] - payload["iat"] == 2592000


def forged(token: str, **changes: object) -> str:
    header, payload, signature = token.split(".")
    claims = orjson.loads(base64.urlsafe_b64decode(payload + "=="))
    claims.update(changes)
    new_payload = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=").decode()
    return f"{header}.{new_payload}.{signature}"


def alg_none(token: str) -> str:
    _, payload, _ = token.split(".")
    header = base64.urlsafe_b64encode(orjson.dumps({"alg": "none", "typ": "JWT"})).rstrip(b"=").decode()
    return f"{header}.{payload}."


async def test_every_bad_token_is_401_with_www_authenticate(platform: Stack, http: aiohttp.ClientSession) -> None:
    token = await login(http, platform, new_user(platform), PASSWORD)
    cases = {
        "missing": {},
        "not bearer": {"Authorization": f"Token {token}"},
        "malformed": {"Authorization": "Bearer not.a.jwt"},
        "garbage": {"Authorization": "Bearer %%%"},
        "alg none": {"Authorization": f"Bearer {alg_none(token)}"},
        "tampered tier": {"Authorization": f"Bearer {forged(token, tier='unlimited')}"},
        "tampered exp": {"Authorization": f"Bearer {forged(token, exp=int(time.time()) + 10**6)}"},
    }
    for name, headers in cases.items():
        for accept, check in ((LEGACY, "legacy"), (PROBLEM, "problem")):
            async with http.get(f"{platform.base_url}/v1/route", headers={**headers, **accept}) as resp:
                assert resp.status == 401, name
                assert resp.headers["WWW-Authenticate"].startswith("Bearer"), name
                body = await resp.json(content_type=None)
            if check == "legacy":
                assert body["details"][0]["code"] == "ERROR_UNAUTHORIZED", name
            else:
                assert body["type"] == "/problems/general/unauthorized", name
                assert resp.content_type == "application/problem+json"


async def test_expired_token_is_401(platform: Stack, http: aiohttp.ClientSession) -> None:
    token = await login(http, platform, new_user(platform), PASSWORD, duration=1)
    await asyncio.sleep(2.2)
    async with http.get(f"{platform.base_url}/v1/route", headers=auth(token)) as resp:
        assert resp.status == 401
        assert "expired" in (await resp.json(content_type=None))["detail"]


@pytest.mark.parametrize(
    "path", ["/v1/geocoder", "/v1/route", "/v1/optimize/stops", "/v1/detour/file", "/v1/providers", "/v1/anything"]
)
async def test_every_operation_but_authentication_needs_a_token(
    platform: Stack, http: aiohttp.ClientSession, path: str
) -> None:
    async with http.request(
        "POST" if path in ("/v1/optimize/stops", "/v1/detour/file") else "GET", platform.base_url + path
    ) as resp:
        assert resp.status == 401


async def test_demo_token_from_the_console_works_and_is_rate_limited(
    platform: Stack, http: aiohttp.ClientSession
) -> None:
    token = console_ok(platform, "demo-token", "--duration", "600").split()[-1]
    statuses = []
    for _ in range(8):
        async with http.get(f"{platform.base_url}/v1/route", headers=auth(token, LEGACY)) as resp:
            statuses.append(resp.status)
            if resp.status == 429:
                assert int(resp.headers["Retry-After"]) >= 1
                assert resp.headers["RateLimit-Limit"] == "5"
                assert (await resp.json())["details"][0]["code"] == "ERROR_TOO_MANY_REQUESTS"
    assert statuses[0] == 503  # passed auth and the limiter; the service is not deployed
    assert 429 in statuses


async def test_demo_token_longer_than_a_day_is_refused(platform: Stack) -> None:
    result = run_console(platform, "demo-token", "--duration", "86401")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr


async def test_revoked_apikey_token_stops_working(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = new_user(platform)
    key = console_ok(platform, "add-apikey", email).split()[-1]
    async with http.post(f"{platform.base_url}/v1/authenticate/apikey", json={"apikey": key}) as resp:
        token = (await resp.json())["token"]
    async with http.get(f"{platform.base_url}/v1/route", headers=auth(token)) as resp:
        assert resp.status == 503
    console_ok(platform, "revoke-apikey", key[:8])
    await asyncio.sleep(1.0)  # the gateway's revocation cache is 0.5 s here
    async with http.get(f"{platform.base_url}/v1/route", headers=auth(token)) as resp:
        assert resp.status == 401
        assert "revoked" in (await resp.json(content_type=None))["detail"]
    async with http.post(f"{platform.base_url}/v1/authenticate/apikey", json={"apikey": key}) as resp:
        assert resp.status == 401


async def test_disabled_user_tokens_and_logins_stop(platform: Stack, http: aiohttp.ClientSession) -> None:
    email = new_user(platform)
    token = await login(http, platform, email, PASSWORD)
    console_ok(platform, "disable-user", email)
    async with http.post(f"{platform.base_url}/v1/authenticate", json={"user": email, "password": PASSWORD}) as resp:
        assert resp.status == 401
    await asyncio.sleep(1.0)
    async with http.get(f"{platform.base_url}/v1/route", headers=auth(token)) as resp:
        assert resp.status == 401


async def test_error_formats_of_gateway_errors(platform: Stack, http: aiohttp.ClientSession) -> None:
    token = await login(http, platform, new_user(platform), PASSWORD)
    cases = [
        ("GET", "/v1/nowhere", 404, "ERROR_NOT_FOUND", "/problems/general/not-found"),
        ("DELETE", "/v1/route", 405, "ERROR_METHOD_NOT_ALLOWED", "/problems/general/method-not-allowed"),
        ("GET", "/v1/geocoder", 503, "ERROR_SERVICE_UNAVAILABLE", "/problems/general/service-unavailable"),
    ]
    for method, path, status, code, problem_type in cases:
        async with http.request(method, platform.base_url + path, headers=auth(token, LEGACY)) as resp:
            assert resp.status == status
            assert resp.content_type == "application/json"
            legacy = await resp.json()
            assert legacy["status"] == status and legacy["details"][0]["code"] == code and legacy["errors"]
        async with http.request(method, platform.base_url + path, headers=auth(token, {"Accept": "*/*"})) as resp:
            assert resp.content_type == "application/problem+json"
            problem = await resp.json(content_type=None)
            assert problem["type"] == problem_type and problem["instance"] == path and problem["timestamp"]


async def test_request_id_is_returned_and_reaches_the_service_log(platform: Stack, http: aiohttp.ClientSession) -> None:
    request_id = f"it-{uuid.uuid4().hex}"
    async with http.post(
        f"{platform.base_url}/v1/authenticate",
        data=b"{not json",
        headers={"X-Request-ID": request_id, "Content-Type": "application/json"},
    ) as resp:
        assert resp.status == 400
        assert resp.headers["X-Request-ID"] == request_id
    generated = await http.get(f"{platform.base_url}/health")
    assert len(generated.headers["X-Request-ID"]) >= 16


async def test_body_limit_is_413(platform: Stack, http: aiohttp.ClientSession) -> None:
    async with http.post(
        f"{platform.base_url}/v1/authenticate",
        data=b"{" + b" " * (100 * 1024) + b"}",
        headers={"Content-Type": "application/json", **LEGACY},
    ) as resp:
        assert resp.status == 413
        assert (await resp.json())["details"][0]["code"] == "ERROR_PAYLOAD_TOO_LARGE"


async def test_health_metrics_spec_and_docs(platform: Stack, http: aiohttp.ClientSession) -> None:
    async with http.get(f"{platform.base_url}/health") as resp:
        assert resp.status == 200  # anyone: the status only
        assert await resp.json() == {"service": "gateway", "status": "ok"}
    async with http.get(f"{platform.base_url}/health", headers=platform.internal_headers()) as resp:
        body = await resp.json()
        assert resp.status == 200
        assert body["services"] == {"auth_service": {"status": "up", "httpStatus": 200}}
        assert body["redis"] == "up"
    async with http.get(f"{platform.base_url}/metrics") as resp:
        assert resp.status == 401  # internal: Python's version, memory, per-route counts
    async with http.get(f"{platform.base_url}/metrics", headers=platform.internal_headers()) as resp:
        assert "http_requests_total" in await resp.text()
    async with http.get(f"{platform.base_url}/v1/openapi.json") as resp:
        assert (await resp.json())["openapi"].startswith("3.1")
    async with http.get(f"{platform.base_url}/docs") as resp:
        assert "text/html" in resp.headers["Content-Type"]
