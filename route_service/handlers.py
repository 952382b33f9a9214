"""HTTP handlers of the route service: one for every operation record (`operations`): read its
inputs, parse (which validates and chooses the provider), price (`costs`; the caller's account
pays through `common.admission`, heavy work holding one of its slots), call (`state` and
`calls` decide where; the work stops when its client goes, `waiting`), respond with what the
record's formatter writes and the admission's RateLimit-Cost headers. Internal operations are
made on nobody's behalf and are not charged."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import web

from common.admission import Cost, caller_of, measured
from common.internal_auth import INTERNAL_TIER_HEADER
from common.service import decode_json, json_response, require_json_media_type
from common.waiting import unless_gone
from route_service.config import MatrixLimits
from route_service.formatter import providers_body
from route_service.operations import Inputs, Operation, Source
from route_service.providers.registry import ProviderRegistry
from route_service.state import STATE_KEY, Answer
from route_service.traces import GPX_MEDIA_TYPES

Handler = Callable[[web.Request], Awaitable[web.Response]]


def handler(operation: Operation[Any, Any]) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        state = request.app[STATE_KEY]
        dataset, registry = state.ready()
        inputs = await read_inputs(request, operation.source, state.matrix_limits)
        read = partial(parsed_and_priced, operation, inputs, registry)
        (parsed, price), read_s = await asyncio.to_thread(measured, read) if operation.in_thread else (read(), 0.0)
        watch = partial(unless_gone, request) if operation.stops_when_gone else unwatched
        if price is None:  # internal: on nobody's behalf
            called = await state.call(operation, parsed, dataset, watch)
            return response(await state.written(operation, called, parsed, dataset, registry))
        caller = caller_of(request.headers)
        async with state.admission.admit(caller, price) as admitted:
            called = await state.call(operation, parsed, dataset, watch)
            if operation.settle is not None:  # the answer's writing is part of what it settles
                answer = await state.written(operation, called, parsed, dataset, registry, read_s)
                await state.admission.settle(caller, admitted, answer.settled or 0)
                return response(answer, admitted.headers)
        # written once its heavy slot is free (a 1000 x 1000 matrix's JSON takes 0.13 s)
        return response(await state.written(operation, called, parsed, dataset, registry), admitted.headers)

    return handle


def parsed_and_priced[P](operation: Operation[P, Any], inputs: Inputs, registry: ProviderRegistry) -> tuple[P, Cost | None]:
    parsed = operation.parse(inputs, registry)
    return parsed, operation.price(parsed) if operation.price is not None else None


async def unwatched[T](work: Awaitable[T]) -> T:
    return await work


async def read_inputs(request: web.Request, source: Source, matrix_limits: MatrixLimits) -> Inputs:
    """The request's parameters, from where its operation reads them."""
    body, raw = None, b""
    if source == "bytes" and request.content_type not in GPX_MEDIA_TYPES:
        require_json_media_type(request.content_type)
    if source == "json":
        require_json_media_type(request.content_type)
    if source in ("json", "internal"):
        body = decode_json(await request.read())
    elif source == "bytes":
        raw = await request.read()
    tier = request.headers.get(INTERNAL_TIER_HEADER)
    return Inputs(request.query, request.headers, body, raw, request.content_type, tier, matrix_limits)


def response(answer: Answer, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=answer.body, content_type="application/json", headers={**answer.headers, **(headers or {})})


async def providers(request: web.Request) -> web.Response:
    dataset, registry = request.app[STATE_KEY].ready()
    return json_response(providers_body(registry.providers.values(), registry.default_name, dataset))
