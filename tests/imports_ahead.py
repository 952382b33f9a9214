"""The test session's slow map imports, started ahead in one background process while the first
tests run (`make test` sets TEST_IMPORTS_AHEAD=1; a run without it imports each map when a test
first needs it, as before).

Why: the suite ran some 4 minutes of imports in the setups of its first route and geocoder
tests, one after the other, while the tests before them leave a core mostly idle (profile of a
clean run, 2026-11-29: the largest setups were Heidelberg's 8 profiles 80 s, the merged map 53 s,
Monaco's geocoder copies 38 s). A fixture takes what was started for it (`result`), and an
import started ahead fails its fixture as it would have failed there.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

IMPORTS_AHEAD_ENV = "TEST_IMPORTS_AHEAD"


def wanted() -> bool:
    return os.environ.get(IMPORTS_AHEAD_ENV) == "1"


class ImportsAhead:
    """Imports queued in one worker process, in the order the session first needs them."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._started: dict[str, Future[Any]] = {}

    def start(self, key: str, function: Callable[..., Any], *args: Any) -> None:
        """Queues `function(*args)` (picklable: a module-level function and plain arguments)."""
        if self._pool is None:
            # spawn: the worker starts clean, not a fork of a process with Redis clients and threads
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        self._started[key] = self._pool.submit(function, *args)

    def result[T](self, key: str, here: Callable[[], T]) -> T:
        """What was started under `key` (waiting for it), else `here()` run now."""
        started = self._started.pop(key, None)
        return here() if started is None else started.result()

    @property
    def keys(self) -> list[str]:
        return list(self._started)

    def close(self) -> None:
        """Drops what no test took; waits for a running import (none at the end of a whole run)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._started.clear()
