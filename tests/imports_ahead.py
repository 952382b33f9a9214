"""The test session's slow map imports, started ahead in one background process while the first
tests run (`make test` sets TEST_IMPORTS_AHEAD=1; a run without it imports each map when a test
first needs it, as before).

Under pytest-xdist (`make test` runs two workers) each import is made once for the whole run:
its folder and its result lie in the run's shared temporary folder, behind a lock (`once`), so
the worker that asks second waits for the first's import and takes it.

Why: the suite ran some 4 minutes of imports in the setups of its first route and geocoder
tests, one after the other, while the tests before them leave a core mostly idle (profile of a
clean run, 2026-11-29: the largest setups were Heidelberg's 8 profiles 80 s, the merged map 53 s,
Monaco's geocoder copies 38 s). A fixture takes what was started for it (`result`), and an
import started ahead fails its fixture as it would have failed there.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import pickle
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

IMPORTS_AHEAD_ENV = "TEST_IMPORTS_AHEAD"


def wanted() -> bool:
    return os.environ.get(IMPORTS_AHEAD_ENV) == "1"


BUSY = "another process of the run is making it"


def once[T](root: Path, key: str, function: Callable[..., T], *args: Any, wait: bool = True) -> T | str:
    """`function(*args)` run once for every process of the test run that asks under `key`: the
    first runs it, holding `key`'s lock in `root`, and leaves its result there; the others wait
    for the lock and read it (or, not to `wait`, are told BUSY). A failed run leaves nothing: the
    next to ask runs it again."""
    done = root / f"{key}.pickle"
    with open(root / f"{key}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)  # released at close
        except BlockingIOError:
            return BUSY
        if done.exists():
            result: T = pickle.loads(done.read_bytes())  # noqa: S301 - written by this run, below
            return result
        result = function(*args)
        done.write_bytes(pickle.dumps(result))
        return result


class ImportsAhead:
    """Imports queued in one worker process, in the order the session first needs them, each
    made once for the run in `root` (the run's temporary folder every pytest-xdist worker shares)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pool: ProcessPoolExecutor | None = None
        self._started: dict[str, Future[Any]] = {}

    def out(self, key: str) -> Path:
        """The folder `key`'s import writes to, the same in every worker."""
        folder = self.root / key
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def start(self, key: str, function: Callable[..., Any], *args: Any) -> None:
        """Queues `function(*args)` (picklable: a module-level function and plain arguments)."""
        if self._pool is None:
            # spawn: the worker starts clean, not a fork of a process with Redis clients and threads
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        # Not waiting: while another worker's process makes this import, this one makes the next
        self._started[key] = self._pool.submit(once, self.root, key, function, *args, wait=False)

    def result[T](self, key: str, here: Callable[[], T]) -> T:
        """What was started under `key` (waiting for it), else made now (`here()`), or by another
        worker of the run."""
        started = self._started.pop(key, None)
        made = BUSY if started is None else started.result()
        return once(self.root, key, here) if made == BUSY else made  # type: ignore[return-value]

    @property
    def keys(self) -> list[str]:
        return list(self._started)

    def close(self) -> None:
        """Drops what no test took; waits for a running import (none at the end of a whole run)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._started.clear()


def shared_root(basetemp: Path) -> Path:
    """The run's temporary folder all pytest-xdist workers share (each has its own below it)."""
    root = (basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp) / "imports"
    root.mkdir(exist_ok=True)
    return root
