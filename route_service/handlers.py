"""HTTP handlers of the route service: parse, choose a provider, run it (`calls.ProviderCalls`
decides where), format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web

from common.errors import DatasetNotReady
from common.service import dump_json, json_response, read_json
from route_service.cache import RouteCache, cache_key
from route_service.calls import ProviderCalls
from route_service.dataset import Dataset
from route_service.formatter import matrix_body, route_body, waypoints_body
from route_service.parsing import parse_matrix, parse_route, parse_waypoints
from route_service.providers.registry import ProviderRegistry

T = TypeVar("T")


@dataclass
class RouteState:
    """What the handlers need; `registry` stays None until a dataset is loaded."""

    calls: ProviderCalls
    cache: RouteCache
    dataset: Dataset | None = None
    registry: ProviderRegistry | None = None
    load_error: str | None = None
    counters: dict[str, int] = field(default_factory=lambda: {"cache_hits": 0, "cache_misses": 0})

    def ready(self) -> tuple[Dataset, ProviderRegistry]:
        if self.dataset is None or self.registry is None:
            raise DatasetNotReady(self.load_error or "the map data is still loading")
        return self.dataset, self.registry

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """In the thread pool (detour files)."""
        return await self.calls.run(function, *args)


STATE_KEY: web.AppKey[RouteState] = web.AppKey("route_state", RouteState)


def json_bytes_response(body: bytes, cache: str) -> web.Response:
    return web.Response(body=body, content_type="application/json", headers={"X-Cache": cache})


async def route(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    parsed = parse_route(request.query, registry.check)
    provider = registry.choose(parsed.provider, parsed.query.emergency_radius_m)
    key = cache_key(parsed.query, provider.name, dataset.hash)
    cached = await state.cache.get(key)
    if cached is not None:
        state.counters["cache_hits"] += 1
        return json_bytes_response(cached, "hit")
    state.counters["cache_misses"] += 1
    result = await state.calls.run_provider(provider.name, provider.route, parsed.query)
    body = dump_json(route_body(result, parsed.query, provider.name, dataset.hash))
    state.cache.put(key, body)
    return json_bytes_response(body, "miss")


async def providers(request: web.Request) -> web.Response:
    _, registry = request.app[STATE_KEY].ready()
    items = [
        {
            "name": info.name,
            "description": info.description,
            "default": info.name == registry.default_name,
            "vehicles": list(info.vehicles),
            "types": list(info.route_types),
            "capabilities": {
                "emergencyRouting": info.emergency_routing,
                "alternatives": info.alternatives,
                "matrix": info.matrix,
            },
        }
        for info in registry.infos()
    ]
    return json_response({"providers": items, "default": registry.default_name})


async def matrix(request: web.Request) -> web.Response:
    """Internal (not routed by the gateway): durations and distances between point sets."""
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    query, name = parse_matrix(await read_json(request, check_media_type=False))
    provider = registry.get(name)
    result = await state.calls.matrix(provider, query)
    return json_response(matrix_body(result, provider.name, dataset.hash))


async def route_waypoints(request: web.Request) -> web.Response:
    """Internal (not routed by the gateway): one route through waypoints in the given order,
    with geometry and per-leg distance and duration (the optimize service's tour)."""
    state = request.app[STATE_KEY]
    dataset, registry = state.ready()
    query, name = parse_waypoints(await read_json(request, check_media_type=False))
    provider = registry.get(name)
    result = await state.calls.route_waypoints(provider, query)
    return json_response(waypoints_body(result, provider.name, dataset.hash))
