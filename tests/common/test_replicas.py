"""Calls to a service spread over its replicas: a scaled service (compose `--scale`) is one name
with one address per replica, and new connections take those addresses in turn."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

import aiohttp
import aiohttp.abc
from aiohttp import web
from aiohttp.abc import ResolveResult
from aiohttp.test_utils import TestServer

from common.client import ServiceClient, upstream_connector


class Replicas(aiohttp.abc.AbstractResolver):
    """Resolves every name to the given loopback ports, always in the same order (so any
    spreading comes from the connector, not from the resolver)."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host="127.0.0.1", port=p, family=socket.AF_INET, proto=0, flags=0)
            for p in self.ports
        ]

    async def close(self) -> None:
        return None


def replica(name: str, seen: Counter[str]) -> web.Application:
    async def answer(request: web.Request) -> web.Response:
        seen[name] += 1
        await asyncio.sleep(0.05)  # requests overlap, so the client opens several connections
        return web.json_response({"replica": name})

    app = web.Application()
    app.router.add_get("/work", answer)
    return app


async def test_concurrent_calls_reach_every_replica() -> None:
    seen: Counter[str] = Counter()
    servers = [TestServer(replica(name, seen), host="127.0.0.1") for name in ("a", "b", "c")]
    for server in servers:
        await server.start_server()
    try:
        ports = [int(server.port) for server in servers]  # type: ignore[arg-type]
        session = aiohttp.ClientSession(connector=upstream_connector(16, resolver=Replicas(ports)))
        client = ServiceClient("route", "http://route_service:8083", session=session)
        try:
            replies = await asyncio.gather(*(client.call("GET", "/work") for _ in range(12)))
        finally:
            await session.close()
    finally:
        for server in servers:
            await server.close()
    assert [reply.status for reply in replies] == [200] * 12
    assert set(seen) == {"a", "b", "c"}, seen
    assert max(seen.values()) - min(seen.values()) <= 1, "new connections take the replicas in turn"
