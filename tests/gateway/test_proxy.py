"""The gateway in front of a real upstream HTTP server: forwarding, header hygiene, failures."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import socket
import zlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from common.config import BaseConfig
from common.service import base_app
from gateway.app import create_app
from gateway.config import GatewayConfig, RateLimit
from gateway.proxy import read_limited_body
from gateway.state import GATEWAY_KEY
from tests.gateway.keys import TestKey, jwks

LEGACY = {"Accept": "application/json"}
PROBLEM = {"Accept": "application/json, application/problem+json"}
BLOCK = b"x" * (64 << 10)


def upstream_app(key: TestKey) -> web.Application:
    """Stands in for a service: echoes what it received, or answers slowly / badly."""

    async def echo(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "path": request.path,
                "raw_path": request.raw_path,
                "headers": dict(request.headers),
                "body": (await request.read()).decode(),
            }
        )

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({})

    async def broken(request: web.Request) -> web.Response:
        return web.Response(status=500, text="<html>boom</html>", content_type="text/html")

    async def large(request: web.Request) -> web.StreamResponse:
        """?bytes=n of one repeated block (nothing held here), chunked or with ?length=1 its length."""
        size = int(request.query["bytes"])
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if request.query.get("length"):
            response.content_length = size
        await response.prepare(request)
        for start in range(0, size, len(BLOCK)):
            await response.write(BLOCK[: size - start])
        await response.write_eof()
        return response

    async def jwks_handler(request: web.Request) -> web.Response:
        return web.json_response(jwks(key))

    async def providers(request: web.Request) -> web.Response:
        return web.json_response({"providers": [{"name": "osm"}], "default": "osm"})

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_get("/.well-known/jwks.json", jwks_handler)
    app.router.add_get("/health", health)
    app.router.add_route("*", "/v1/route", echo)
    app.router.add_route("*", "/v1/authenticate", echo)
    app.router.add_route("*", "/v1/optimize/stops", echo)
    app.router.add_get("/v1/geocoder/reverse", broken)
    app.router.add_get("/internal/providers", providers)
    app.router.add_get("/v1/geocoder", slow)
    app.router.add_get("/v1/jobs/{job_id}/result", large)
    return app


@pytest.fixture
def key() -> TestKey:
    return TestKey("k1")


@contextlib.asynccontextmanager
async def gateway_before(
    key: TestKey,
    redis_server: str,
    services: tuple[str, ...] = ("auth_service", "route_service", "geo_service"),
    **settings: Any,
) -> AsyncIterator[GatewayConfig]:
    """A gateway's configuration with `services` at one upstream test server (the others not deployed)."""
    upstream = TestServer(upstream_app(key))
    await upstream.start_server()
    base = str(upstream.make_url("")).rstrip("/")
    jwks_url = base + "/.well-known/jwks.json"
    yield GatewayConfig(service="gateway", redis_url=redis_server, upstreams=dict.fromkeys(services, base), jwks_url=jwks_url, **settings)  # fmt: skip
    await upstream.close()


@pytest.fixture
async def gateway(aiohttp_client: Any, key: TestKey, redis_server: str) -> AsyncIterator[TestClient]:
    limits = {"standard": RateLimit(1000, 1000), "demo": RateLimit(1, 2), "anonymous": RateLimit(1000, 1000)}
    async with gateway_before(key, redis_server, rate_limits=limits) as config:
        client: TestClient = await aiohttp_client(create_app(config))
        yield client


async def test_request_is_forwarded_with_identity_and_without_credentials(gateway: TestClient, key: TestKey) -> None:
    resp = await gateway.get(
        "/v1/route?from=49.4%2C8.7&to=49.41%2C8.69",
        headers={
            "Authorization": f"Bearer {key.token(sub='user:9', tier='standard')}",
            "X-Internal-Subject": "user:admin",
            "X-Internal-Tier": "unlimited",
            "Cookie": "session=secret",
            "X-Request-ID": "trace-1",
        },
    )
    assert resp.status == 200
    echoed = await resp.json()
    path, _, query = echoed["raw_path"].partition("?")
    assert path == "/v1/route"
    assert parse_qs(query) == {"from": ["49.4,8.7"], "to": ["49.41,8.69"]}
    headers = echoed["headers"]
    assert headers["X-Internal-Subject"] == "user:9"
    assert headers["X-Internal-Tier"] == "standard"
    assert "Authorization" not in headers and "Cookie" not in headers
    assert headers["X-Request-ID"] == "trace-1"
    assert resp.headers["X-Request-ID"] == "trace-1"
    assert int(resp.headers["RateLimit-Remaining"]) >= 0


async def test_authentication_path_needs_no_token_and_gets_no_identity(gateway: TestClient) -> None:
    resp = await gateway.post("/v1/authenticate", json={"user": "a@b.c"}, headers={"X-Internal-Subject": "user:1"})
    assert resp.status == 200
    headers = (await resp.json())["headers"]
    assert "X-Internal-Subject" not in headers


@pytest.mark.parametrize("authorization", [None, "Bearer nonsense", "Basic dXNlcjpwdw=="])
async def test_missing_or_bad_token_is_401_with_www_authenticate(
    gateway: TestClient, authorization: str | None
) -> None:
    headers = dict(LEGACY)
    if authorization:
        headers["Authorization"] = authorization
    resp = await gateway.get("/v1/route", headers=headers)
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    body = await resp.json()
    assert body["details"][0]["code"] == "ERROR_UNAUTHORIZED"


async def test_unknown_v1_path_needs_a_token_then_is_404(gateway: TestClient, key: TestKey) -> None:
    assert (await gateway.get("/v1/secret-admin")).status == 401
    resp = await gateway.get("/v1/secret-admin", headers={"Authorization": f"Bearer {key.token()}", **PROBLEM})
    assert resp.status == 404
    assert (await resp.json(content_type=None))["type"] == "/problems/general/not-found"


async def test_unknown_path_outside_v1_is_404(gateway: TestClient) -> None:
    resp = await gateway.get("/nothing-here", headers=LEGACY)
    assert resp.status == 404
    assert (await resp.json())["details"][0]["code"] == "ERROR_NOT_FOUND"


async def test_wrong_method_is_405_with_allow(gateway: TestClient, key: TestKey) -> None:
    resp = await gateway.delete("/v1/route", headers={"Authorization": f"Bearer {key.token()}"})
    assert resp.status == 405
    assert resp.headers["Allow"] == "GET"
    resp = await gateway.get("/v1/authenticate", headers=LEGACY)
    assert resp.status == 405
    assert resp.headers["Allow"] == "POST"
    assert (await resp.json())["details"][0]["code"] == "ERROR_METHOD_NOT_ALLOWED"


async def test_oversized_body_is_413_before_reaching_the_service(gateway: TestClient) -> None:
    resp = await gateway.post(
        "/v1/authenticate", data=b"x" * (200 * 1024), headers={**LEGACY, "Content-Type": "application/json"}
    )
    assert resp.status == 413
    assert (await resp.json())["details"][0]["code"] == "ERROR_PAYLOAD_TOO_LARGE"


async def test_service_not_deployed_is_503(gateway: TestClient, key: TestKey) -> None:
    resp = await gateway.post(
        "/v1/optimize/stops", json=[], headers={"Authorization": f"Bearer {key.token()}", **PROBLEM}
    )
    assert resp.status == 503
    body = await resp.json(content_type=None)
    assert body["type"] == "/problems/general/service-unavailable"
    assert "optimization service" in body["detail"]


async def test_upstream_crash_without_our_format_is_502(gateway: TestClient, key: TestKey) -> None:
    resp = await gateway.get(
        "/v1/geocoder/reverse?lat=1&lon=2", headers={"Authorization": f"Bearer {key.token()}", **LEGACY}
    )
    assert resp.status == 502
    assert "boom" not in await resp.text()


async def test_slow_upstream_is_504(gateway: TestClient, key: TestKey, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from gateway import routes

    fast = dataclasses.replace(routes.match_route("/v1/geocoder"), timeout_seconds=0.3)  # type: ignore[type-var]
    monkeypatch.setitem(routes._BY_PATH, "/v1/geocoder", fast)
    resp = await gateway.get("/v1/geocoder?address=x", headers={"Authorization": f"Bearer {key.token()}", **PROBLEM})
    assert resp.status == 504
    assert (await resp.json(content_type=None))["type"] == "/problems/general/gateway-timeout"


async def test_demo_tier_is_rate_limited_with_retry_after(gateway: TestClient, key: TestKey) -> None:
    token = key.token(sub="demo:abc", tier="demo")
    statuses = []
    last = None
    for _ in range(4):
        last = await gateway.get("/v1/route", headers={"Authorization": f"Bearer {token}", **LEGACY})
        statuses.append(last.status)
    assert statuses[:2] == [200, 200]
    assert 429 in statuses
    assert last is not None and last.status == 429
    assert int(last.headers["Retry-After"]) >= 1
    assert last.headers["RateLimit-Remaining"] == "0"
    assert (await last.json())["details"][0]["code"] == "ERROR_TOO_MANY_REQUESTS"


async def test_health_aggregates_services_and_redis(gateway: TestClient) -> None:
    resp = await gateway.get("/health")
    body = await resp.json()
    assert resp.status == 200
    assert body["redis"] == "up"
    assert set(body["services"]) == {"auth_service", "route_service", "geo_service"}
    assert body["signingKeys"] == 1


async def test_metrics_count_requests_by_public_route(gateway: TestClient, key: TestKey) -> None:
    await gateway.get("/v1/route", headers={"Authorization": f"Bearer {key.token()}"})
    text = await (await gateway.get("/metrics")).text()
    assert 'route="/v1/route"' in text
    assert "http_request_duration_seconds_bucket" in text


async def test_providers_are_gathered_from_the_services(gateway: TestClient, key: TestKey) -> None:
    assert (await gateway.get("/v1/providers")).status == 401
    resp = await gateway.get("/v1/providers", headers={"Authorization": f"Bearer {key.token()}"})
    assert resp.status == 200
    body = await resp.json()
    assert body["routing"] == {"available": True, "providers": [{"name": "osm"}], "default": "osm"}
    assert body["geocoding"]["available"] is True
    assert "RateLimit-Limit" in resp.headers


async def test_an_unreachable_service_is_logged_once_per_outage(
    aiohttp_client: Any, key: TestKey, redis_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a port nothing listens on, yet
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = TestServer(upstream_app(key), host="127.0.0.1", port=port)
    base = f"http://127.0.0.1:{port}"
    config = GatewayConfig(
        service="gateway",
        redis_url=redis_server,
        upstreams={"auth_service": base, "route_service": base},
        jwks_url=base + "/.well-known/jwks.json",
        rate_limits={"standard": RateLimit(1000, 1000)},
    )
    gateway: TestClient = await aiohttp_client(create_app(config))
    await upstream.start_server()  # the keys load, then the service goes away
    await gateway.app[GATEWAY_KEY].jwks.refresh()
    await upstream.close()
    caplog.set_level(logging.INFO, logger="gateway.proxy")
    auth = {"Authorization": f"Bearer {key.token()}"}
    for _ in range(20):
        resp = await gateway.get("/v1/route", headers=auth)
        assert resp.status == 503
    upstream = TestServer(upstream_app(key), host="127.0.0.1", port=port)
    await upstream.start_server()
    for _ in range(3):
        assert (await gateway.get("/v1/route", headers=auth)).status == 200
    await upstream.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "gateway.proxy"]
    assert [line for line in lines if "unreachable" in line] == [lines[0]] and len(lines) == 2
    assert "reachable again" in lines[1]


@pytest.mark.parametrize(
    "body",
    [
        gzip.compress(b" " * 5000),  # 5000 bytes once decompressed
        # Empty deflate blocks: 5 bytes each as sent, nothing once decompressed.
        zlib.compressobj(wbits=31).compress(b"") + b"\x00\x00\x00\xff\xff" * 400,
    ],
    ids=["decompressed-over", "sent-over"],
)
async def test_a_body_is_read_only_up_to_the_limit_as_sent_and_as_decompressed(
    aiohttp_client: Any, body: bytes
) -> None:
    """`read_limited_body` stops at the limit counted both ways: a gzip bomb is decompressed no
    further, and a stream that decompresses to nothing is not read forever."""

    async def limited(request: web.Request) -> web.Response:
        return web.json_response({"size": len(await read_limited_body(request, 1000))})

    app = base_app(BaseConfig(service="gateway"), with_redis=False, internal=False)
    app.router.add_post("/limited", limited)
    client: TestClient = await aiohttp_client(app)

    async def chunks() -> AsyncIterator[bytes]:  # chunked: no Content-Length to refuse it early
        for start in range(0, len(body), 100):
            yield body[start : start + 100]

    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json", **LEGACY}
    resp = await client.post("/limited", data=chunks(), headers=headers)
    assert resp.status == 413, await resp.text()
    assert (await resp.json())["details"][0]["code"] == "ERROR_PAYLOAD_TOO_LARGE"


async def test_a_busy_or_spent_account_s_large_body_is_refused_unread_and_its_small_ones_pass(
    aiohttp_client: Any, key: TestKey, redis_server: str
) -> None:
    """Issue 29: an account whose work budget is spent sends 368 KB traces in a loop; each one's
    read and parse cost the route service 40 ms before the 429. The gateway refuses a large
    body from a spent account before reading it (one Redis call), with when to retry; small
    bodies and other accounts pass on."""

    services = ("auth_service", "optimize_service")
    async with gateway_before(key, redis_server, services, cost_budgets="standard=6000/50/100/2") as config:
        gateway: TestClient = await aiohttp_client(create_app(config))
        await refused_early_unless_able_to_pay(gateway, key, redis_server)


async def refused_early_unless_able_to_pay(gateway: TestClient, key: TestKey, redis_server: str) -> None:
    from redis.asyncio import Redis

    redis = Redis.from_url(redis_server)
    seconds, micros = await redis.time()
    await redis.set("cost:user:spent", (seconds * 1000 + micros // 1000) + 100_000, px=200_000)  # 100 s of debt
    large = b'{"points": [' + b'{"lat": 48.1, "lon": 11.5},' * 700 + b'{"lat": 48.1, "lon": 11.5}]}'
    assert len(large) > 16 * 1024

    def bearer(subject: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key.token(sub=subject, tier='standard')}", **LEGACY}

    refused = await gateway.post("/v1/optimize/stops", data=large, headers=bearer("user:spent"))
    assert refused.status == 429, await refused.text()
    assert (await refused.json())["details"][0]["code"] == "ERROR_COST_LIMIT_EXCEEDED"
    assert 95 <= int(refused.headers["Retry-After"]) <= 100
    small = await gateway.post("/v1/optimize/stops", data=b"[]", headers=bearer("user:spent"))
    assert small.status == 200, await small.text()
    other = await gateway.post("/v1/optimize/stops", data=large, headers=bearer("user:other"))
    assert other.status == 200 and len((await other.json())["body"]) == len(large)
    # Both heavy slots held by live leases (and one expired, which does not count): refused too.
    await redis.zadd("heavy:user:busy", {"a": seconds + 100, "b": seconds + 100})
    busy = await gateway.post("/v1/optimize/stops", data=large, headers=bearer("user:busy"))
    assert busy.status == 429 and (await busy.json())["details"][0]["code"] == "ERROR_TOO_MANY_CONCURRENT"
    await redis.zadd("heavy:user:busy", {"b": seconds - 1})
    assert (await gateway.post("/v1/optimize/stops", data=large, headers=bearer("user:busy"))).status == 200
    await redis.aclose()


def raw_deflate(data: bytes) -> bytes:
    deflate = zlib.compressobj(wbits=-15)
    return deflate.compress(data) + deflate.flush()


@pytest.fixture
async def public_port() -> AsyncIterator[str]:
    """`read_limited_body` (limit 1000) behind the public port's own server, as the gateway
    runs it: bodies arrive as sent, decoded only as they are read."""
    from aiohttp.test_utils import unused_port

    from common.http_server import ApiAppRunner

    read: list[int] = []

    async def limited(request: web.Request) -> web.Response:
        try:
            return web.json_response({"size": len(await read_limited_body(request, 1000))})
        finally:
            read.append(request.content.total_raw_bytes)

    async def refuse(request: web.Request) -> web.Response:
        # Nothing decoded before a handler reads: aiohttp's decoding stream would count it.
        return web.json_response({"decodedOnArrival": request.content.total_compressed_bytes is not None}, status=401)

    app = base_app(BaseConfig(service="gateway"), with_redis=False, internal=False)
    app.router.add_post("/limited", limited)
    app.router.add_post("/refuse", refuse)
    runner = ApiAppRunner(app, header_timeout=5, access_log=None)
    await runner.setup()
    port = unused_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"http://127.0.0.1:{port}/limited"
    await runner.cleanup()


@pytest.mark.parametrize(
    ("encoding", "body", "status", "size"),
    [
        ("gzip", gzip.compress(b"x" * 900), 200, 900),
        ("deflate", zlib.compress(b"x" * 900), 200, 900),
        ("deflate", raw_deflate(b"x" * 900), 200, 900),  # without the zlib header, as some clients send
        ("identity", b"x" * 900, 200, 900),
        ("gzip", gzip.compress(b" " * 5000), 413, 0),  # over the limit once decoded
        ("gzip", zlib.compressobj(wbits=31).compress(b"") + b"\x00\x00\x00\xff\xff" * 400, 413, 0),  # as sent
        ("gzip", b'{"not": "compressed"}', 400, 0),
        ("gzip", gzip.compress(b"x" * 900)[:-12], 400, 0),  # cut short
    ],
    ids=["gzip", "deflate", "raw-deflate", "identity", "decoded-over", "sent-over", "not-gzip", "cut-short"],
)
async def test_the_public_port_decodes_a_body_as_it_is_read(
    public_port: str, encoding: str, body: bytes, status: int, size: int
) -> None:
    import aiohttp

    headers = {"Content-Encoding": encoding, "Content-Type": "application/json", **LEGACY}
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.post(public_port, data=body, headers=headers) as resp,
    ):
        assert resp.status == status, await resp.text()
        if status == 200:
            assert (await resp.json())["size"] == size


async def test_the_public_port_decodes_nothing_of_a_body_nobody_reads(public_port: str) -> None:
    """The campaign's bomb loop: aiohttp inflated each arriving chunk before the 401, 60 % of the
    gateway's work under it. The public port leaves the body as sent."""
    import aiohttp

    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json", **LEGACY}
    url = public_port.replace("/limited", "/refuse")
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.post(url, data=gzip.compress(bytes(1 << 20)), headers=headers) as resp,
    ):
        assert resp.status == 401
        assert (await resp.json()) == {"decodedOnArrival": False}
