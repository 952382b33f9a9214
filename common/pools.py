"""Pools of workers (no aiohttp): process pools that start over when one of their processes
dies, and threads shared fairly between accounts.

A `ProcessPoolExecutor` whose process is killed (out of memory, kill -9) is broken for good:
every later call would fail at once until the service restarts. `RestartingPool` fails the
calls that were in the dead process with a typed 503 and gives the next calls a new pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
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


class SharedThreads:
    """A few threads that no account can fill (issue 55: seven wide-header batches parsed at once
    took another account's one-line batch from 6 ms to 22.4 s in the shared default pool).

    Each account runs at most `share` calls at once; its further calls wait for its own, so
    another account's call finds a thread. A call gets a stop event, set when the task awaiting
    it is cancelled (its client went), which the work checks between steps to end early.
    """

    def __init__(self, name: str, threads: int, share: int = 1) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        self.share = share
        self._turns: dict[str, asyncio.Semaphore] = {}
        self._waiting: dict[str, int] = {}

    async def run(self, account: str, function: Callable[[threading.Event], T]) -> T:
        turn = self._turns.setdefault(account, asyncio.Semaphore(self.share))
        self._waiting[account] = self._waiting.get(account, 0) + 1
        try:
            async with turn:
                return await self._call(function)
        finally:
            self._waiting[account] -= 1
            if not self._waiting[account]:  # nobody of the account left: forget it
                del self._waiting[account], self._turns[account]

    async def _call(self, function: Callable[[threading.Event], T]) -> T:
        stop = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(self.executor, function, stop)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            stop.set()  # the thread ends at its next check; its turn is held until then
            with contextlib.suppress(Exception):
                await future
            raise

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
