"""Process pools that start over when one of their processes dies (no aiohttp).

A `ProcessPoolExecutor` whose process is killed (out of memory, kill -9) is broken for good:
every later call would fail at once until the service restarts. `RestartingPool` fails the
calls that were in the dead process with a typed 503 and gives the next calls a new pool.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from prometheus_client import Counter

from common.errors import ServiceUnavailable

T = TypeVar("T")
log = logging.getLogger("common.pools")

POOL_RESTARTS = Counter(
    "process_pool_restarts", "Process pools started again after one of their processes died", ["pool"]
)


class RestartingPool:
    """Runs calls in an executor from `new_executor`, replaced when one of its processes dies."""

    def __init__(self, name: str, new_executor: Callable[[], Executor]) -> None:
        self.name = name  # what the pool does, for the log and the metric
        self._new_executor = new_executor
        self.executor = new_executor()
        self.restarts = 0

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        executor = self.executor
        try:
            future = loop.run_in_executor(executor, function, *args)
        except BrokenProcessPool:
            # It broke while idle: no call was lost, so this one goes to the new pool.
            executor = self.replace(executor)
            future = loop.run_in_executor(executor, function, *args)
        try:
            return await future
        except BrokenProcessPool as exc:
            # Not retried: the call itself may be what killed the process (memory).
            self.replace(executor)
            raise ServiceUnavailable(
                f"the {self.name} process ended during this request; a new one is starting, try again",
                headers={"Retry-After": "1"},
            ) from exc

    def replace(self, broken: Executor) -> Executor:
        """The executor that follows `broken`: made once, however many calls saw it break."""
        if self.executor is broken:
            self.restarts += 1
            POOL_RESTARTS.labels(self.name).inc()
            log.error("a %s process died; starting a new pool (restart %d)", self.name, self.restarts)
            broken.shutdown(wait=False, cancel_futures=True)
            self.executor = self._new_executor()
        return self.executor

    def shutdown(self, *, wait: bool, drain: bool = False) -> None:
        """Stops the pool; `drain` runs the calls already queued first (a map switch: none fails)."""
        self.executor.shutdown(wait=wait, cancel_futures=not drain)
