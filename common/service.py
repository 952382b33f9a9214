"""The app factory base and runner that every service shares.

Configuration is reached one way: a service's `__main__` reads it once from the environment
(`<Service>Config.from_env()`, the only reader of the environment) and runs
`run(create_app, config)`; `create_app(config)` calls `base_app(config)`, adds its routes,
and builds its domain objects at start-up (cleanup contexts), handing each the values it needs.
Handlers reach those objects through the app, never the configuration.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from common import supervisor
from common.config import BaseConfig
from common.errors import ApiError, MalformedBody, UnsupportedMediaType
from common.http_server import PUBLIC_PORT_KEY, run_app
from common.internal_auth import internal_auth_middlewares, require_internal_token, shows_internals
from common.logging import setup_logging
from common.middleware import make_middlewares, standard_headers
from common.processes import bind_error
from common.redis import ResilientRedis
from common.supervisor import Supervision, supervision_checks

# The state Redis (REDIS_URL): rate limits and revocations, never evicted.
REDIS_KEY: web.AppKey[ResilientRedis] = web.AppKey("redis", ResilientRedis)
# The cache Redis (REDIS_CACHE_URL, else the state Redis): answers that may be evicted.
CACHE_REDIS_KEY: web.AppKey[ResilientRedis] = web.AppKey("cache_redis", ResilientRedis)
# The configuration `create_app(config)` was given, for the shared parts (Redis, health). A
# service's own objects get their values at construction; handlers never read configuration.
CONFIG_KEY: web.AppKey[BaseConfig] = web.AppKey("config", BaseConfig)
HealthCheck = Callable[[web.Application], Awaitable[dict[str, Any]]]
HEALTH_CHECKS_KEY: web.AppKey[list[HealthCheck]] = web.AppKey("health_checks", list)

log = logging.getLogger("common.service")


def is_json_media_type(content_type: str) -> bool:
    return content_type == "application/json" or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )


async def read_json(request: web.Request, *, check_media_type: bool = True) -> Any:
    """The request's JSON body: 415 unless it is sent as JSON, 400 when it does not parse.

    Internal endpoints skip the media-type check: their only callers are our services."""
    if check_media_type:
        require_json_media_type(request.content_type)
    return decode_json(await request.read())


def require_json_media_type(content_type: str) -> None:
    if not is_json_media_type(content_type):
        raise UnsupportedMediaType(f"send the body as application/json, not {content_type!r}", parameter="Content-Type")


def decode_json(raw: bytes) -> Any:
    """A body's JSON, or 400 when it does not parse."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MalformedBody(f"the body is not valid JSON: {exc}") from exc


def dump_json(data: Any) -> bytes:
    """JSON bytes; numpy arrays (route geometries) are written directly, without a Python
    object per number."""
    return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY)


def json_response(data: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dump_json(data), status=status, content_type="application/json", headers=headers)


async def read_limited_body(request: web.Request, limit: int, too_large: Callable[[str], ApiError],
                            what: str = "the body", start_checked: Callable[[bytes], bool] | None = None) -> bytes:  # fmt: skip
    """A body larger than the app's `client_max_size` (an upload: a detour file, a geocoder
    batch), read in chunks up to its operation's own `limit`; `too_large(message)` is raised
    as soon as the declared length or the bytes read pass it. `start_checked(start)`, given the
    bytes read so far until it answers True, refuses a body by its start (a batch's header)
    before the rest is read."""
    if request.content_length is not None and request.content_length > limit:
        raise too_large(f"{what} has {request.content_length} bytes; at most {limit} are accepted")
    body = bytearray()
    async for chunk in request.content.iter_chunked(1 << 16):
        body += chunk
        if len(body) > limit:
            raise too_large(f"{what} is larger than {limit} bytes, the limit")
        if start_checked is not None and start_checked(bytes(body)):
            start_checked = None
    return bytes(body)


async def _redis_context(app: web.Application) -> AsyncIterator[None]:
    app[REDIS_KEY] = ResilientRedis(app[CONFIG_KEY].redis_url)
    yield
    await app[REDIS_KEY].close()


async def _cache_redis_context(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG_KEY]
    if not config.redis_cache_url and REDIS_KEY in app:
        app[CACHE_REDIS_KEY] = app[REDIS_KEY]  # one Redis for both roles, closed by its own context
        yield
        return
    app[CACHE_REDIS_KEY] = ResilientRedis(config.redis_cache_url or config.redis_url, role="cache")
    yield
    await app[CACHE_REDIS_KEY].close()


async def health(request: web.Request) -> web.Response:
    app = request.app
    config = app[CONFIG_KEY]
    checks: dict[str, Any] = {}
    if REDIS_KEY in app:
        checks["redis"] = "up" if await app[REDIS_KEY].ping() else "down"
    if CACHE_REDIS_KEY in app and app[CACHE_REDIS_KEY] is not app.get(REDIS_KEY):
        checks["redis_cache"] = "up" if await app[CACHE_REDIS_KEY].ping() else "down"
    ready = True
    for check in app[HEALTH_CHECKS_KEY]:
        result = await check(app)
        ready = ready and bool(result.pop("ready", True))
        checks.update(result)
    checks.update(supervision_checks(config.workers))
    # Redis down degrades (caches bypassed) but does not make a service unready.
    status = "ok" if ready else "unavailable"
    body: dict[str, Any] = {"service": config.service, "status": status}
    if shows_internals(request, config.internal_token):
        body["checks"] = checks  # dataset hashes, key ids, workers: for our own callers only
    return json_response(body, status=200 if ready else 503)


async def freeze_startup_objects(app: web.Application) -> None:
    """Moves everything alive after start-up (map data, indexes, imported modules) out of the
    garbage collector's reach. Otherwise each full collection walks it all again: 44-69 ms
    per collection with the Heidelberg route data loaded (measured), a stall that lands in
    the latency tail of whatever requests are in flight."""
    gc.collect()
    gc.freeze()


async def unfreeze(app: web.Application) -> None:
    # Frozen objects are never released at exit; the OSRM binding then reports them as leaks.
    gc.unfreeze()


async def metrics(request: web.Request) -> web.Response:
    return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})


def base_app(
    config: BaseConfig,
    *,
    with_redis: bool = True,
    with_cache: bool = False,
    health_handler: Callable[[web.Request], Awaitable[web.StreamResponse]] = health,
    internal: bool = True,
) -> web.Application:
    """`internal`: the port serves only our own services, which send the internal credential
    (common.internal_auth); the gateway's public port passes False."""
    middlewares = [
        *make_middlewares(config.service, body_timeout_seconds=config.body_timeout_seconds),
        *internal_auth_middlewares(config, internal=internal),
    ]
    app = web.Application(middlewares=middlewares, client_max_size=config.max_body_bytes)
    app[CONFIG_KEY] = config
    app[HEALTH_CHECKS_KEY] = []
    app[PUBLIC_PORT_KEY] = not internal  # the server then drops clients' X-Internal-* headers
    app.on_response_prepare.append(standard_headers)
    if with_redis:
        app.cleanup_ctx.append(_redis_context)
    if with_cache:
        app.cleanup_ctx.append(_cache_redis_context)
    app.router.add_get("/health", health_handler)
    app.router.add_get("/metrics", metrics)
    # After the cleanup contexts (aiohttp runs them first), so the loaded data is included.
    app.on_startup.append(freeze_startup_objects)
    app.on_cleanup.append(unfreeze)
    return app


def run(create_app: Callable[[Any], web.Application], config: BaseConfig) -> None:
    setup_logging(config.service, config.log_level)
    require_internal_token(config)
    supervision = supervisor.register(config.service, config.workers)
    if config.workers > 1:
        sys.exit(supervise(create_app, config, supervision))
    serve(create_app, config)


def serve(create_app: Callable[[Any], web.Application], config: BaseConfig, *, reuse_port: bool = False) -> None:
    try:
        import uvloop

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    except ImportError:  # uvloop is optional (e.g. on Windows)
        loop = asyncio.new_event_loop()
    log.info("starting %s on %s:%s", config.service, config.host, config.port)
    # Not aiohttp's run_app: its server answers parser refusals itself (common.http_server).
    run_app(
        create_app(config),
        host=config.host,
        port=config.port,
        loop=loop,
        header_timeout=config.header_timeout_seconds,
        reuse_port=reuse_port,
        shutdown_timeout=5,
        keepalive_timeout=config.idle_timeout_seconds,
        max_connections_per_client=config.max_connections_per_client,
    )


def supervise(create_app: Callable[[Any], web.Application], config: BaseConfig, supervision: Supervision) -> int:
    """`config.workers` forked processes serving the port together, each restarted when it
    ends (common.supervisor). A port another program holds fails here, before any fork,
    with the reason; the workers themselves may share it (SO_REUSEPORT)."""
    taken = bind_error(config.host, config.port)
    if taken:
        log.error("%s cannot listen on %s:%d: %s", config.service, config.host, config.port, taken)
        return 1
    return supervisor.supervise(lambda: serve(create_app, config, reuse_port=True), supervision)
