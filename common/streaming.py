"""Answers written as their bytes come (a job's result from the store, a service's answer
through the gateway), so a process holds a chunk of an answer, never all of it, whatever its
size and however many read it at once (issue 55)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable

from aiohttp import web

log = logging.getLogger("common.streaming")


async def stream(request: web.Request, response: web.StreamResponse, chunks: AsyncIterable[bytes]) -> web.StreamResponse:
    """Writes `chunks` as the answer. The first is awaited before anything is sent, so a failure
    to start (the store refusing, the job gone) is still an error answer; a failure after it
    closes the connection, so the client sees a cut answer, never one that looks complete."""
    iterator = aiter(chunks)
    first = await anext(iterator, b"")
    await response.prepare(request)
    try:
        await response.write(first)
        async for chunk in iterator:
            await response.write(chunk)
    except Exception as exc:  # whatever broke, the status line is sent: only the cut is left to say
        log.info("an answer to %s %s was cut: %s", request.method, request.path, exc)
        if request.transport is not None:
            request.transport.close()
        return response
    await response.write_eof()
    return response
