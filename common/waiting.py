"""Work that stops when nobody waits for it any more (issue 29: a trace's matching burnt on for
42 CPU-s after `curl -m2` had given up).

Our server does not cancel a handler when its client goes (aiohttp's `handler_cancellation` is
off, as in production), so a heavy handler asks: every GONE_POLL_SECONDS while its work runs,
whether the connection is closed (the client gave up, or the gateway's timeout closed it). Then
the work is cancelled, which abandons a child-process job or sets a thread's stop flag
(`route_service.calls`), gives up an optimization's turn or search (`optimize_service`), or, in
the gateway, drops the upstream call, whose closed connection the service then sees in turn;
the answer is the log's 499. A cancelled handler (the test server does cancel) cancels the work
the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable

from aiohttp import web

from common.middleware import client_gone

GONE_POLL_SECONDS = 0.2


async def unless_gone[T](request: web.Request, work: Awaitable[T]) -> T:
    """`work`'s result, or ConnectionResetError once the client has closed its connection."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=GONE_POLL_SECONDS)
            if done:
                return task.result()
            if client_gone(request):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise ConnectionResetError(f"the client closed the connection during {request.path}")
    finally:
        if not task.done():
            task.cancel()  # this handler was cancelled: so is its work
