"""POST /v1/detour/file: the uploaded CSV's detours (thin: the work is in `route_service.detour`).

Checks in the order a client fixes them: the file name (400), the Content-Type (415), the
parameters (400), the size (413, read here with the detour's own limit rather than the app's
`client_max_size`, which stays small for the JSON endpoints), then the file itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Mapping, Sequence

from aiohttp import hdrs, web

from common.errors import DetourFileTooLarge, ParameterErrors, UnsupportedMediaType
from common.service import json_response
from route_service.calls import LargeCalls
from route_service.detour.csvfile import MAX_BYTES, DetourCase, Kind, LineError, ParsedFile, decode_text, parse_file
from route_service.detour.engine import DetourResult, Router, answer_cases, answer_track, chunks
from route_service.detour.filename import file_name
from route_service.detour.report import Request, detours_body, track_body
from route_service.parsing import parse_profile
from route_service.providers.registry import ProviderRegistry
from route_service.state import STATE_KEY, RouteState

ACCEPTED_TYPES = ("text/csv", "text/plain")
UTF8 = ("utf-8", "utf8")
# Detour cases per thread-pool job: ~0.1-0.2 s of OSRM work, then other requests get the loop.
DETOUR_CHUNK = 100
# From this many lines on, the worker's large-call process (route_service.calls) answers a share
# of the file beside the worker, taking CHILD_CHUNKS chunks at a time from the end of the file
# while the worker takes them from the start, so both finish together whatever each one's speed
# (the child is niced: on a busy machine it does less). A line costs ~0.3 ms (OSRM CH Table), a
# hop to the child a few milliseconds.
PARALLEL_LINES = 2000
CHILD_CHUNKS = 5

Chunks = deque[Sequence[DetourCase]]
Answered = tuple[list[DetourResult], list[LineError]]
log = logging.getLogger("route_service.detour")


def check_content_type(request: web.Request) -> None:
    charset = request.charset
    if request.content_type not in ACCEPTED_TYPES or (charset is not None and charset.lower() not in UTF8):
        got = request.headers.get(hdrs.CONTENT_TYPE, "nothing")
        raise UnsupportedMediaType(
            f"send the file as text/csv or text/plain (charset utf-8 if any), got {got[:80]!r}",
            parameter="Content-Type",
        )


def parse_options(query: Mapping[str, str], registry: ProviderRegistry) -> Router:
    """provider, vehicle, type: every violation in one 400."""
    errors = ParameterErrors()
    vehicle, route_type, name = parse_profile(query, errors)
    return Router(registry.choose(name, vehicle, route_type, errors), vehicle, route_type)


async def read_body(request: web.Request, limit: int) -> bytes:
    if request.content_length is not None and request.content_length > limit:
        raise DetourFileTooLarge(f"the file has {request.content_length} bytes; at most {limit} are accepted")
    body = bytearray()
    async for chunk in request.content.iter_chunked(1 << 16):
        body += chunk
        if len(body) > limit:
            raise DetourFileTooLarge(f"the file is larger than {limit} bytes, the limit")
    return bytes(body)


def parse_body(body: bytes) -> ParsedFile:
    return parse_file(decode_text(body))


async def detour_file(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    filename = file_name(request.headers.get(hdrs.CONTENT_DISPOSITION), request.query.get("filename"))
    check_content_type(request)
    dataset, registry = state.ready()
    router = parse_options(request.query, registry)
    parsed = await state.run(parse_body, await read_body(request, MAX_BYTES))
    answer = Request(filename, router.provider.name, router.vehicle, router.route_type, dataset.hash)
    if parsed.kind is Kind.DETOURS:
        results, errors = await detours(state, router, parsed)
        return json_response(detours_body(answer, parsed.lines_read, results, errors))
    track, errors = await state.run(answer_track, router, parsed.points)
    return json_response(track_body(answer, parsed.lines_read, track, [*parsed.errors, *errors]))


async def detours(state: RouteState, router: Router, parsed: ParsedFile) -> Answered:
    """In chunks, so a big file does not hold the event loop for its whole duration; a big file
    shared with the large-call process."""
    queue: Chunks = deque(chunks(parsed.cases, DETOUR_CHUNK))
    large = state.calls.large
    shares = [in_worker(state, router, queue)]
    if large is not None and router.provider.name == large.provider and len(parsed.cases) >= PARALLEL_LINES:
        shares.append(in_child(large, state, router, queue))
    results: list[DetourResult] = []
    errors = list(parsed.errors)
    for answered, failed in await asyncio.gather(*shares):
        results.extend(answered)
        errors.extend(failed)
    return results, errors


async def in_worker(state: RouteState, router: Router, queue: Chunks) -> Answered:
    results: list[DetourResult] = []
    errors: list[LineError] = []
    while queue:
        answered, failed = await state.run(answer_cases, router, queue.popleft())
        results.extend(answered)
        errors.extend(failed)
    return results, errors


async def in_child(large: LargeCalls, state: RouteState, router: Router, queue: Chunks) -> Answered:
    """Chunks from the end of the file in the child; if it fails (killed, out of memory), the
    lines it had are answered in the worker and the rest of the file is left to the worker."""
    results: list[DetourResult] = []
    errors: list[LineError] = []
    while queue:
        cases = [case for _ in range(min(CHILD_CHUNKS, len(queue))) for case in queue.pop()]
        try:
            answered, failed = await large.detour_cases(router.vehicle, router.route_type, cases)
        except Exception:  # the pool restarts its child; this file finishes without it
            log.exception("the large-call process failed on %d detour lines", len(cases))
            answered, failed = await state.run(answer_cases, router, cases)
            results.extend(answered)
            errors.extend(failed)
            break
        results.extend(answered)
        errors.extend(failed)
    return results, errors
