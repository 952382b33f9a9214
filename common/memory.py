"""Giving freed memory back to the system (glibc), for processes that answer large bodies.

glibc keeps freed heap memory for reuse, and its mmap threshold grows with every large block
freed (up to 32 MiB), so after one 8 MiB matrix the next ones come from the heap and stay
there. Measured in the route service: a 1000x1000 table left the process at 312 MiB after
everything was freed; `malloc_trim(0)` brought it back to 50 MiB. Elsewhere (musl, macOS)
these are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger("common.memory")
M_MMAP_THRESHOLD = -3  # mallopt parameter (malloc.h)
# Blocks from this size on always get their own mapping, which free() returns at once.
MMAP_THRESHOLD_BYTES = 1 << 20


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def trim_heap() -> None:
    """Returns the heap's free pages to the system (a few ms after a large answer)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def fix_mmap_threshold(nbytes: int = MMAP_THRESHOLD_BYTES) -> None:
    """Large blocks (numpy arrays, JSON bodies) always in their own mapping: setting the
    threshold also stops glibc from raising it after each large free."""
    libc = _libc()
    if libc is not None and not libc.mallopt(M_MMAP_THRESHOLD, nbytes):
        log.warning("mallopt(M_MMAP_THRESHOLD) refused")


def rss_mib(pid: int | str = "self") -> float:
    """Resident set size of a process from /proc (0.0 where there is none)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
