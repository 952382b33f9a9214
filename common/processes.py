"""Keeping processes running: restart back-off, how a process ended, whether a port is free.

Shared by the service supervisor (`common.service`: a service's workers), the process pools
(`common.pools`) and the launcher (`make up`: every service and Redis), so all of them restart
the same way. No aiohttp here: the launcher and spawned pool processes import this module.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

# A process that ended is started again after 0.5 s, then 1, 2, 4 … s while it keeps ending
# soon after its start, at most 30 s apart: one that fails at once neither spins the CPU nor
# floods the log, and one that crashed once is back within a second.
FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0
# A process that ran this long before it ended was healthy: its restart waits FIRST_DELAY_S.
STABLE_AFTER_S = 60.0


@dataclass
class Backoff:
    """The wait before each restart of one process."""

    first_s: float = FIRST_DELAY_S
    max_s: float = MAX_DELAY_S
    stable_after_s: float = STABLE_AFTER_S
    quick_exits: int = 0  # in a row, each before the process had run `stable_after_s`

    def next_delay(self, lived_s: float) -> float:
        """The wait before restarting a process that ended after running `lived_s` seconds."""
        if lived_s >= self.stable_after_s:
            self.quick_exits = 0
        delay = min(self.max_s, self.first_s * 2**self.quick_exits)
        self.quick_exits += 1
        return delay


def describe_exit(returncode: int) -> str:
    """`Popen.returncode` or `os.waitstatus_to_exitcode` in words: negative is a signal."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


def bind_error(host: str, port: int) -> str | None:
    """Why a server could not listen on host:port now (e.g. "Address already in use"), or None.

    Binds the way aiohttp does (SO_REUSEADDR), so a closed connection still in TIME_WAIT does not
    count, but without SO_REUSEPORT, so a listener that is not ours does."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


class SharedCount:
    """A number one process writes and the processes it forks afterwards read: an anonymous
    shared mapping, made before the fork. One writer, one aligned 8-byte word: no lock needed."""

    def __init__(self) -> None:
        self._memory = mmap.mmap(-1, ctypes.sizeof(ctypes.c_int64))
        self._cell = ctypes.c_int64.from_buffer(self._memory)

    @property
    def value(self) -> int:
        return int(self._cell.value)

    def increment(self) -> int:
        self._cell.value += 1
        return int(self._cell.value)


def stop_with_parent() -> None:
    """Linux: SIGTERM this process when the process that started it dies (even by SIGKILL), so a
    killed supervisor or service leaves no worker or pool process behind.

    The kernel ties this to the starting *thread*: pools must be started from the thread that
    keeps running (our event loops' main thread), never from a short-lived one."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_pool_process(niceness: int = 0) -> None:
    """A pool process's initializer: ends with its service, and yields the CPU by `niceness`."""
    stop_with_parent()
    if niceness > 0:
        os.nice(niceness)


@contextlib.contextmanager
def signals_deferred(signums: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> Iterator[None]:
    """Holds SIGTERM/SIGINT back during a block that must not be cut in half, then hands them
    to the handlers as they were. Starting a child is such a block: a handler that raises
    between the fork and the return of `Popen` would leave a started child nobody knows of.

    (Not by blocking the signals: a child inherits the blocked mask and would ignore SIGTERM.)"""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives signals and may set handlers
        return
    received: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, _frame: received.append(signum)) for signum in signums}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in received:
            signal.raise_signal(signum)
