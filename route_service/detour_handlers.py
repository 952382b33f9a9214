"""POST /v1/detour/file: the uploaded CSV's detours (thin: the work is in `route_service.detour`).

Checks in the order a client fixes them: the file name (400), the Content-Type (415), the
parameters (400), the size (413, read here with the detour's own limit rather than the app's
`client_max_size`, which stays small for the JSON endpoints), then the file itself, then its
price (`route_service.costs`: 413/429 from `common.admission`; a file is heavy work).

The work runs in the worker's large-call process (route_service.calls), never beside the
worker's event loop: detour lines in jobs of CHILD_CHUNKS x DETOUR_CHUNK lines (the client's
going away stops the file between two jobs), a track in one job whose matching stops between
its chunks. Without that process (ROUTE_LARGE_PROCESSES=0), or if it fails, in the thread pool.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence

from aiohttp import hdrs, web

from common.admission import Cost, caller_of
from common.errors import DetourFileTooLarge, ParameterErrors, UnsupportedMediaType
from common.service import json_response, read_limited_body
from common.waiting import unless_gone
from route_service.calls import LargeCalls
from route_service.costs import detour_cost
from route_service.detour.csvfile import (
    MAX_BYTES,
    DetourCase,
    Kind,
    LineError,
    ParsedFile,
    TrackPoint,
    decode_text,
    parse_file,
)
from route_service.detour.engine import DetourResult, Router, TrackResult, answer_cases, answer_track, chunks
from route_service.detour.filename import file_name
from route_service.detour.report import Request, detours_body, track_body
from route_service.matching import MIN_SPACING_M, thinned
from route_service.model import NO_RESTRICTIONS, Restrictions, RouteTime
from route_service.parsing import parse_departure, parse_profile
from route_service.providers.registry import ProviderRegistry
from route_service.state import STATE_KEY, RouteState

ACCEPTED_TYPES = ("text/csv", "text/plain")
UTF8 = ("utf-8", "utf8")
# Detour cases per thread-pool job: ~0.1-0.2 s of OSRM work, then other requests get the loop.
DETOUR_CHUNK = 100
# Chunks per job of the large-call process: a line costs ~0.3 ms (OSRM CH Table), a hop to the
# child a few milliseconds; ~0.15 s a job, the longest an abandoned file runs on.
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
    """provider, vehicle, type, departureTime: every violation in one 400. A departure time
    (issue 33) is the file's: every line's routes leave then (a file of detours is one plan
    for one moment; a per-line column would make every line its own request)."""
    errors = ParameterErrors()
    vehicle, route_type, name = parse_profile(query, errors)
    departure = parse_departure(query, errors, "every line of the file leaves at one time")
    restrictions = Restrictions(time=RouteTime(departure)) if departure is not None else NO_RESTRICTIONS
    provider = registry.choose(name, vehicle, route_type, errors, restrictions=restrictions, serving="cost")
    return Router(provider, vehicle, route_type, departure)


def parse_body(body: bytes) -> tuple[ParsedFile, Cost]:
    """The file and its price (in the thread pool: both walk every line)."""
    parsed = parse_file(decode_text(body))
    if parsed.kind is Kind.DETOURS:
        return parsed, detour_cost(len(parsed.cases), None, MIN_SPACING_M)
    steps = thinned([p.point for p in parsed.points], MIN_SPACING_M).steps_m
    return parsed, detour_cost(len(parsed.points), steps, MIN_SPACING_M)


async def detour_file(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    filename = file_name(request.headers.get(hdrs.CONTENT_DISPOSITION), request.query.get("filename"))
    check_content_type(request)
    dataset, registry = state.ready()
    router = parse_options(request.query, registry)
    parsed, price = await state.run(parse_body, await read_limited_body(request, MAX_BYTES, DetourFileTooLarge, "the file"))
    answer = Request(filename, router.provider.name, router.vehicle, router.route_type, dataset.hash)
    async with state.admission.admit(caller_of(request.headers), price) as admitted:
        if parsed.kind is Kind.DETOURS:
            results, errors = await unless_gone(request, detours(state, router, parsed))
            body = detours_body(answer, parsed.lines_read, results, errors)
        else:
            track, errors = await unless_gone(request, track_of(state, router, parsed.points))
            body = track_body(answer, parsed.lines_read, track, [*parsed.errors, *errors])
    return json_response(body, headers=admitted.headers)


async def track_of(
    state: RouteState, router: Router, points: list[TrackPoint]
) -> tuple[TrackResult | None, list[LineError]]:
    large = state.calls.large
    if large is None:
        return await state.calls.stoppable(lambda abandoned: answer_track(router, points, abandoned))
    return await large.detour_track(router.provider.name, router.vehicle, router.route_type, points, router.departure)


async def detours(state: RouteState, router: Router, parsed: ParsedFile) -> Answered:
    """In chunks: in the large-call process when there is one, else in the thread pool, so a
    big file never holds the event loop for its whole duration."""
    queue: Chunks = deque(chunks(parsed.cases, DETOUR_CHUNK))
    large = state.calls.large
    answered, failed = await (in_child(large, state, router, queue) if large else in_worker(state, router, queue))
    return answered, [*parsed.errors, *failed]


async def in_worker(state: RouteState, router: Router, queue: Chunks) -> Answered:
    results: list[DetourResult] = []
    errors: list[LineError] = []
    while queue:
        answered, failed = await state.run(answer_cases, router, queue.popleft())
        results.extend(answered)
        errors.extend(failed)
    return results, errors


async def in_child(large: LargeCalls, state: RouteState, router: Router, queue: Chunks) -> Answered:
    """CHILD_CHUNKS chunks a job; if the child fails (killed, out of memory), the lines it had
    and the rest of the file are answered in the worker."""
    results: list[DetourResult] = []
    errors: list[LineError] = []
    while queue:
        cases = [case for _ in range(min(CHILD_CHUNKS, len(queue))) for case in queue.popleft()]
        try:
            answered, failed = await large.detour_cases(
                router.provider.name, router.vehicle, router.route_type, cases, router.departure
            )
        except Exception:  # the pool restarts its child; this file finishes without it
            log.exception("the large-call process failed on %d detour lines", len(cases))
            queue.appendleft(cases)
            answered, failed = await in_worker(state, router, queue)
        results.extend(answered)
        errors.extend(failed)
    return results, errors
